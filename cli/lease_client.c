/* lease_client.c - the CLI's leases on whichever store is in use: the
 * configured PostgreSQL server directly (so a claim is made on the server
 * where the resource lives, whatever daemon runs), else the daemon's
 * embedded store over the control socket (PROTOCOL.md "Leases"). A held
 * resource's refusal is the daemon's sentence, or on PostgreSQL the same
 * one made here (reg_lease_held_message). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

#include "host.h"
#include "reg_lease.h"
#include "reg_pg.h"
#include "registry.h"

/* The registry could not be reached and WTPROXY_REGISTRY_OPTIONAL=1 says
 * to go on: the daemon is asked for its embedded store by name, since a
 * daemon that has the registry would answer on it, and refuse while it is
 * down (the variable is this command's, not the daemon's). */
static int embedded_only;

int cli_lease_open(void **pg, char *err, size_t errlen)
{
    char uri[REG_PG_URI_MAX];
    *pg = NULL;
    embedded_only = 0;
    int r = reg_pg_configured(uri, sizeof uri, err, errlen);
    if (r <= 0)
        return r;
    if ((*pg = reg_pg_connect(uri, err, errlen)))
        return 0;
    if (!reg_pg_optional())
        return -1;
    embedded_only = 1;
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
    if (req && embedded_only)
        json_object_set_new(req, "store", json_string("embedded"));
    int r = req ? cli_call(req, cli_daemon_start_allowed(0), reply, err, errlen) : -1;
    if (!req)
        snprintf(err, errlen, "out of memory");
    json_decref(req);
    return r < 0 ? -1 : json_is_true(json_object_get(*reply, "ok"));
}

/* The daemon's refusal: 0 with *holder and err its message when it names
 * a holder, or its code is `also` (a holder is not needed); else -1 with
 * err its message. */
static int refusal(json_t *reply, const char *also, json_t **holder, char *err, size_t errlen)
{
    const char *m = json_string_value(json_object_get(reply, "message"));
    const char *code = json_string_value(json_object_get(reply, "error"));
    snprintf(err, errlen, "%s", m ? m : "the daemon refused (no message)");
    *holder = json_incref(json_object_get(reply, "holder"));
    return *holder || (also && code && strcmp(code, also) == 0) ? 0 : -1;
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
        if (r == 0)
            reg_lease_held_message(&out, 0, host_wall_ms(), err, errlen);
        return r;
    }
    json_t *reply = NULL;
    int r = ask(json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:I}", "op", "claim", "id", c->id,
                          "worktree", c->worktree, "session", c->session, "pid", (json_int_t)c->pid,
                          "purpose", c->purpose, "ttl_ms", (json_int_t)ttl_ms),
                &reply, err, errlen);
    if (r > 0)
        *info = json_incref(json_object_get(reply, "lease"));
    else if (r == 0)
        r = refusal(reply, NULL, info, err, errlen);
    json_decref(reply);
    return r;
}

/* How often a claim that waits asks again: a release, an ended holder or
 * an expired TTL is seen this soon, at one store round trip per waiter. */
#define CLAIM_POLL_MS 250

int cli_lease_claim_wait(void *pg, const struct reg_lease *c, long long ttl_ms, long long wait_ms,
                         json_t **info, long long *waited_ms, char *err, size_t errlen)
{
    char span[32];
    long long start = host_mono_ms();
    host_age(wait_ms, span, sizeof span);
    *waited_ms = 0;
    for (int tries = 0;; tries++) {
        int r = cli_lease_claim(pg, c, ttl_ms, info, err, errlen);
        long long waited = host_mono_ms() - start;
        if (r != 0 || waited >= wait_ms) {
            *waited_ms = tries ? waited : 0;
            return r;
        }
        if (tries == 0) /* once: whose it is, while the caller blocks */
            fprintf(stderr, "wtproxy: waiting up to %s for %s: %s\n", span, c->id, err);
        json_decref(*info);
        *info = NULL;
        if (cli_pause(CLAIM_POLL_MS) < 0) {
            *waited_ms = host_mono_ms() - start;
            snprintf(err, errlen, "the wait for %s was cancelled; it was not claimed", c->id);
            return -1;
        }
    }
}

int cli_lease_release(void *pg, const struct reg_lease *r, int force, json_t **holder, char *err,
                      size_t errlen)
{
    *holder = NULL;
    if (pg) {
        struct reg_lease h;
        int got = reg_pg_release(pg, r, force, &h, err, errlen);
        if (got >= 0 && h.id[0])
            *holder = reg_lease_to_json(&h);
        if (got == 0 && h.id[0])
            reg_lease_held_message(&h, 1, host_wall_ms(), err, errlen);
        else if (got == 0)
            snprintf(err, errlen, "nobody holds %s (see: wtproxy leases)", r->id);
        return got;
    }
    json_t *reply = NULL;
    int got = ask(json_pack("{s:s, s:s, s:s, s:I, s:b}", "op", "release", "id", r->id, "worktree",
                            r->worktree, "pid", (json_int_t)r->pid, "force", force),
                  &reply, err, errlen);
    if (got > 0)
        *holder = json_incref(json_object_get(reply, "lease"));
    else if (got == 0)
        got = refusal(reply, "not-found", holder, err, errlen);
    json_decref(reply);
    return got;
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
