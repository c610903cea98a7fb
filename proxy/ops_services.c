/* ops_services.c - the `services` control op: the services a worktree's
 * .wtproxy declares, running or not (ondemand_services), for `wtproxy
 * mcp`, scripts and agents that want to know what they may start. */
#include "ops.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "host.h"
#include "ondemand.h"
#include "server.h"


json_t *proxy_op_services(struct proxy_server *s, uid_t uid, json_t *req)
{
    (void)uid; /* what a repository declares is no secret of its user */
    const char *wt = json_string_value(json_object_get(req, "worktree"));
    char real[PATH_MAX];
    if (!wt || wt[0] != '/')
        return reg_fail("bad-request", "services takes \"worktree\": the absolute path of "
                             "a worktree");
    if (!realpath(wt, real))
        return reg_fail("not-found", "%s: no such folder", wt);
    json_t *d = ondemand_services(s, real);
    if (!d)
        return reg_fail("not-declared", "%s has no .wtproxy: add one "
                             "(conf/wtproxy-file.example) to declare its servers", real);
    const char *err = json_string_value(json_object_get(d, "error"));
    json_t *out = err ? json_pack("{s:b, s:s, s:O, s:s}", "ok", 0, "error", "bad-wtproxy-file",
                                  "file", json_object_get(d, "file"), "message", err)
                      : json_pack("{s:b, s:O, s:O}", "ok", 1, "file", json_object_get(d, "file"),
                                  "services", json_object_get(d, "services"));
    json_decref(d);
    return out;
}

json_t *proxy_op_starts(struct proxy_server *s, uid_t uid, json_t *req)
{
    (void)uid;
    (void)req;
    unsigned pct = 0;
    double load = 0;
    int ncpu = 0;
    json_t *out = json_pack("{s:b, s:o, s:i}", "ok", 1, "starts",
                            s->ondemand ? ondemand_pending(s->ondemand) : json_array(),
                            "start_max_load_pct", (int)s->cfg.start_max_load_pct);
    if (out && host_load_pct(&pct, &load, &ncpu) == 0) {
        json_object_set_new(out, "load_per_cpu", json_real(pct / 100.0));
        json_object_set_new(out, "cpus", json_integer(ncpu));
    }
    return out;
}
