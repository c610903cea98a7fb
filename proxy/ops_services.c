/* ops_services.c - the `services` control op: the services a worktree's
 * .wtproxy declares, running or not (ondemand_services_of), for `wtproxy
 * mcp`, scripts and agents that want to know what they may start; the
 * worktree's path is resolved and the file read on a worker
 * (ondemand_read_later), the reply held meanwhile, at most start_timeout. */
#include "ops.h"

#include <stdlib.h>

#include "host.h"
#include "ondemand.h"
#include "server.h"
#include "wtfile.h"

/* A services op waiting for its worktree's .wtproxy. */
struct services_wait {
    struct proxy_server *s;
    struct reg_peer *peer;
};

/* The reply to the op, from the file as read (f NULL: the daemon stops). */
static json_t *services_reply(struct proxy_server *s, const char *worktree, int rc,
                              const struct wtfile *f, const char *ferr)
{
    if (!f)
        return reg_fail("stopping", "%s", ferr);
    json_t *d = ondemand_services_of(s, worktree, rc, f, ferr);
    if (!d)
        return reg_fail("not-declared",
                        "%s has no .wtproxy: add one "
                        "(wtproxy help wtproxy-file) to declare its servers",
                        worktree);
    const char *err = json_string_value(json_object_get(d, "error"));
    json_t *out = err ? json_pack("{s:b, s:s, s:O, s:s}", "ok", 0, "error", "bad-wtproxy-file",
                                  "file", json_object_get(d, "file"), "message", err)
                      : json_pack("{s:b, s:O, s:O}", "ok", 1, "file", json_object_get(d, "file"),
                                  "services", json_object_get(d, "services"));
    json_decref(d);
    return out;
}

/* ondemand_file_cb: the held reply goes. */
static void services_read(void *arg, const char *worktree, int rc, const struct wtfile *f,
                          const char *err)
{
    struct services_wait *w = arg;
    json_t *r = rc == ONDEMAND_NO_FOLDER ? reg_fail("not-found", "%s", err)
                : rc == ONDEMAND_TIMED_OUT
                    ? reg_fail("timeout",
                               "reading %s/.wtproxy took longer than start_timeout "
                               "(%u ms): its filesystem is slow or not answering. Ask again "
                               "once it answers (ls %s/.wtproxy tells when it does)",
                               worktree, w->s->cfg.start_timeout_ms, worktree)
                    : services_reply(w->s, worktree, rc, f, err);
    reg_server_reply(w->peer, r);
    free(w);
}

json_t *proxy_op_services(struct proxy_server *s, uid_t uid, json_t *req, struct reg_peer *peer)
{
    (void)uid; /* what a repository declares is no secret of its user */
    const char *wt = json_string_value(json_object_get(req, "worktree"));
    if (!wt || wt[0] != '/')
        return reg_fail("bad-request", "services takes \"worktree\": the absolute path of "
                                       "a worktree");
    if (!peer)
        return reg_fail("unsupported", "the services op waits for a read of the worktree's "
                                       ".wtproxy, so it is answered on the daemon's control "
                                       "socket only: send it there, or ask wtproxy mcp's "
                                       "servers tool");
    if (!s->ondemand)
        return proxy_op_no_ondemand("reads no .wtproxy files");
    struct services_wait *w = malloc(sizeof *w);
    if (!w)
        return reg_fail("internal", "out of memory");
    *w = (struct services_wait){.s = s, .peer = peer};
    if (!ondemand_read_later(s->ondemand, wt, s->cfg.start_timeout_ms, services_read, w)) {
        free(w);
        return reg_fail("internal", "out of memory");
    }
    return reg_server_later();
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
