/* mcp_act.c - `wtproxy mcp`'s tools that lease: claim and release
 * (through the same calls as `wtproxy claim` and `wtproxy release`). Each
 * acts only for the session's worktree (mcp_scope refuses another, naming
 * whose it is); restart is mcp_restart.c's. */
#include "mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "host.h"
#include "reg_lease.h"
#include "registry.h"

/* The failure of a lease held by holder: the store's sentence (whose it
 * is, when it ends, the command that frees it) with the holder. */
static json_t *held(const char *code, const char *msg, json_t *holder)
{
    json_t *fail = mcp_fail(code, "%s", msg);
    json_object_set(fail, "holder", holder);
    return fail;
}

/* args' wait into *wait_ms (0: none), or a failure: a duration of at most
 * MCP_CLAIM_WAIT_MAX_MS, which a client waits for. */
static json_t *wait_arg(json_t *args, long long *wait_ms)
{
    const char *v = json_string_value(json_object_get(args, "wait"));
    char err[256];
    *wait_ms = 0;
    if (v && cli_duration("wait", v, wait_ms, err, sizeof err) < 0)
        return mcp_fail("bad-arguments",
                        "wait \"%.64s\" is not a duration: give a number and a unit, e.g. "
                        "\"30s\" (at most " MCP_CLAIM_WAIT_MAX ")",
                        v);
    if (*wait_ms > MCP_CLAIM_WAIT_MAX_MS)
        return mcp_fail("bad-arguments",
                        "wait \"%.64s\" is longer than one claim call waits (" MCP_CLAIM_WAIT_MAX
                        ": an MCP client gives up on a tool call after a minute): give wait "
                        "\"" MCP_CLAIM_WAIT_MAX "\", and call claim again to wait longer",
                        v);
    return NULL;
}

/* The claimer of args' resource for worktree wt into c, or a failure. */
static json_t *claimer(struct reg_lease *c, json_t *args, const char *wt, long long *ttl,
                       long long *wait_ms)
{
    const char *ttlv = json_string_value(json_object_get(args, "ttl"));
    char err[PATH_MAX + 256];
    json_t *fail = wait_arg(args, wait_ms);
    *ttl = 0;
    if (fail)
        return fail;
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

/* fail, a refused claim of id (held, other_session), with its next step:
 * this tool's wait, which claims it as soon as it is free. After a wait of
 * waited ms that gave up, it says so first, and keeps waited_ms. */
static json_t *wait_hint(json_t *fail, const char *id, long long waited)
{
    const char *msg = json_string_value(json_object_get(fail, "message"));
    char text[REG_LEASE_MESSAGE_MAX + 512], span[32];
    host_age(waited, span, sizeof span);
    if (waited)
        snprintf(text, sizeof text,
                 "did not claim %s within the %s it waited: %s; to wait longer: call claim "
                 "again with wait \"" MCP_CLAIM_WAIT_MAX "\"",
                 id, span, msg ? msg : "it is held");
    else
        snprintf(text, sizeof text,
                 "%s; to wait until it is free: call claim again with wait \"" MCP_CLAIM_WAIT_MAX
                 "\" (it claims %s as soon as its holder releases it, ends or expires)",
                 msg ? msg : "it is held", id);
    json_object_set_new(fail, "message", cli_json_text(text, strlen(text)));
    if (waited)
        json_object_set_new(fail, "waited_ms", json_integer(waited));
    return fail;
}

/* The failure (code) for a lease of id that another live process of this
 * machine holds from worktree wt (a second agent's session in the same
 * worktree, a `wtproxy claim -- CMD`), or NULL. The store's release frees
 * any lease of the worktree, as a person in it may; one agent's session
 * must not end another's lease under it, nor be told to kill the other
 * (the store's sentence for a refused claim). Looked up just before the
 * release: only a holder that releases and claims again in between slips
 * through. */
static json_t *other_session(void *pg, const char *code, const char *id, const char *wt)
{
    char err[REG_LEASE_MESSAGE_MAX], cmd[512], age[32];
    json_t *all = cli_lease_list(pg, err, sizeof err), *l, *fail = NULL;
    struct reg_lease h;
    size_t i;
    json_array_foreach(all, i, l) {
        if (fail || reg_lease_from_json(l, &h, err, sizeof err) < 0 || strcmp(h.id, id) != 0 ||
            strcmp(h.worktree, wt) != 0 || h.pid <= 0 || h.pid == getpid() ||
            strcmp(h.machine, reg_machine_id()) != 0 || reg_lease_holder_dead(&h))
            continue;
        host_pid_cmdline(h.pid, cmd, sizeof cmd);
        host_age(host_wall_ms() - h.acquired_ms, age, sizeof age);
        snprintf(err, sizeof err,
                 "%s is held by another process in this worktree: pid %d (%s), for \"%s\", "
                 "since %s ago. It is theirs (another agent's session, or a claim around a "
                 "command) and ends when pid %d releases it or ends: leave it and wait for "
                 "that, or use another resource",
                 id, (int)h.pid, cmd[0] ? cmd : "?", h.purpose, age, (int)h.pid);
        fail = held(code, err, l);
    }
    json_decref(all);
    return fail;
}

/* The failure of a store that did not do what (claim, release) for id,
 * and err, its own sentence (what happened and the fix: PostgreSQL's
 * connect error names WTPROXY_REGISTRY, the daemon's its limit). */
static json_t *store_failed(void *pg, const char *what, const char *id, const char *err)
{
    return mcp_fail("store-failed", "could not %s %s in %s: %s", what, id,
                    pg ? "the PostgreSQL lease store" : "the daemon's embedded lease store", err);
}

/* Open the lease store into *pg (NULL: the daemon's embedded one, which
 * needs a daemon: started when none answers, as `wtproxy claim` starts
 * it). Returns NULL, or the failure of what (claim, release) for id. */
static json_t *open_store(struct mcp *m, void **pg, const char *what, const char *id)
{
    char err[REG_LEASE_MESSAGE_MAX];
    if (cli_lease_open(pg, err, sizeof err) < 0)
        return mcp_fail("store-failed", "could not %s %s: the PostgreSQL lease store: %s", what, id,
                        err);
    return *pg ? NULL : mcp_daemon_up(m);
}

/* Release c, just claimed for a call the client cancelled meanwhile: the
 * client hears nothing of it, so it must not hold it. */
static void unclaim(void *pg, const struct reg_lease *c)
{
    char err[REG_LEASE_MESSAGE_MAX];
    json_t *holder = NULL;
    if (cli_lease_release(pg, c, 0, &holder, err, sizeof err) > 0)
        fprintf(stderr, "wtproxy mcp: %s was claimed as the call was cancelled: released it\n",
                c->id);
    else
        fprintf(stderr,
                "wtproxy mcp: %s was claimed as the call was cancelled, and releasing it "
                "failed (%s): release it: cd %s && wtproxy release %s\n",
                c->id, err, c->worktree, c->id);
    json_decref(holder);
}

json_t *mcp_tool_claim(struct mcp *m, json_t *args)
{
    char wt[PATH_MAX], err[REG_LEASE_MESSAGE_MAX];
    struct reg_lease c;
    long long ttl, wait_ms, waited;
    void *pg = NULL;
    json_t *info = NULL, *fail = mcp_scope(m, args, 1, wt, sizeof wt);
    if (fail || (fail = claimer(&c, args, wt, &ttl, &wait_ms)) ||
        (fail = open_store(m, &pg, "claim", c.id))) {
        cli_lease_close(pg);
        return fail;
    }
    int r = cli_lease_claim_wait(pg, &c, ttl, wait_ms, &info, &waited, err, sizeof err);
    if (r > 0 && cli_pause(0) < 0) /* cancelled as it was claimed: not answered, so not kept */
        unclaim(pg, &c);
    /* Another agent of this worktree holds it: wait for it, not kill it. */
    json_t *mate = r == 0 ? other_session(pg, "held", c.id, wt) : NULL;
    json_t *out = r < 0    ? store_failed(pg, "claim", c.id, err)
                  : r == 0 ? wait_hint(mate ? mate : held("held", err, info), c.id, waited)
                           : json_pack("{s:s, s:O, s:s, s:s}", "claimed", c.id, "lease", info,
                                       "store", pg ? "postgresql" : "embedded", "ends",
                                       ttl ? "at its ttl, or at release"
                                           : "when this MCP session ends, or at release");
    if (r > 0 && waited)
        json_object_set_new(out, "waited_ms", json_integer(waited));
    if (r > 0 && !ttl)
        m->holds = 1;
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
    c.pid = getpid(); /* what this session holds while it runs is its own to release */
    c.pid_start = host_pid_start(c.pid);
    if ((fail = open_store(m, &pg, "release", c.id)) ||
        (fail = other_session(pg, "held-by-another", c.id, c.worktree))) {
        cli_lease_close(pg);
        return fail;
    }
    int r = cli_lease_release(pg, &c, 0, &holder, err, sizeof err);
    json_t *out = r < 0    ? store_failed(pg, "release", c.id, err)
                  : r > 0  ? json_pack("{s:s}", "released", c.id)
                  : holder ? held("held-by-another", err, holder)
                           : mcp_fail("not-held",
                                      "nobody holds %s (see the leases: wtproxy "
                                      "leases)",
                                      c.id);
    cli_lease_close(pg);
    json_decref(holder);
    return out;
}

/* Release l when this session holds it (its pid and start time). */
static void release_ours(void *pg, json_t *l)
{
    char err[REG_LEASE_MESSAGE_MAX];
    struct reg_lease h;
    json_t *holder = NULL;
    if (reg_lease_from_json(l, &h, err, sizeof err) < 0 || h.pid != getpid() ||
        h.pid_start != host_pid_start(h.pid) || strcmp(h.machine, reg_machine_id()) != 0)
        return;
    if (cli_lease_release(pg, &h, 0, &holder, err, sizeof err) > 0)
        fprintf(stderr, "wtproxy mcp: the session ended: released %s\n", h.id);
    else
        fprintf(stderr, "wtproxy mcp: the session ended, and %s was not released: %s\n", h.id, err);
    json_decref(holder);
}

void mcp_release_held(struct mcp *m)
{
    char err[REG_LEASE_MESSAGE_MAX];
    void *pg = NULL;
    json_t *all = NULL, *l;
    size_t i;
    if (!m->holds)
        return;
    /* A daemon gone meanwhile took the embedded store with it: the next
     * one drops our leases at its start, as a dead holder's; never start
     * one for that. */
    setenv("WTPROXY_NO_AUTOSTART", "1", 1);
    if (cli_lease_open(&pg, err, sizeof err) < 0 || !(all = cli_lease_list(pg, err, sizeof err)))
        fprintf(stderr,
                "wtproxy mcp: the session ended, and its leases were not released: %s; they "
                "end with it all the same: wtproxy leases on this machine drops them once the "
                "store answers\n",
                err);
    json_array_foreach(all, i, l)
        release_ours(pg, l);
    json_decref(all);
    cli_lease_close(pg);
}
