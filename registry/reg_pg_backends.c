/* reg_pg_backends.c - the daemon's registrations mirrored into the
 * PostgreSQL store's wtproxy.backends (machine, front, worktree, entry
 * jsonb), so that `wtproxy ls` on any machine sees every machine's dev
 * servers. Each daemon writes only its own machine's rows: a sync deletes
 * them and inserts the current table in one transaction, so readers see
 * the old set or the new one, never half.
 *
 * Everything here but reg_mirror_start, reg_mirror_online and
 * reg_mirror_status runs on the PostgreSQL thread (reg_pg_worker.c), never
 * on the event loop: each statement is bounded by REG_PG_QUERY_TIMEOUT_MS,
 * each connection by REG_PG_CONNECT_TIMEOUT. When the store stops
 * answering, the jobs that were queued while a job found it out get that
 * answer at once instead of each waiting out its own timeout. */
#include "reg_pg.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry.h"
#include "host.h"

struct reg_mirror {
    PGconn *pg; /* NULL: unreachable at start, running on the embedded store */
    int online; /* pg was connected at start (never changes after) */
    char uri[REG_PG_URI_MAX];
    char masked[REG_PG_URI_MAX + 64];
    char error[REG_PG_URI_MAX + 1024]; /* the last failure, "" when the last sync worked */
    long long queued_ms;               /* when the running job was queued (monotonic) */
    long long down_ms;                 /* when a job last found the store unreachable, 0 never */
    char down[REG_PG_URI_MAX + 1024];  /* why */
    char shown[REG_PG_URI_MAX + 1024]; /* error, as the loop last heard it (ping) */
    int reconnected;                   /* the running job reconnected (the thread's) */
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
    m->online = 1;
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

/* One entry's row (e as reg_backend_to_json makes it). Returns 0 or -1. */
static int insert(struct reg_mirror *m, json_t *e)
{
    char *text = json_dumps(e, JSON_COMPACT), front[16];
    const char *wt = json_string_value(json_object_get(e, "worktree"));
    snprintf(front, sizeof front, "%d", (int)json_integer_value(json_object_get(e, "front")));
    const char *p[] = {reg_machine_id(), front, wt ? wt : "", text};
    int rc = text ? run(m,
                        "INSERT INTO " REG_PG_SCHEMA ".backends (machine, front, worktree,"
                        " entry) VALUES ($1, $2::integer, $3, $4::jsonb)",
                        4, p)
                  : -1;
    free(text);
    return rc;
}

/* The store is unreachable, for why: jobs queued until now share it. */
static void went_down(struct reg_mirror *m, const char *why)
{
    m->down_ms = host_mono_ms();
    snprintf(m->down, sizeof m->down, "%s", why);
}

/* Said once, when a lost registry is reached again: the daemon's log
 * warned at each change it could not mirror, and never said it was over. */
static void answers_again(struct reg_mirror *m)
{
    fprintf(stderr,
            "wtproxy: registry: PostgreSQL %s answers again (reconnected): claims are taken, "
            "and this machine's dev servers mirrored to it, again\n",
            m->masked);
    m->reconnected = 1;
}

/* Read what waits on c's idle socket, so that libpq sees a connection the
 * server ended meanwhile: a restart (pg_ctl restart: "FATAL: terminating
 * connection due to administrator command", 57P01) or a crash leaves it
 * CONNECTION_OK until it is read, and the next query failed with that
 * message: `ls` warned that a registry that answered did not. The end
 * follows the message, so a second read meets it. Never blocks: libpq's
 * socket is non-blocking, and poll waits 0 ms. */
static void read_idle(PGconn *c)
{
    for (int i = 0; i < 4 && PQstatus(c) == CONNECTION_OK; i++) {
        struct pollfd p = {.fd = PQsocket(c), .events = POLLIN};
        if (poll(&p, 1, 0) <= 0 || !PQconsumeInput(c))
            return;
    }
}

/* Reconnect when the server went away (a restart, a query that ran out
 * of time). A job queued before the store was last found unreachable gets
 * that answer without trying again. Returns 0 or -1 (m->error says why). */
static int connected(struct reg_mirror *m)
{
    if (m->queued_ms < m->down_ms) {
        snprintf(m->error, sizeof m->error, "%s", m->down);
        return -1;
    }
    read_idle(m->pg);
    if (PQstatus(m->pg) == CONNECTION_OK)
        return 0;
    PQreset(m->pg);
    if (PQstatus(m->pg) == CONNECTION_OK) {
        answers_again(m);
        return 0;
    }
    snprintf(m->error, sizeof m->error,
             "the registry at host %s port %s (%s) cannot be "
             "reached: %s",
             PQhost(m->pg) ? PQhost(m->pg) : "?", PQport(m->pg) ? PQport(m->pg) : "?", m->masked,
             PQerrorMessage(m->pg));
    m->error[strcspn(m->error, "\n")] = '\0';
    went_down(m, m->error);
    return -1;
}

void reg_mirror_job_begin(struct reg_mirror *m, long long queued_ms)
{
    m->queued_ms = queued_ms;
}

int reg_mirror_job_end(struct reg_mirror *m, char *error, size_t errlen)
{
    int reconnected = m->reconnected;
    m->reconnected = 0;
    if (PQstatus(m->pg) != CONNECTION_OK && m->down_ms <= m->queued_ms)
        went_down(m, reg_pg_last_error()[0] ? reg_pg_last_error() : m->error);
    snprintf(error, errlen, "%s", m->error);
    return reconnected;
}

/* One try at making this machine's rows equal entries. Returns 1 done,
 * 0 failed (m->error says why; the transaction rolled back). */
static int sync_once(struct reg_mirror *m, json_t *entries)
{
    const char *p[] = {reg_machine_id()};
    int ok = connected(m) == 0 && run(m, "BEGIN", 0, NULL) == 0 &&
             run(m, "DELETE FROM " REG_PG_SCHEMA ".backends WHERE machine = $1", 1, p) == 0;
    for (size_t i = 0; ok && i < json_array_size(entries); i++)
        ok = insert(m, json_array_get(entries, i)) == 0;
    if (ok && run(m, "COMMIT", 0, NULL) == 0)
        return 1;
    char ignored[256];
    if (PQstatus(m->pg) == CONNECTION_OK)
        PQclear(reg_pg_exec(m->pg, "ROLLBACK", 0, NULL, ignored, sizeof ignored));
    return 0;
}

/* Whether a statement that failed lost the connection (the server ended
 * it between the check before and the statement), rather than ran late or
 * was refused: the job is then tried once more, on a new connection,
 * before anyone is warned. */
static int lost(const struct reg_mirror *m)
{
    return PQstatus(m->pg) != CONNECTION_OK && !reg_pg_last_late();
}

void reg_mirror_sync(struct reg_mirror *m, json_t *entries)
{
    if (!m || !m->pg)
        return;
    /* the whole transaction again: it writes this machine's rows alone */
    if (sync_once(m, entries) || (lost(m) && sync_once(m, entries))) {
        m->error[0] = '\0';
        return;
    }
    fprintf(stderr,
            "wtproxy: WARNING: other machines do not see this machine's dev servers: "
            "%s\n",
            m->error);
}

/* The other machines' entries as a result, or NULL (m->error says why). */
static PGresult *select_others(struct reg_mirror *m)
{
    const char *p[] = {reg_machine_id()};
    if (connected(m) < 0)
        return NULL;
    return reg_pg_exec(m->pg,
                       "SELECT entry::text FROM " REG_PG_SCHEMA ".backends"
                       " WHERE machine <> $1 ORDER BY machine, front, worktree",
                       1, p, m->error, sizeof m->error);
}

void reg_mirror_others(struct reg_mirror *m, json_t *arr)
{
    if (!m || !m->pg)
        return;
    char before[sizeof m->error]; /* a retry that works leaves the last sync's word */
    snprintf(before, sizeof before, "%s", m->error);
    PGresult *r = select_others(m);
    if (!r && lost(m) && (r = select_others(m)))
        snprintf(m->error, sizeof m->error, "%s", before);
    for (int i = 0; r && i < PQntuples(r); i++) {
        json_t *e = json_loads(PQgetvalue(r, i, 0), 0, NULL);
        if (json_is_object(e) && json_object_set_new(e, "remote", json_true()) == 0)
            json_array_append(arr, e);
        json_decref(e);
    }
    PQclear(r);
}

int reg_mirror_online(const struct reg_mirror *m)
{
    return m && m->online;
}

void reg_mirror_show(struct reg_mirror *m, const char *error)
{
    snprintf(m->shown, sizeof m->shown, "%s", error);
}

json_t *reg_mirror_status(const struct reg_mirror *m, json_t *reply)
{
    if (!reply)
        return NULL;
    json_object_set_new(reply, "store", json_string(m && m->online ? "postgresql" : "embedded"));
    if (!m)
        return reply;
    json_object_set_new(reply, "registry", json_string(m->masked));
    if (m->online)
        json_object_set_new(reply, "registry_ok", json_boolean(m->shown[0] == '\0'));
    else /* the dashboard shows it: claims hold on this machine only */
        json_object_set_new(reply, "registry_optional", json_true());
    if (m->shown[0])
        json_object_set_new(reply, "registry_error", json_string(m->shown));
    return reply;
}

json_t *reg_mirror_lease_op(struct reg_mirror *m, const char *op, json_t *req)
{
    if (!m || !m->pg)
        return NULL;
    if (connected(m) < 0)
        return reg_fail(
            "registry-down",
            "claims are refused while the registry is down: %s; start it or make it "
            "reachable (pg_isready -h %s -p %s tells when it answers), then do it again",
            m->error, PQhost(m->pg) ? PQhost(m->pg) : "?", PQport(m->pg) ? PQport(m->pg) : "?");
    return reg_pg_lease_op(m->pg, op, req);
}

int reg_mirror_start(const char *registry, struct reg_mirror **m, char *err, size_t errlen)
{
    const char *uri = registry && registry[0] ? registry : getenv("WTPROXY_REGISTRY");
    *m = NULL;
    if (!uri || !uri[0])
        return 0;
    reg_pg_set_query_timeout(REG_PG_QUERY_TIMEOUT_MS); /* also at start and at the end */
    if ((*m = reg_mirror_open(uri, err, errlen))) {
        fprintf(stderr, "wtproxy: registry: PostgreSQL %s (schema " REG_PG_SCHEMA ")\n",
                (*m)->masked);
        return 0;
    }
    if (!reg_pg_optional() || !(*m = calloc(1, sizeof **m)))
        return -1;
    snprintf((*m)->shown, sizeof(*m)->shown, "%s", err);
    reg_pg_mask(uri, (*m)->masked, sizeof(*m)->masked);
    fprintf(stderr,
            "wtproxy: WARNING: %s\nwtproxy: WARNING: WTPROXY_REGISTRY_OPTIONAL=1: "
            "running on the EMBEDDED store; other machines do not see this one, and its "
            "claims do not hold against them\n",
            err);
    return 0;
}
