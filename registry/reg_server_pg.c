/* reg_server_pg.c - the control ops of a daemon on a PostgreSQL store:
 * each is a job for the PostgreSQL thread (reg_pg_worker.c), and its
 * control peer is answered when the job is over (see reg_pg.h). The jobs
 * run there on their own copies: the thread never reads the table. */
#include "reg_pg.h"

#include <stdio.h>
#include <stdlib.h>

#include "reg_control.h"
#include "registry.h"

/* ---- the jobs, on the thread ---- */

static json_t *job_sync(struct reg_mirror *m, json_t *entries)
{
    reg_mirror_sync(m, entries);
    return NULL;
}

static json_t *job_lease_op(struct reg_mirror *m, json_t *in)
{
    return reg_mirror_lease_op(m, json_string_value(json_object_get(in, "op")), in);
}

static json_t *job_others(struct reg_mirror *m, json_t *entries)
{
    reg_mirror_others(m, entries);
    return json_incref(entries);
}

json_t *reg_leases_view(const char *store, json_t *r)
{
    json_t *arr = json_object_get(r, "leases");
    const char *msg = json_string_value(json_object_get(r, "message"));
    json_t *v = json_is_array(arr)
                    ? json_pack("{s:s, s:O}", "store", store, "leases", arr)
                    : json_pack("{s:s, s:s}", "store", store, "error", msg ? msg : "out of memory");
    json_decref(r);
    return v;
}

static json_t *job_leases_view(struct reg_mirror *m, json_t *in)
{
    return reg_leases_view("postgresql", reg_mirror_lease_op(m, "leases", in));
}

/* ---- peers waiting for a job ---- */

enum wait_kind { W_LEASE, W_LIST };

struct waiter {
    struct reg_peer *peer;
    enum wait_kind kind;
    json_t *reply; /* W_LIST: the reply the entries go in */
};

/* The reply line (no LF) to r, which it consumes. */
static char *line_of(json_t *r)
{
    char *line = r ? json_dumps(r, JSON_COMPACT) : NULL;
    json_decref(r);
    return line;
}

/* A job is over (answer NULL: the daemon stopped before it ran). */
static void answered(void *arg, json_t *answer)
{
    struct waiter *w = arg;
    json_t *r = w->reply;
    if (!answer) {
        json_decref(r);
        r = reg_fail("stopping", "the daemon stopped before the registry answered, so nothing "
                                 "was done: run the command again once the daemon is back "
                                 "(wtproxy doctor says whether it is)");
    } else if (w->kind == W_LEASE) {
        r = json_incref(answer);
    } else if (w->kind == W_LIST) {
        json_object_set(r, "entries", answer);
    }
    json_decref(answer);
    reg_control_reply(w->peer, line_of(r));
    free(w);
}

/* Queue fn(in) and answer peer with what it gives. Returns NULL (the reply
 * comes later), or the reply now when it cannot wait: no peer to answer
 * later (reg_server_request) or out of memory. */
static json_t *later(struct reg_pgops *o, struct reg_peer *peer, enum wait_kind kind, reg_pgw_fn fn,
                     json_t *in, json_t *reply)
{
    struct waiter *w = peer && in ? calloc(1, sizeof *w) : NULL;
    if (w)
        *w = (struct waiter){peer, kind, reply};
    if (w && reg_pgw_submit(o->pgw, fn, in, answered, w))
        return NULL;
    free(w);
    if (!w)
        json_decref(in);
    json_decref(reply);
    if (peer)
        return reg_fail("internal", "out of memory");
    return reg_fail("unsupported", "this op waits for the PostgreSQL store, so it is answered on "
                                   "the daemon's control socket only: send it there (wtproxy ls, "
                                   "wtproxy leases)");
}

/* ---- the ops ---- */

void reg_pgops_mirror(struct reg_pgops *o, const struct reg_table *t)
{
    if (!o->pgw)
        return;
    json_t *entries = json_array();
    for (size_t i = 0; entries && i < reg_table_count(t); i++)
        json_array_append_new(entries, reg_backend_to_json(reg_table_at(t, i)));
    if (!entries) {
        fprintf(stderr, "wtproxy: out of memory: this change is not mirrored to the registry\n");
    } else if (o->in_line) {
        json_decref(o->sync_out);
        o->sync_out = entries;
    } else {
        reg_pgw_submit(o->pgw, job_sync, entries, NULL, NULL);
    }
}

int reg_pgops_line_done(struct reg_pgops *o, reg_pgw_done done, void *arg)
{
    json_t *entries = o->sync_out;
    o->sync_out = NULL;
    if (!entries)
        return 0;
    if (done && reg_pgw_submit(o->pgw, job_sync, entries, done, arg))
        return 1;
    if (!done) /* else out of memory: nothing was queued, and entries are freed */
        reg_pgw_submit(o->pgw, job_sync, entries, NULL, NULL);
    return 0;
}

json_t *reg_pgops_lease_op(struct reg_pgops *o, struct reg_peer *peer, json_t *req)
{
    return later(o, peer, W_LEASE, job_lease_op, json_deep_copy(req), NULL);
}

json_t *reg_pgops_list(struct reg_pgops *o, struct reg_peer *peer, json_t *entries, json_t *reply)
{
    return later(o, peer, W_LIST, job_others, entries, reply);
}

void *reg_pgops_leases(struct reg_pgops *o, reg_pgw_done cb, void *arg)
{
    json_t *req = json_pack("{s:s}", "op", "leases");
    return req ? reg_pgw_submit(o->pgw, job_leases_view, req, cb, arg) : NULL;
}
