/* mcp_act.c - `wtproxy mcp`'s tools that change something: restart (the
 * daemon's op restart), claim and release (leases, through the same calls
 * as `wtproxy claim` and `wtproxy release`). Each acts only for the
 * session's worktree (mcp_scope refuses another, naming whose it is). */
#include "mcp.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "host.h"
#include "reg_lease.h"
#include "registry.h"

/* The entry of list with e's front, or NULL: a worktree has one server
 * on a front (as restart.c matches them). */
static json_t *same_front(json_t *list, json_t *e)
{
    json_t *x;
    size_t i;
    json_array_foreach(list, i, x)
        if (json_integer_value(json_object_get(x, "front")) ==
            json_integer_value(json_object_get(e, "front")))
            return x;
    return NULL;
}

/* lines (a JSON array of strings) into out, each on its own indented
 * line, for a sentence an agent reads as text. */
static void join_lines(json_t *lines, char *out, size_t len)
{
    size_t n = 0, i;
    json_t *l;
    out[0] = '\0';
    json_array_foreach(lines, i, l) {
        int w = snprintf(out + n, len - n, "\n  %.300s", json_string_value(l));
        n = w > 0 && (size_t)w < len - n ? n + (size_t)w : n;
    }
}

/* The failure of e, a restarted server of wt that is not back (why): the
 * sentence carries its log's last lines, since they say why, and what to
 * do next (an exited wrapper is gone: only a new `wtproxy run` starts it). */
static json_t *not_back(const char *wt, json_t *e, const char *why, int exited)
{
    const char *log = json_string_value(json_object_get(e, "log"));
    json_t *t = log ? mcp_log_tail(log, (uid_t)json_integer_value(json_object_get(e, "uid")),
                                   MCP_RESTART_LOG_LINES)
                    : NULL;
    char lines[8192], next[PATH_MAX + 128];
    join_lines(json_object_get(t, "lines"), lines, sizeof lines);
    int front = (int)json_integer_value(json_object_get(e, "front"));
    if (exited)
        snprintf(next, sizeof next,
                 "Fix what it says, then start it again: cd %s && wtproxy run --front %d -- "
                 "<server command with {port}>",
                 wt, front);
    else
        snprintf(next, sizeof next, "Read more of it with logs, or check again with servers");
    json_t *fail = mcp_fail(exited ? "exited" : "not-ready",
                            "%s's server on front :%d (%s) was restarted but %s. %s%s%s%s\n%s", wt,
                            front, json_string_value(json_object_get(e, "command")), why,
                            log ? "Its log " : "It has no log wtproxy knows of", log ? log : "",
                            lines[0] ? " ends with:" : "", lines, next);
    json_object_set(fail, "log", json_object_get(e, "log"));
    json_object_set(fail, "lines", json_object_get(t, "lines"));
    json_decref(t);
    return fail;
}

/* The gate's verdict on x when it predates the restart (asked at
 * since_ms) is the old server's ("stale: restart it"): it would send the
 * agent round again. The gate asks the new server at its next request. */
static void forget_old_verdict(json_t *x, long long since_ms)
{
    json_t *w = json_object_get(x, "whoami");
    if (w && json_integer_value(json_object_get(w, "checked_ms")) < since_ms)
        json_object_set_new(x, "whoami",
                            json_pack("{s:s, s:s}", "state", "unchecked", "detail",
                                      "not checked since the restart: wtproxy asks the new "
                                      "server's /__whoami at the next request to it"));
}

/* One look at the servers of wt in asked, as now lists them: NULL while
 * one is not ready yet (*late, a member of asked), else the servers as
 * they are now, or the failure of one that exited. */
static json_t *look(const char *wt, json_t *asked, json_t *now, long long since_ms, json_t **late)
{
    json_t *back = json_array(), *e;
    size_t i;
    *late = NULL;
    json_array_foreach(asked, i, e) {
        json_t *x = same_front(now, e);
        if (!x || json_integer_value(json_object_get(x, "pid")) !=
                      json_integer_value(json_object_get(e, "pid"))) {
            json_decref(back);
            return not_back(wt, e, "it exited (its wrapper unregistered it)", 1);
        }
        const char *state = json_string_value(json_object_get(x, "state"));
        if (!state || strcmp(state, "ready") != 0)
            *late = e;
        forget_old_verdict(x, since_ms);
        json_array_append(back, x);
    }
    if (*late)
        json_decref(back);
    return *late ? NULL : back;
}

/* Wait until every server of wt in asked is ready again: the wrapper
 * restarts its command in its own time, and an agent's next step (its
 * tests) must meet the new server, not the old one or a 503. Returns the
 * servers as they are then, or the failure of one that exited or is not
 * ready in time. */
static json_t *await_ready(const char *wt, json_t *asked, long long since_ms)
{
    struct timespec tick = {0, MCP_RESTART_POLL_MS * 1000000L};
    for (long waited = 0;; waited += MCP_RESTART_POLL_MS) {
        json_t *late = NULL, *fail = NULL, *now = mcp_entries(wt, &fail);
        json_t *out = now ? look(wt, asked, now, since_ms, &late) : fail;
        json_decref(now);
        if (out)
            return out;
        if (waited >= MCP_RESTART_WAIT_MS) {
            char why[64];
            snprintf(why, sizeof why, "it is not ready after %d s", MCP_RESTART_WAIT_MS / 1000);
            return not_back(wt, late, why, 0);
        }
        nanosleep(&tick, NULL);
    }
}

/* The daemon's not-found for a restart of wt (refusal, consumed), with
 * what an agent needs next: no server runs, so one must be started; and
 * when one ran and exited (a crash at start), its log's last lines say
 * why. */
static json_t *nothing_to_restart(const char *wt, json_t *refusal, json_t *args)
{
    const char *service = json_string_value(json_object_get(args, "service"));
    json_t *gone = mcp_gone_log(wt, service, json_object_get(args, "front"), MCP_RESTART_LOG_LINES);
    const char *log = json_string_value(json_object_get(gone, "log"));
    char lines[8192], then[PATH_MAX + 256];
    join_lines(json_object_get(gone, "lines"), lines, sizeof lines);
    snprintf(then, sizeof then, "cd %s && wtproxy run%s%s -- <server command with {port}>", wt,
             service ? " --service " : "", service ? service : "");
    json_t *fail =
        log && lines[0]
            ? mcp_fail("not-found",
                       "%s. Nothing to restart: its last server exited; its newest log, %s "
                       "(written %s ago), ends with:%s\nFix what it says, then start it "
                       "again: %s",
                       json_string_value(json_object_get(refusal, "message")), log,
                       json_string_value(json_object_get(gone, "age")), lines, then)
            : mcp_fail("not-found", "%s. Nothing to restart: start one there: %s",
                       json_string_value(json_object_get(refusal, "message")), then);
    json_object_set(fail, "log", json_object_get(gone, "log"));
    json_object_set(fail, "lines", json_object_get(gone, "lines"));
    json_decref(gone);
    json_decref(refusal);
    return fail;
}

json_t *mcp_tool_restart(struct mcp *m, json_t *args)
{
    static const char *const keys[] = {"service", "front", NULL};
    char wt[PATH_MAX];
    long long asked_ms = host_wall_ms();
    json_t *fail = mcp_scope(m, args, 1, wt, sizeof wt);
    json_t *out = fail ? NULL : mcp_op("restart", wt, args, keys, &fail);
    const char *code = json_string_value(json_object_get(fail, "error"));
    if (code && strcmp(code, "not-found") == 0)
        return nothing_to_restart(wt, fail, args);
    if (!out)
        return fail;
    json_t *back = await_ready(wt, json_object_get(out, "restarted"), asked_ms);
    if (json_object_get(back, "error")) {
        json_decref(out);
        return back;
    }
    json_object_del(out, "ok");
    json_object_set_new(out, "restarted", back);
    json_object_set_new(out, "worktree", cli_json_text(wt, strlen(wt)));
    json_object_set_new(out, "ready", json_true());
    return out;
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

/* The failure for a lease of id that another live process of this
 * machine holds from worktree wt (a second agent's session in the same
 * worktree, a `wtproxy claim -- CMD`), or NULL. The store's release frees
 * any lease of the worktree, as a person in it may; one agent's session
 * must not end another's lease under it. Looked up just before the
 * release: only a holder that releases and claims again in between slips
 * through. */
static json_t *other_session(void *pg, const char *id, const char *wt)
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
                 "command) and ends when pid %d releases it or ends: leave it, wait, then "
                 "claim %s again; or use another resource",
                 id, (int)h.pid, cmd[0] ? cmd : "?", h.purpose, age, (int)h.pid, id);
        fail = held("held-by-another", err, l);
    }
    json_decref(all);
    return fail;
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
    if (r == 0 && (fail = other_session(pg, c.id, c.worktree))) {
        cli_lease_close(pg);
        return fail;
    }
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
