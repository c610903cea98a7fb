/* lease_client.c - the CLI's leases on whichever store is in use: the
 * configured PostgreSQL server directly (so a claim is made on the server
 * where the resource lives, whatever daemon runs), else the daemon's
 * embedded store over the control socket (PROTOCOL.md "Leases"); and the
 * refusal people read when a resource is held. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

#include "host.h"
#include "reg_lease.h"
#include "reg_pg.h"
#include "registry.h"

int cli_lease_open(void **pg, char *err, size_t errlen)
{
    char uri[REG_PG_URI_MAX];
    *pg = NULL;
    int r = reg_pg_configured(uri, sizeof uri, err, errlen);
    if (r <= 0)
        return r;
    if ((*pg = reg_pg_connect(uri, err, errlen)))
        return 0;
    if (!reg_pg_optional())
        return -1;
    fprintf(stderr,
            "wtproxy: WARNING: %s\nwtproxy: WARNING: WTPROXY_REGISTRY_OPTIONAL=1: "
            "using this machine's embedded store; claims do NOT hold against other "
            "machines\n",
            err);
    return 0;
}

void cli_lease_close(void *pg)
{
    if (pg)
        PQfinish(pg);
}

/* Ask the daemon; 1 ok, 0 refused (reply kept), -1 with err. */
static int ask(json_t *req, json_t **reply, char *err, size_t errlen)
{
    int r = req ? cli_call(req, cli_daemon_start_allowed(0), reply, err, errlen) : -1;
    if (!req)
        snprintf(err, errlen, "out of memory");
    json_decref(req);
    return r < 0 ? -1 : json_is_true(json_object_get(*reply, "ok"));
}

int cli_lease_claim(void *pg, const struct reg_lease *c, long long ttl_ms, json_t **info, char *err,
                    size_t errlen)
{
    *info = NULL;
    if (pg) {
        struct reg_lease out;
        int r = reg_pg_claim(pg, c, ttl_ms, &out, err, errlen);
        if (r >= 0)
            *info = reg_lease_to_json(&out);
        return r;
    }
    json_t *reply = NULL;
    int r = ask(json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:I}", "op", "claim", "id", c->id,
                          "worktree", c->worktree, "session", c->session, "pid", (json_int_t)c->pid,
                          "purpose", c->purpose, "ttl_ms", (json_int_t)ttl_ms),
                &reply, err, errlen);
    json_t *holder = json_object_get(reply, r ? "lease" : "holder");
    if (r == 0 && !holder) {
        const char *m = json_string_value(json_object_get(reply, "message"));
        snprintf(err, errlen, "%s", m ? m : "the daemon refused the claim");
        r = -1;
    }
    if (r >= 0)
        *info = json_incref(holder);
    json_decref(reply);
    return r;
}

int cli_lease_release(void *pg, const char *id, const char *worktree, int force, json_t **holder,
                      char *err, size_t errlen)
{
    *holder = NULL;
    if (pg) {
        struct reg_lease h;
        int r = reg_pg_release(pg, id, worktree, force, &h, err, errlen);
        if (r == 0 && h.id[0])
            *holder = reg_lease_to_json(&h);
        return r;
    }
    json_t *reply = NULL;
    int r = ask(json_pack("{s:s, s:s, s:s, s:b}", "op", "release", "id", id, "worktree", worktree,
                          "force", force),
                &reply, err, errlen);
    if (r == 0)
        *holder = json_incref(json_object_get(reply, "holder"));
    json_decref(reply);
    return r;
}

json_t *cli_lease_list(void *pg, char *err, size_t errlen)
{
    if (pg)
        return reg_pg_leases(pg, err, errlen);
    json_t *reply = NULL;
    int r = ask(json_pack("{s:s}", "op", "leases"), &reply, err, errlen);
    json_t *arr = r > 0 ? json_incref(json_object_get(reply, "leases")) : NULL;
    const char *m = json_string_value(json_object_get(reply, "message"));
    if (r == 0)
        snprintf(err, errlen, "%s", m ? m : "the daemon refused to list leases");
    json_decref(reply);
    return arr;
}

void cli_lease_report_holder(json_t *holder)
{
    struct reg_lease l;
    char err[256], age[32], left[32] = "";
    if (reg_lease_from_json(holder, &l, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy: the resource is held (the holder cannot be shown: %s)\n", err);
        return;
    }
    long long now = host_wall_ms();
    host_age(now - l.acquired_ms, age, sizeof age);
    if (l.expires_ms)
        host_age(l.expires_ms - now, left, sizeof left);
    int here = strcmp(l.machine, reg_machine_id()) == 0;
    fprintf(stderr,
            "wtproxy: %s is held by %s%s, worktree %s, session %s, %s%d, for \"%s\", "
            "since %s ago%s%s%s\n",
            l.id, here ? "this machine " : "machine ", l.machine, l.worktree, l.session,
            l.pid ? "pid " : "manual claim, pid ", (int)l.pid, l.purpose, age,
            l.expires_ms ? " (expires in " : "", left, l.expires_ms ? ")" : "");
    if (l.pid > 0 && here)
        fprintf(stderr,
                "wtproxy: it is released when pid %d ends; to free it now: "
                "kill %d, or: wtproxy release %s --force\n",
                (int)l.pid, (int)l.pid, l.id);
    else
        fprintf(stderr,
                "wtproxy: to free it, %s%s: cd %s && wtproxy release %s; or, if it "
                "is abandoned, anywhere: wtproxy release %s --force\n",
                here ? "on this machine" : "on machine ", here ? "" : l.machine, l.worktree, l.id,
                l.id);
}
