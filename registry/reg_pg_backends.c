/* reg_pg_backends.c - the daemon's registrations mirrored into the
 * PostgreSQL store's wtproxy.backends (machine, front, worktree, entry
 * jsonb), so that `wtproxy ls` on any machine sees every machine's dev
 * servers. Each daemon writes only its own machine's rows: a sync deletes
 * them and inserts the current table in one transaction, so readers see
 * the old set or the new one, never half. The daemon's event loop waits
 * for these few statements; they are bounded by the connect timeout and
 * happen only when the table changes. */
#include "reg_pg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

struct reg_mirror {
    PGconn *pg;           /* NULL: unreachable at start, running on the embedded store */
    char uri[REG_PG_URI_MAX];
    char masked[REG_PG_URI_MAX + 64];
    char error[REG_PG_URI_MAX + 1024]; /* the last failure, "" when the last sync worked */
};

struct reg_mirror *reg_mirror_open(const char *uri, char *err, size_t errlen)
{
    struct reg_mirror *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(m->uri, sizeof m->uri, "%s", uri);
    reg_pg_mask(uri, m->masked, sizeof m->masked);
    if (!(m->pg = reg_pg_connect(uri, err, errlen))) {
        free(m);
        return NULL;
    }
    return m;
}

/* Run sql; on failure remember and log it. Returns 0 or -1. */
static int run(struct reg_mirror *m, const char *sql, int n, const char *const *p)
{
    PGresult *r = reg_pg_exec(m->pg, sql, n, p, m->error, sizeof m->error);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

void reg_mirror_close(struct reg_mirror *m)
{
    if (!m)
        return;
    const char *p[] = {reg_machine_id()};
    if (m->pg && PQstatus(m->pg) == CONNECTION_OK)
        run(m, "DELETE FROM " REG_PG_SCHEMA ".backends WHERE machine = $1", 1, p);
    if (m->pg)
        PQfinish(m->pg);
    free(m);
}

/* One entry's row. Returns 0 or -1. */
static int insert(struct reg_mirror *m, const struct reg_backend *b)
{
    json_t *e = reg_backend_to_json(b);
    char *text = e ? json_dumps(e, JSON_COMPACT) : NULL, front[16];
    snprintf(front, sizeof front, "%d", b->front);
    const char *p[] = {reg_machine_id(), front, b->worktree, text};
    int rc = text ? run(m, "INSERT INTO " REG_PG_SCHEMA ".backends (machine, front, worktree,"
                        " entry) VALUES ($1, $2::integer, $3, $4::jsonb)", 4, p)
                  : -1;
    free(text);
    json_decref(e);
    return rc;
}

/* Reconnect when the server went away (a restart). Returns 0 or -1. */
static int connected(struct reg_mirror *m)
{
    if (PQstatus(m->pg) == CONNECTION_OK)
        return 0;
    PQreset(m->pg);
    if (PQstatus(m->pg) == CONNECTION_OK)
        return 0;
    snprintf(m->error, sizeof m->error, "the registry at host %s port %s (%s) cannot be "
             "reached: %s", PQhost(m->pg) ? PQhost(m->pg) : "?",
             PQport(m->pg) ? PQport(m->pg) : "?", m->masked, PQerrorMessage(m->pg));
    m->error[strcspn(m->error, "\n")] = '\0';
    return -1;
}

void reg_mirror_sync(struct reg_mirror *m, const struct reg_table *t)
{
    if (!m || !m->pg)
        return;
    const char *p[] = {reg_machine_id()};
    int ok = connected(m) == 0 && run(m, "BEGIN", 0, NULL) == 0 &&
             run(m, "DELETE FROM " REG_PG_SCHEMA ".backends WHERE machine = $1", 1, p) == 0;
    for (size_t i = 0; ok && i < reg_table_count(t); i++)
        ok = insert(m, reg_table_at(t, i)) == 0;
    if (ok && run(m, "COMMIT", 0, NULL) == 0) {
        m->error[0] = '\0';
        return;
    }
    if (PQstatus(m->pg) == CONNECTION_OK)
        PQclear(PQexec(m->pg, "ROLLBACK"));
    fprintf(stderr, "wtproxy: WARNING: other machines do not see this machine's dev servers: "
            "%s\n", m->error);
}

void reg_mirror_others(struct reg_mirror *m, json_t *arr)
{
    if (!m || !m->pg || connected(m) < 0)
        return;
    const char *p[] = {reg_machine_id()};
    PGresult *r = reg_pg_exec(m->pg, "SELECT entry::text FROM " REG_PG_SCHEMA ".backends"
                              " WHERE machine <> $1 ORDER BY machine, front, worktree",
                              1, p, m->error, sizeof m->error);
    for (int i = 0; r && i < PQntuples(r); i++) {
        json_t *e = json_loads(PQgetvalue(r, i, 0), 0, NULL);
        if (json_is_object(e) && json_object_set_new(e, "remote", json_true()) == 0)
            json_array_append(arr, e);
        json_decref(e);
    }
    PQclear(r);
}

json_t *reg_mirror_status(const struct reg_mirror *m, json_t *reply)
{
    if (!reply)
        return NULL;
    json_object_set_new(reply, "store", json_string(m && m->pg ? "postgresql" : "embedded"));
    if (!m)
        return reply;
    json_object_set_new(reply, "registry", json_string(m->masked));
    if (m->pg)
        json_object_set_new(reply, "registry_ok", json_boolean(m->error[0] == '\0'));
    else /* the dashboard shows it: claims hold on this machine only */
        json_object_set_new(reply, "registry_optional", json_true());
    if (m->error[0])
        json_object_set_new(reply, "registry_error", json_string(m->error));
    return reply;
}

json_t *reg_mirror_lease_op(struct reg_mirror *m, const char *op, json_t *req)
{
    if (!m || !m->pg)
        return NULL;
    if (connected(m) < 0)
        return reg_lease_fail("internal", "claims are refused while the registry is down: %s",
                              m->error);
    return reg_pg_lease_op(m->pg, op, req);
}

int reg_mirror_start(const char *registry, struct reg_mirror **m, char *err, size_t errlen)
{
    const char *uri = registry && registry[0] ? registry : getenv("WTPROXY_REGISTRY");
    *m = NULL;
    if (!uri || !uri[0])
        return 0;
    if ((*m = reg_mirror_open(uri, err, errlen))) {
        fprintf(stderr, "wtproxy: registry: PostgreSQL %s (schema " REG_PG_SCHEMA ")\n",
                (*m)->masked);
        return 0;
    }
    if (!reg_pg_optional() || !(*m = calloc(1, sizeof **m)))
        return -1;
    snprintf((*m)->error, sizeof (*m)->error, "%s", err);
    reg_pg_mask(uri, (*m)->masked, sizeof (*m)->masked);
    fprintf(stderr, "wtproxy: WARNING: %s\nwtproxy: WARNING: WTPROXY_REGISTRY_OPTIONAL=1: "
            "running on the EMBEDDED store; other machines do not see this one, and its "
            "claims do not hold against them\n", err);
    return 0;
}
