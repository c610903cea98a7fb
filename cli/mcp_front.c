/* mcp_front.c - the fronts `wtproxy mcp` names to an agent: the ports on
 * localhost where its worktree's servers are reached, in the instructions
 * it reads once at initialize and in the servers tool's result. Picked as
 * the CLI picks a command's front (cli/front.c), but all of them, since an
 * app of several services (a front end and its API) is reached on each:
 * --front; else the fronts the .wtproxy declares and those the worktree's
 * servers are registered on; else the daemon's ports; else 8000. With
 * each, whether the daemon listens there: a request to a front it does
 * not own reaches whatever else listens there, or nothing. */
#include "mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "front.h"
#include "host.h"
#include "wtfile.h"

#define MAX_FRONTS (WTFILE_MAX_SERVICES + 16)

struct front {
    int port;
    char service[REG_SERVICE_MAX]; /* "" when no service names it */
};

/* Add port (of service, may be NULL) to the n of f unless there. Returns
 * how many there are then. */
static int add(struct front *f, int n, int port, const char *service)
{
    for (int i = 0; i < n; i++)
        if (f[i].port == port)
            return n;
    if (n == MAX_FRONTS || port <= 0 || port > 65535)
        return n;
    f[n].port = port;
    snprintf(f[n].service, sizeof f[n].service, "%s", service ? service : "");
    return n + 1;
}

/* The fronts of the services wt's .wtproxy declares (its own, else its
 * main checkout's, as the daemon reads them), added to the n of f. */
static int declared(const char *wt, struct front *f, int n)
{
    struct cli_wtproxy w;
    cli_wtproxy_read(wt, &w);
    for (int i = 0; w.file && i < w.file->n; i++)
        n = add(f, n, w.file->svc[i].front, w.file->svc[i].name);
    cli_wtproxy_free(&w);
    return n;
}

/* The fronts of worktree wt ("" for none) into f, as the header says;
 * ping is the daemon's (NULL: none answers). Returns how many (>= 1). */
static int fronts_of(const struct mcp *m, const char *wt, json_t *ping, struct front *f)
{
    if (m->front)
        return add(f, 0, m->front, NULL);
    int n = wt[0] ? declared(wt, f, 0) : 0;
    json_t *fail = NULL, *entries = ping && wt[0] ? mcp_entries(wt, &fail) : NULL, *e;
    size_t i;
    json_array_foreach(entries, i, e)
        n = add(f, n, (int)json_integer_value(json_object_get(e, "front")),
                json_string_value(json_object_get(e, "service")));
    json_decref(entries);
    json_decref(fail);
    json_array_foreach(n ? NULL : json_object_get(ping, "listen"), i, e) {
        const char *s = json_string_value(e), *colon = s ? strrchr(s, ':') : NULL;
        n = add(f, n, colon ? atoi(colon + 1) : 0, NULL);
    }
    return n ? n : add(f, 0, WTP_DEFAULT_FRONT_PORT, NULL);
}

json_t *mcp_fronts(const struct mcp *m, const char *wt)
{
    struct front f[MAX_FRONTS];
    json_t *ping = cli_ping(0), *out = json_array();
    int n = fronts_of(m, wt, ping, f);
    for (int i = 0; out && i < n; i++) {
        char url[64];
        int listens = cli_listens_on(ping, f[i].port);
        snprintf(url, sizeof url, "http://localhost:%d/", f[i].port);
        json_t *o = json_pack("{s:i, s:s, s:o}", "front", f[i].port, "url", url, "listening",
                              listens < 0 ? json_null() : json_boolean(listens));
        if (o && f[i].service[0])
            json_object_set_new(o, "service", json_string(f[i].service));
        json_array_append_new(out, o);
    }
    json_decref(ping);
    return out;
}

/* "http://localhost:5173/ (service web) and http://localhost:8001/" for
 * the n of f, into out at *used. */
static void say_urls(const struct front *f, int n, char *out, size_t len, size_t *used)
{
    for (int i = 0; i < n && *used < len; i++)
        *used += (size_t)snprintf(out + *used, len - *used, "%shttp://localhost:%d/%s%s%s",
                                  i == 0       ? ""
                                  : i == n - 1 ? " and "
                                               : ", ",
                                  f[i].port, f[i].service[0] ? " (service " : "", f[i].service,
                                  f[i].service[0] ? ")" : "");
}

/* What the daemon of ping (NULL: none answers) means for the n of f,
 * into out at *used: none runs (and who starts it), or the fronts it
 * does not listen on, with the command that says the fix. */
static void say_daemon(json_t *ping, const struct front *f, int n, char *out, size_t len,
                       size_t *used)
{
    if (!ping) {
        *used += (size_t)snprintf(
            out + *used, len - *used, " No daemon runs now, so nothing answers there yet%s.",
            cli_daemon_start_allowed(0) ? "; the restart, claim and release tools start one"
                                        : "; the tools say how to start one");
        return;
    }
    int missing = 0;
    for (int i = 0; i < n && *used < len; i++)
        if (cli_listens_on(ping, f[i].port) == 0)
            *used +=
                (size_t)snprintf(out + *used, len - *used, "%s:%d",
                                 missing++ ? ", " : " The daemon does not listen on ", f[i].port);
    if (missing && *used < len)
        *used += (size_t)snprintf(out + *used, len - *used,
                                  ": requests there do not reach wtproxy; wtproxy doctor prints "
                                  "the fix.");
}

/* Who starts the worktree's servers, and where a failed test's reason
 * is, into out at *used: an agent that reads neither starts its own
 * server on a fixed port (which serves whichever worktree got it first),
 * and reads a test's "ERR_CONNECTION_REFUSED" or "element not found"
 * with no idea that wtproxy said why. */
static void say_next(const struct mcp *m, char *out, size_t len, size_t *used)
{
    struct front f[MAX_FRONTS];
    if (m->worktree[0] && declared(m->worktree, f, 0) > 0)
        *used += (size_t)snprintf(out + *used, len - *used,
                                  " Its .wtproxy declares its dev server: the daemon starts it "
                                  "at the first request from this worktree, so start none "
                                  "yourself.");
    if (*used < len)
        *used += (size_t)snprintf(out + *used, len - *used,
                                  " When a test meets a refused connection, an empty page or an "
                                  "error from wtproxy (header X-Wtproxy-Error), call servers, "
                                  "then logs: they say why, and the fix.");
}

void mcp_instructions(const struct mcp *m, char *out, size_t len)
{
    struct front f[MAX_FRONTS];
    json_t *ping = cli_ping(0);
    int n = fronts_of(m, m->worktree, ping, f);
    size_t used = (size_t)snprintf(out, len, "wtproxy routes ");
    say_urls(f, n, out, len, &used);
    if (used < len && m->worktree[0])
        used += (size_t)snprintf(
            out + used, len - used,
            " to the dev server of the worktree of the process that sends "
            "the request (its current folder, or WTPROXY_WORKTREE, decides). This session's "
            "worktree is %s.",
            m->worktree);
    else if (used < len)
        used += (size_t)snprintf(out + used, len - used,
                                 " to the dev server of the worktree of the process that sends "
                                 "the request. This session has no worktree: %s.",
                                 m->why_none);
    if (used < len)
        say_daemon(ping, f, n, out, len, &used);
    json_decref(ping);
    if (used < len)
        say_next(m, out, len, &used);
    if (used < len)
        snprintf(out + used, len - used,
                 " These tools act on this session's worktree: servers (what runs, its state "
                 "and its fronts), why (where a process's or a folder's requests go), refusals "
                 "(what wtproxy refused lately), logs (a server's last lines), restart (this "
                 "worktree's server), claim and release (leases of shared resources). Read-only "
                 "tools take \"worktree\" to look at another worktree.");
}
