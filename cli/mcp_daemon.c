/* mcp_daemon.c - `wtproxy mcp`'s tools and the daemon, by one rule: the
 * tools that only read never start it (a look changes nothing) and, when
 * none answers, say the command that starts one in the background, and
 * the tool that does; the tools that act (restart, claim, release) start
 * it when none answers, as `wtproxy run` and `wtproxy claim` do, unless
 * WTPROXY_NO_AUTOSTART=1, and their result says they did. */
#include "mcp.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "host.h"
#include "registry.h"

/* The failure of cli_call's rc (< 0) with err: "no-daemon" (the command
 * that starts one, and the tool that does), or "daemon-failed" (it
 * answered, but not as it should: err says what, and names the fix). */
static json_t *daemon_fail(int rc, const char *err)
{
    if (rc != CLI_NO_DAEMON)
        return mcp_fail("daemon-failed", "%s", err);
    /* An agent without a shell has a tool that starts one. */
    return mcp_fail("no-daemon", "%s%s", err,
                    cli_daemon_start_allowed(0)
                        ? "; or call the restart tool, which starts one (and the servers this "
                          "worktree's .wtproxy declares)"
                        : "");
}

json_t *mcp_ask(json_t *req, json_t **fail)
{
    char err[PATH_MAX + 256];
    json_t *reply = NULL;
    if (!req) {
        *fail = mcp_fail("internal", "out of memory");
        return NULL;
    }
    int r = cli_call(req, 0, &reply, err, sizeof err);
    json_decref(req);
    if (r < 0)
        *fail = daemon_fail(r, err);
    return r < 0 ? NULL : reply;
}

/* Where a daemon this session starts writes (client.c's spawn_daemon). */
static void daemon_log(char *out, size_t len)
{
    char dir[PATH_MAX], err[PATH_MAX + 256];
    if (reg_state_dir(dir, sizeof dir, err, sizeof err) < 0)
        snprintf(out, len, "the state folder's daemon.log");
    else
        snprintf(out, len, "%s/daemon.log", dir);
}

/* The failure of a daemon this tool started that did not answer (err,
 * client.c's sentence), with its log's last lines: its own words say why
 * (a port another program holds, a bad config). */
static json_t *start_failed(char *err)
{
    char log[PATH_MAX + 16], lines[8192] = "";
    daemon_log(log, sizeof log);
    /* client.c's sentence points at the log's end it printed on stderr,
     * which an agent does not see: the lines follow here instead. */
    char *cut = strstr(err, "; its log ");
    if (cut)
        *cut = '\0';
    json_t *tail = mcp_log_tail(log, getuid(), MCP_RESTART_LOG_LINES), *l;
    size_t i, n = 0;
    json_array_foreach(json_object_get(tail, "lines"), i, l) {
        int w = snprintf(lines + n, sizeof lines - n, "\n  %.1000s", json_string_value(l));
        n = w > 0 && (size_t)w < sizeof lines - n ? n + (size_t)w : n;
    }
    json_decref(tail);
    return mcp_fail("no-daemon",
                    "no daemon answered, and this tool could not start one: %s. Its log, %s, "
                    "ends with:%s\nFix what it says, then call this tool again",
                    err, log, lines[0] ? lines : " (nothing)");
}

json_t *mcp_daemon_up(struct mcp *m)
{
    char err[PATH_MAX + 256];
    json_t *reply = NULL, *req = json_pack("{s:s}", "op", "ping");
    int r = req ? cli_call(req, 0, &reply, err, sizeof err) : -1;
    int may_start = cli_daemon_start_allowed(0);
    if (r == CLI_NO_DAEMON && may_start && (r = cli_call(req, 1, &reply, err, sizeof err)) == 0)
        m->started_pid = json_integer_value(json_object_get(reply, "pid"));
    json_decref(req);
    json_decref(reply);
    if (r == 0)
        return NULL;
    if (!req)
        return mcp_fail("internal", "out of memory");
    if (r == CLI_NO_DAEMON) /* WTPROXY_NO_AUTOSTART=1: the user's choice, said */
        return mcp_fail("no-daemon",
                        "%s (this session starts none itself: WTPROXY_NO_AUTOSTART=1 in its "
                        "environment)",
                        err);
    return start_failed(err);
}

void mcp_daemon_started(struct mcp *m, json_t *out)
{
    char log[PATH_MAX + 16], note[PATH_MAX + 256];
    daemon_log(log, sizeof log);
    snprintf(note, sizeof note,
             "no daemon answered, so this call started one (pid %lld, in the background, as "
             "wtproxy run does; its log: %s)",
             m->started_pid, log);
    json_object_set_new(out, "daemon_started", cli_json_text(note, strlen(note)));
    const char *msg = json_string_value(json_object_get(out, "message"));
    if (msg) { /* a failure's text is its message alone */
        size_t len = strlen(msg) + strlen(note) + 4;
        char *both = malloc(len);
        if (both) {
            snprintf(both, len, "%s\n(%s)", msg, note);
            json_object_set_new(out, "message", cli_json_text(both, strlen(both)));
        }
        free(both);
    }
    m->started_pid = 0;
}

/* The command that stops the daemon of ping and starts this version in
 * its place, in the background, on the same ports and socket, into out. */
static void replace_cmd(json_t *ping, char *out, size_t len)
{
    char path[PATH_MAX], err[PATH_MAX + 256], log[PATH_MAX + 16];
    long long pid = json_integer_value(json_object_get(ping, "pid"));
    size_t used, i;
    json_t *a;
    if (reg_control_path(path, sizeof path, err, sizeof err) < 0)
        snprintf(path, sizeof path, "PATH");
    daemon_log(log, sizeof log);
    used = (size_t)snprintf(out, len,
                            "kill %lld && tail --pid=%lld -f /dev/null; setsid -f wtproxy serve "
                            "--control %s",
                            pid, pid, path);
    json_array_foreach(json_object_get(ping, "listen"), i, a) {
        const char *l = json_string_value(a);
        if (l && used < len)
            used += (size_t)snprintf(out + used, len - used, " --listen %s", l);
    }
    if (used < len)
        snprintf(out + used, len - used, " >>%s 2>&1", log);
}

json_t *mcp_unsupported(const char *op)
{
    char cmd[2 * PATH_MAX + 1024];
    json_t *ping = cli_ping(0);
    const char *v = json_string_value(json_object_get(ping, "build"));
    if (!v) /* older than builds */
        v = json_string_value(json_object_get(ping, "version"));
    replace_cmd(ping, cmd, sizeof cmd);
    json_t *fail = mcp_fail("unsupported",
                            "the daemon (pid %lld, version %s) has no op \"%s\": it is older "
                            "than this wtproxy (%s). Replace it with this build, in the "
                            "background: %s",
                            json_integer_value(json_object_get(ping, "pid")), v ? v : "?", op,
                            host_build(), cmd);
    json_decref(ping);
    return fail;
}
