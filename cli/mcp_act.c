/* mcp_act.c - `wtproxy mcp`'s tools that change something: restart (the
 * daemon's op restart), claim and release (leases, through the same calls
 * as `wtproxy claim` and `wtproxy release`). Each acts only for the
 * session's worktree (mcp_scope refuses another, naming whose it is). */
#include "mcp.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "host.h"
#include "reg_lease.h"

json_t *mcp_tool_restart(struct mcp *m, json_t *args)
{
    static const char *const keys[] = {"service", "front", NULL};
    return mcp_op_tool(m, args, 1, "restart", keys);
}

/* The failure of a lease held by holder: the store's sentence (whose it
 * is, when it ends, the command that frees it) with the holder. */
static json_t *held(const char *code, const char *msg, json_t *holder)
{
    json_t *fail = mcp_fail(code, "%s", msg);
    json_object_set(fail, "holder", holder);
    return fail;
}

/* The claimer of args' resource for worktree wt into c, or a failure. */
static json_t *claimer(struct reg_lease *c, json_t *args, const char *wt, long long *ttl)
{
    const char *ttlv = json_string_value(json_object_get(args, "ttl"));
    char err[PATH_MAX + 256];
    *ttl = 0;
    if (ttlv && cli_duration("ttl", ttlv, ttl, err, sizeof err) < 0)
        return mcp_fail("bad-arguments", "%s", err);
    if (cli_lease_holder(c, json_string_value(json_object_get(args, "resource")), wt,
                         json_string_value(json_object_get(args, "purpose")), err, sizeof err) < 0)
        return mcp_fail("bad-arguments", "%s", err);
    if (!ttlv) { /* held while this session runs: its end frees it */
        c->pid = getpid();
        c->pid_start = host_pid_start(c->pid);
    }
    return NULL;
}

json_t *mcp_tool_claim(struct mcp *m, json_t *args)
{
    char wt[PATH_MAX], err[REG_LEASE_MESSAGE_MAX];
    struct reg_lease c;
    long long ttl;
    void *pg = NULL;
    json_t *info = NULL, *fail = mcp_scope(m, args, 1, wt, sizeof wt);
    if (fail || (fail = claimer(&c, args, wt, &ttl)))
        return fail;
    int r = cli_lease_open(&pg, err, sizeof err);
    if (r == 0)
        r = cli_lease_claim(pg, &c, ttl, &info, err, sizeof err);
    json_t *out = r < 0    ? mcp_fail("store-failed", "cannot claim %s: %s", c.id, err)
                  : r == 0 ? held("held", err, info)
                           : json_pack("{s:s, s:O, s:s, s:s}", "claimed", c.id, "lease", info,
                                       "store", pg ? "postgresql" : "embedded", "ends",
                                       ttl ? "at its ttl, or at release"
                                           : "when this MCP session ends, or at release");
    cli_lease_close(pg);
    json_decref(info);
    return out;
}

json_t *mcp_tool_release(struct mcp *m, json_t *args)
{
    char wt[PATH_MAX], err[REG_LEASE_MESSAGE_MAX];
    struct reg_lease c;
    void *pg = NULL;
    json_t *holder = NULL, *fail = mcp_scope(m, args, 1, wt, sizeof wt);
    if (fail)
        return fail;
    if (cli_lease_holder(&c, json_string_value(json_object_get(args, "resource")), wt, NULL, err,
                         sizeof err) < 0)
        return mcp_fail("bad-arguments", "%s", err);
    int r = cli_lease_open(&pg, err, sizeof err);
    if (r == 0)
        r = cli_lease_release(pg, c.id, c.worktree, 0, &holder, err, sizeof err);
    cli_lease_close(pg);
    json_t *out = r < 0    ? mcp_fail("store-failed", "cannot release %s: %s", c.id, err)
                  : r > 0  ? json_pack("{s:s}", "released", c.id)
                  : holder ? held("held-by-another", err, holder)
                           : mcp_fail("not-held",
                                      "nobody holds %s (see the leases: wtproxy "
                                      "leases)",
                                      c.id);
    json_decref(holder);
    return out;
}
