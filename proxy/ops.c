/* ops.c - the table of control ops the proxy layer answers (ops.h). */
#include "ops.h"

#include <stdio.h>
#include <string.h>

#include "identify.h"
#include "registry.h"
#include "server.h"

/* fn answers at once; later may hold its reply (ops.h). */
struct proxy_op {
    const char *name;
    json_t *(*fn)(struct proxy_server *s, uid_t uid, json_t *req);
    json_t *(*later)(struct proxy_server *s, uid_t uid, json_t *req, struct reg_peer *peer);
};

/* {"op":"stats"}: how the daemon's own work goes (tests/bench reads it),
 * and the client connections a stop would wait for, up to how long
 * (`wtproxy stop --daemon` says so before it waits). */
static json_t *op_stats(struct proxy_server *s, uid_t uid, json_t *req)
{
    (void)uid;
    (void)req;
    return json_pack("{s:b, s:o*, s:i, s:I}", "ok", 1, "identify",
                     s->ident ? identify_stats_json(s->ident) : NULL, "clients", (int)s->nclients,
                     "shutdown_timeout_ms", (json_int_t)s->cfg.shutdown_timeout_ms);
}

json_t *proxy_op_no_ondemand(const char *what)
{
    return reg_fail("unsupported",
                    "this daemon %s: it runs without its .wtproxy reader (its log said why "
                    "when it started); restart it to have them (stop it, then wtproxy serve), "
                    "or run your server yourself: wtproxy run -- CMD {port}",
                    what);
}

static const struct proxy_op ops[] = {
    {"refusals", proxy_op_refusals, NULL}, {"services", NULL, proxy_op_services},
    {"starts", proxy_op_starts, NULL},     {"stats", op_stats, NULL},
    {"restart", proxy_op_restart, NULL},   {"stop", NULL, proxy_op_stop_asked},
    {"start", NULL, proxy_op_start_later},
};

/* reg_server_ext: the reply to op, reg_server_later(), or NULL when it is
 * none of ours. */
static json_t *dispatch(void *arg, uid_t uid, const char *op, json_t *req, struct reg_peer *peer)
{
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i].name) == 0)
            return ops[i].later ? ops[i].later(arg, uid, req, peer) : ops[i].fn(arg, uid, req);
    return NULL;
}

void proxy_ops_install(struct proxy_server *s)
{
    reg_server_set_ext(s->reg, dispatch, s);
}
