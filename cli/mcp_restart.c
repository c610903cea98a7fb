/* mcp_restart.c - `wtproxy mcp`'s restart tool, as `wtproxy restart` does
 * it (cli/restart.c, cli/restart_changed.c, cli/restart_declared.c): a
 * server the daemon started from an older .wtproxy (its start line edited
 * since) stopped first, the daemon's op restart for the servers that run,
 * its op start for the services the worktree's .wtproxy declares that do
 * not (one that died was unregistered by its wrapper, one stopped just
 * now), then a wait until each is ready, so that the agent's next
 * step (its tests) meets the new server, not the old one or a 503, and
 * for the daemon's verdict on it, as that command waits and says it
 * (verdict.c). Each wait sleeps through cli_pause: a client's
 * cancellation ends it (mcp_wait.c), and what the daemon was asked goes
 * on. What did not come up is an error carrying its log's last lines,
 * the reason; a restart with nothing to restart or start says how to
 * start a server, and what the last one's log said. */
#include "mcp.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "servers.h"

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
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

/* The failure (code) of a server that did not come up: what was done to
 * it, why it is not up, its log's last lines (owner's file, "" when it has
 * none), and next, what to do. */
static json_t *down(const char *code, const char *what, const char *why, const char *log,
                    uid_t owner, const char *next)
{
    json_t *t = log[0] ? mcp_log_tail(log, owner, MCP_RESTART_LOG_LINES) : NULL;
    char lines[8192];
    join_lines(json_object_get(t, "lines"), lines, sizeof lines);
    json_t *fail = mcp_fail(code, "%s but %s. %s%s%s%s\n%s", what, why,
                            log[0] ? "Its log " : "It has no log wtproxy knows of", log,
                            lines[0] ? " ends with:" : "", lines, next);
    if (log[0])
        json_object_set_new(fail, "log", json_string(log));
    json_object_set(fail, "lines", json_object_get(t, "lines"));
    json_decref(t);
    return fail;
}

/* What to do about a server that failed and waits for a change to its
 * files (code "failed"): no restart helps, an edit does. */
#define FIX_AND_SAVE                                                                               \
    "Fix the error its last lines name and save the file: its reloader starts it again; then "     \
    "check with servers"

/* The failure (code: exited, failed, not-ready) of e, a restarted server
 * of wt that is not back (why). An exited wrapper is gone: a new `wtproxy
 * run`, or for a server the .wtproxy declares a restart, starts it again. */
static json_t *entry_down(const char *wt, json_t *e, const char *why, const char *code)
{
    char what[PATH_MAX + 1024], next[PATH_MAX + 256], then[PATH_MAX + 128];
    int front = (int)json_integer_value(json_object_get(e, "front"));
    const char *service = json_string_value(json_object_get(e, "service"));
    snprintf(what, sizeof what, "%s's server on front :%d (%s) was restarted", wt, front,
             str(e, "command"));
    if (strcmp(code, "exited") == 0) {
        mcp_start_hint(wt, service, front, then, sizeof then);
        snprintf(next, sizeof next, "Fix what it says, then start it again: %s", then);
    } else
        snprintf(
            next, sizeof next, "%s",
            strcmp(code, "failed") != 0 ? "Read more of it with logs, or check again with servers"
            : strstr(why, "wtproxy db claim")
                ? "Claim and migrate its database as said (in a shell), then call restart again"
            : strstr(why, "pg_isready")
                ? "Start its database server as said (in a shell), then call restart again"
                : FIX_AND_SAVE);
    return down(code, what, why, str(e, "log"),
                (uid_t)json_integer_value(json_object_get(e, "uid")), next);
}

/* One look at the servers of wt in asked, as now lists them: NULL while
 * one is not ready yet (*late, a member of asked; with ready); else the
 * servers as they are now, or the failure of one that exited. */
static json_t *look(const char *wt, json_t *asked, json_t *now, int ready, json_t **late)
{
    json_t *back = json_array(), *e;
    size_t i;
    *late = NULL;
    json_array_foreach(asked, i, e) {
        json_t *x = cli_entry_on_front(now, e);
        if (!x || json_integer_value(json_object_get(x, "pid")) !=
                      json_integer_value(json_object_get(e, "pid"))) {
            json_decref(back);
            return entry_down(wt, e, "it exited (its wrapper unregistered it)", "exited");
        }
        char failed[4 * PATH_MAX];
        if (ready && cli_failed_words(x, failed, sizeof failed)) { /* no wait makes it ready */
            json_decref(back);
            return entry_down(wt, e, failed, "failed");
        }
        if (ready && strcmp(str(x, "state"), "ready") != 0)
            *late = e;
        else if (ready)
            cli_restart_seen_ready(e);
        json_array_append(back, x);
    }
    if (*late)
        json_decref(back);
    return *late ? NULL : back;
}

/* The CLI's selection for the servers of wt that args (service, front)
 * select, into a. */
static void server_args(const char *wt, json_t *args, struct cli_server_args *a)
{
    *a = (struct cli_server_args){.service = json_string_value(json_object_get(args, "service")),
                                  .front = (int)json_integer_value(json_object_get(args, "front"))};
    snprintf(a->worktree, sizeof a->worktree, "%s", wt);
}

/* The failure of a wait the client cancelled: never sent (mcp_rpc.c
 * drops the call's answer); what the daemon was asked goes on. */
static json_t *cancelled(void)
{
    return mcp_fail("cancelled", "the client cancelled the restart's wait");
}

/* Wait until every server of wt in asked is ready again. Returns NULL, or
 * the failure of one that exited or is not ready in time. */
static json_t *await_ready(const char *wt, json_t *asked)
{
    for (long waited = 0;; waited += MCP_RESTART_POLL_MS) {
        json_t *late = NULL, *fail = NULL, *now = mcp_entries(wt, &fail);
        json_t *out = now ? look(wt, asked, now, 1, &late) : fail;
        json_decref(now);
        int up = json_is_array(out);
        if (out && !up)
            return out;
        json_decref(out);
        if (up)
            return NULL;
        if (waited >= MCP_RESTART_WAIT_MS) {
            char why[64];
            snprintf(why, sizeof why, "it is not ready after %d s", MCP_RESTART_WAIT_MS / 1000);
            return entry_down(wt, late, why, "not-ready");
        }
        if (cli_pause(MCP_RESTART_POLL_MS) < 0)
            return cancelled();
    }
}

/* The servers of wt in asked (restarted for args) once ready, with the
 * daemon's verdict on each as `wtproxy restart` waits for it and says it
 * (verdict.c: "said", that command's line); the lines of those the gate
 * refuses (stale, another checkout...) into refusals, "" when none.
 * Returns them, or the failure of one that exited or is not ready in
 * time. */
static json_t *restarted(const char *wt, json_t *args, json_t *asked, char *refusals, size_t rlen)
{
    struct cli_server_args a;
    json_t *late, *e, *fail = await_ready(wt, asked);
    size_t i;
    if (fail)
        return fail;
    server_args(wt, args, &a);
    json_t *now = cli_await_verdicts(&a, asked, CLI_VERDICT_WAIT_MS, NULL);
    if (cli_pause(0) < 0) {
        json_decref(now);
        return cancelled();
    }
    json_t *list = json_array_size(now) ? json_incref(now) : mcp_entries(wt, &fail);
    json_t *back = list ? look(wt, asked, list, 0, &late) : fail;
    size_t n = 0;
    refusals[0] = '\0';
    json_array_foreach(json_object_get(back, "error") ? NULL : asked, i, e) {
        char line[PATH_MAX + 1400];
        if (cli_verdict_restarted(e, list, line, sizeof line) == CLI_VERDICT_REFUSED) {
            int w = snprintf(refusals + n, rlen - n, "%s%s", n ? "\n" : "", line);
            n = w > 0 && (size_t)w < rlen - n ? n + (size_t)w : n;
        }
        json_object_set_new(json_array_get(back, i), "said", cli_json_text(line, strlen(line)));
    }
    json_decref(now);
    json_decref(list);
    return back;
}

/* The services wt's .wtproxy declares that args select and that do not
 * run now (cli_declared_stopped: empty when none or no file). */
static json_t *declared_stopped(const char *wt, json_t *args)
{
    struct cli_server_args a;
    server_args(wt, args, &a);
    return cli_declared_stopped(&a);
}

/* cli_stop_changed's say: each sentence kept in ctx (an object) by its
 * front, for the started entry that server becomes. */
static void keep_said(void *ctx, int front, const char *line)
{
    char key[24];
    snprintf(key, sizeof key, "%d", front);
    json_object_set_new(ctx, key, cli_json_text(line, strlen(line)));
}

/* Stop the servers of wt that args select and that the daemon started
 * from an older .wtproxy (an edited start line, sections added since), as
 * `wtproxy restart` does (restart_changed.c): restarted, each would run its
 * old command again. Their sentences go into said, by front; the
 * declared services they now are are started below. Returns NULL, or the
 * failure. */
static json_t *stop_changed(const char *wt, json_t *args, json_t *said)
{
    struct cli_server_args a;
    char err[PATH_MAX + 4096];
    server_args(wt, args, &a);
    if (cli_stop_changed(&a, keep_said, said, err, sizeof err) == 0)
        return NULL;
    return cli_pause(0) < 0 ? cancelled()
                            : mcp_fail("not-stopped", "%s; then call restart again", err);
}

/* Each of started (the services op's entries, started from the file) that
 * stop_changed stopped gets its sentence as "said". */
static void add_said(json_t *started, json_t *said)
{
    json_t *svc;
    size_t i;
    json_array_foreach(started, i, svc) {
        char key[24];
        snprintf(key, sizeof key, "%lld", json_integer_value(json_object_get(svc, "front")));
        if (json_object_get(said, key))
            json_object_set(svc, "said", json_object_get(said, key));
    }
}

/* The entry of the services op's list now named name, or NULL. */
static json_t *service_named(json_t *now, const char *name)
{
    json_t *x;
    size_t i;
    json_array_foreach(now, i, x)
        if (strcmp(str(x, "name"), name) == 0)
            return x;
    return NULL;
}

/* The failure (code, as entry_down's) of svc, a service of wt started
 * from its .wtproxy, that is not up (why); restart starts it again once
 * it is fixed. */
static json_t *service_down(const char *wt, json_t *svc, const char *why, const char *code)
{
    char what[PATH_MAX + 1024], name[128] = "the server";
    if (str(svc, "name")[0])
        snprintf(name, sizeof name, "service %s", str(svc, "name"));
    snprintf(what, sizeof what, "%s of %s's .wtproxy (front :%d, %s) was started", name, wt,
             (int)json_integer_value(json_object_get(svc, "front")), str(svc, "start"));
    return down(code, what, why, str(svc, "log"), getuid(),
                strcmp(code, "exited") == 0   ? "Fix what it says, then restart again: restart "
                                                "starts it"
                : strcmp(code, "failed") == 0 ? FIX_AND_SAVE
                                              : "Read more of it with logs, or check again with "
                                                "servers");
}

/* One look at the services of wt in started, as the services op lists
 * them now: them as they are when all are ready, the failure of one that
 * ended or is late (waited_out), else NULL (one is still starting). */
static json_t *look_services(const char *wt, json_t *started, int waited_out)
{
    static const char *const none[] = {NULL};
    json_t *fail = NULL, *reply = mcp_op("services", wt, NULL, none, &fail), *svc;
    json_t *now = json_object_get(reply, "services"), *up = json_array(), *out = NULL;
    size_t i;
    int pending = 0;
    char failed[4 * PATH_MAX];
    json_array_foreach(reply ? started : NULL, i, svc) {
        json_t *x = service_named(now, str(svc, "name"));
        const char *state = x ? str(x, "state") : "stopped";
        if (strcmp(state, "ready") == 0)
            json_array_append(up, x);
        else if (strcmp(state, "stopped") == 0 || strcmp(state, "failed") == 0)
            out = service_down(wt, svc, "it exited before it was ready", "exited");
        else if (cli_failed_words(x, failed, sizeof failed))
            out = service_down(wt, svc, failed, "failed");
        else if (waited_out)
            out = service_down(wt, svc, "it was not ready in time", "not-ready");
        else
            pending = 1;
        if (out)
            break;
    }
    if (!out)
        out = !reply ? fail : pending ? NULL : json_incref(up);
    json_decref(reply);
    json_decref(up);
    return out;
}

/* Start each of stopped (the services op's entries) with the daemon's op
 * start, and wait until each is ready. Returns them as they are then, or
 * the failure of one. */
static json_t *start_declared(const char *wt, json_t *stopped)
{
    static const char *const keys[] = {"service", NULL};
    json_t *svc, *out;
    size_t i;
    if (!json_array_size(stopped))
        return json_array();
    json_array_foreach(stopped, i, svc) {
        json_t *fail = NULL, *args = json_pack("{s:s}", "service", str(svc, "name"));
        json_t *r = mcp_op("start", wt, args, keys, &fail);
        json_decref(args);
        if (!r)
            return fail;
        json_decref(r);
    }
    for (long waited = 0;; waited += MCP_RESTART_POLL_MS) {
        out = look_services(wt, stopped, waited >= MCP_RESTART_WAIT_MS);
        if (out)
            return out;
        if (cli_pause(MCP_RESTART_POLL_MS) < 0)
            return cancelled();
    }
}

/* The daemon's not-found for a restart of wt (refusal, consumed) when its
 * .wtproxy declares nothing to start either, with what an agent needs
 * next: how to start a server, and when one ran and exited (a crash at
 * start), its log's last lines, which say why. */
static json_t *nothing_to_restart(const char *wt, json_t *refusal, json_t *args)
{
    const char *service = json_string_value(json_object_get(args, "service"));
    json_t *gone = mcp_gone_log(wt, service, json_object_get(args, "front"), MCP_RESTART_LOG_LINES);
    char lines[8192], then[PATH_MAX + 256];
    join_lines(json_object_get(gone, "lines"), lines, sizeof lines);
    mcp_start_hint(wt, service, (int)json_integer_value(json_object_get(args, "front")), then,
                   sizeof then);
    json_t *fail = lines[0] ? mcp_fail("not-found",
                                       "%s. Nothing to restart: its last server exited; its "
                                       "newest log, %s (written %s ago), ends with:%s\nFix what "
                                       "it says, then start it again: %s",
                                       str(refusal, "message"), str(gone, "log"), str(gone, "age"),
                                       lines, then)
                            : mcp_fail("not-found", "%s. Nothing to restart: start one there: %s",
                                       str(refusal, "message"), then);
    json_object_set(fail, "log", json_object_get(gone, "log"));
    json_object_set(fail, "lines", json_object_get(gone, "lines"));
    json_decref(gone);
    json_decref(refusal);
    return fail;
}

/* out (consumed), a restart whose servers are up but refused by the gate
 * (lines: each one's sentence, with its fix): a failure, as `wtproxy
 * restart` exits 1 for it, since every request to them gets an error
 * status and the agent's tests would fail on it; it carries what out
 * says. */
static json_t *refused(json_t *out, const char *lines)
{
    json_t *fail = mcp_fail("refused", "%s", lines);
    json_object_update_missing(fail, out);
    json_decref(out);
    return fail;
}

json_t *mcp_tool_restart(struct mcp *m, json_t *args)
{
    static const char *const keys[] = {"service", "front", NULL};
    char wt[PATH_MAX];
    json_t *fail = mcp_scope(m, args, 1, wt, sizeof wt);
    if (fail || (fail = mcp_daemon_up(m)) || /* up before it reads what the .wtproxy declares */
        (fail = mcp_unknown_selection(wt, args, "restart")))
        return fail;
    json_t *said = json_object();
    if ((fail = stop_changed(wt, args, said))) {
        json_decref(said);
        return fail;
    }
    /* Read first: a service the restart below finds dead is not "not running". */
    json_t *stopped = declared_stopped(wt, args);
    json_t *out = mcp_op("restart", wt, args, keys, &fail);
    int none = !out && strcmp(str(fail, "error"), "not-found") == 0;
    if (none && json_array_size(stopped)) {
        json_decref(fail);
        out = json_pack("{s:[]}", "restarted");
    } else if (!out) {
        json_decref(stopped);
        json_decref(said);
        return none ? nothing_to_restart(wt, fail, args) : fail;
    }
    char refusals[4 * (PATH_MAX + 1400)];
    cli_restart_asked(json_object_get(out, "restarted"));
    json_t *back =
        restarted(wt, args, json_object_get(out, "restarted"), refusals, sizeof refusals);
    json_t *started = json_object_get(back, "error") ? NULL : start_declared(wt, stopped);
    json_decref(stopped);
    add_said(started, said);
    json_decref(said);
    json_t *failed = json_object_get(back, "error")      ? back
                     : json_object_get(started, "error") ? started
                                                         : NULL;
    if (failed) {
        json_decref(out);
        json_decref(failed == back ? started : back);
        return failed;
    }
    json_object_del(out, "ok");
    json_object_set_new(out, "restarted", back);
    json_object_set_new(out, "started", started);
    json_object_set_new(out, "worktree", cli_json_text(wt, strlen(wt)));
    json_object_set_new(out, "ready", json_true());
    return refusals[0] ? refused(out, refusals) : out;
}
