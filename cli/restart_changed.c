/* restart_changed.c - a server the daemon started from a .wtproxy that
 * has changed since: its start line edited (a flag, Vite's root folder),
 * or sections added. A restart re-runs a server's own command under its
 * own name, so such a server is stopped first, saying so, and then
 * started from the file as a declared service that does not run
 * (restart_declared.c). `wtproxy restart` and the MCP restart tool both
 * do it through here; the stop's wait sleeps through cli_pause, so that
 * an MCP client's cancellation ends it (mcp_wait.c). */
#include "cli.h"
#include "servers.h"

#include <stdio.h>
#include <string.h>

#include "registry.h"

#define STOP_WAIT_MS (WTP_RESTART_STOP_MS + 5000) /* the wrapper's grace, and its exit */
#define POLL_MS 100

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* Whether running, a server's command as registered (argv joined by
 * spaces, cut to the field), is not the `/bin/sh -c START` the daemon
 * would launch from start now, on the same port. */
static int runs_other(const char *running, const char *start, long long port)
{
    char want[4096], num[24];
    size_t n = (size_t)snprintf(want, sizeof want, "/bin/sh -c ");
    snprintf(num, sizeof num, "%lld", port);
    for (const char *p = start; *p && n + strlen(num) + 1 < sizeof want;) {
        int mark = strncmp(p, "{port}", 6) == 0;
        n += (size_t)snprintf(want + n, sizeof want - n, "%.*s", mark ? (int)strlen(num) : 1,
                              mark ? num : p);
        p += mark ? 6 : 1;
    }
    size_t have = strlen(running);
    return have >= sizeof(((struct reg_backend *)0)->command) - 1
               ? strncmp(running, want, have) != 0
               : strcmp(running, want) != 0;
}

/* The server of regs the daemon started on front, or NULL. */
static json_t *started_on(json_t *regs, json_t *front)
{
    json_t *e;
    size_t i;
    json_array_foreach(regs, i, e)
        if (json_integer_value(json_object_get(e, "front")) == json_integer_value(front) &&
            json_is_true(json_object_get(e, "daemon_started")))
            return e;
    return NULL;
}

json_t *cli_declared_changed(const struct cli_server_args *a)
{
    char err[PATH_MAX + 256];
    struct cli_server_args any = *a;
    any.service = NULL, any.front = 0; /* a service renamed since runs under its old name */
    json_t *svcs = cli_declared_selected(a, 0), *regs = cli_servers_matching(&any, err, sizeof err);
    json_t *out = json_array(), *svc, *e;
    size_t i;
    json_array_foreach(svcs, i, svc) {
        json_t *front = json_object_get(svc, "front");
        char why[3 * 1024];
        if (!(e = started_on(regs, front)))
            continue;
        if (runs_other(str(e, "command"), str(svc, "start"),
                       json_integer_value(json_object_get(e, "port"))))
            snprintf(why, sizeof why, "runs `%s`, not the .wtproxy's start now (`%s`)",
                     str(e, "command"), str(svc, "start"));
        else if (strcmp(str(e, "service"), str(svc, "name")) != 0) /* sections added since */
            snprintf(why, sizeof why, "runs as service `%s`, which the .wtproxy now names `%s`",
                     str(e, "service")[0] ? str(e, "service") : "-", str(svc, "name"));
        else
            continue;
        json_array_append_new(out, json_pack("{s:O, s:s}", "front", front, "why", why));
    }
    json_decref(svcs);
    json_decref(regs);
    return out;
}

/* Whether a's worktree has a server registered on front: 1, 0, or -1
 * with err when no daemon answers. */
static int registered_on(const struct cli_server_args *a, int front, char *err, size_t errlen)
{
    struct cli_server_args one = *a;
    one.service = NULL, one.front = front;
    json_t *now = cli_servers_matching(&one, err, errlen);
    int r = now ? json_array_size(now) > 0 : -1;
    json_decref(now);
    return r;
}

/* Ask the daemon to stop a's server on front. Returns 0, or -1 with err. */
static int ask_stop(const struct cli_server_args *a, int front, char *err, size_t errlen)
{
    struct cli_server_args one = *a;
    json_t *reply, *req;
    one.service = NULL, one.front = front;
    if (!(req = cli_server_request("stop", &one))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int r = cli_call(req, 0, &reply, err, errlen);
    json_decref(req);
    if (r < 0)
        return -1;
    if (!json_is_true(json_object_get(reply, "ok"))) {
        snprintf(err, errlen, "the daemon did not stop %s's server on front %d: %s (%s)",
                 a->worktree, front, str(reply, "message"), str(reply, "error"));
        r = -1;
    }
    json_decref(reply);
    return r;
}

/* Stop a's server on front and wait until its wrapper has unregistered
 * it. Returns 0, or -1 with err. */
static int stop_front(const struct cli_server_args *a, int front, char *err, size_t errlen)
{
    if (ask_stop(a, front, err, errlen) < 0)
        return -1;
    for (long waited = 0;; waited += POLL_MS) {
        int r = registered_on(a, front, err, errlen);
        if (r <= 0)
            return r;
        if (waited >= STOP_WAIT_MS) {
            snprintf(err, errlen,
                     "%s's server on front %d is still registered %d s after its stop; see "
                     "wtproxy ls",
                     a->worktree, front, STOP_WAIT_MS / 1000);
            return -1;
        }
        if (cli_pause(POLL_MS) < 0) {
            snprintf(err, errlen, "the wait for %s's server on front %d to stop was cancelled",
                     a->worktree, front);
            return -1;
        }
    }
}

int cli_stop_changed(const struct cli_server_args *a,
                     void (*say)(void *ctx, int front, const char *line), void *ctx, char *err,
                     size_t errlen)
{
    json_t *changed = cli_declared_changed(a), *e;
    size_t i;
    int r = 0;
    json_array_foreach(changed, i, e) {
        int front = (int)json_integer_value(json_object_get(e, "front"));
        char line[PATH_MAX + 3 * 1024 + 64];
        snprintf(line, sizeof line,
                 "%s's server on front %d %s: stopping it, to start it from the file", a->worktree,
                 front, str(e, "why"));
        say(ctx, front, line);
        if ((r = stop_front(a, front, err, errlen)) < 0)
            break;
    }
    json_decref(changed);
    return r;
}
