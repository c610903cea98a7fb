/* front.c - which front port a command means when it is not given one,
 * read from one place: the worktree's .wtproxy as the daemon's own parser
 * reads it (wtfile_read), the worktree's own file, else its main
 * checkout's (the daemon places a repository's callers by that one too).
 * Every command follows one rule:
 *
 *   --front N         N.
 *   --service NAME    the front the file gives NAME.
 *   neither           the front of the file's one service. Services on
 *                     several fronts (a front end and its API) have no one
 *                     front: why (and the MCP why tool) explains each, in
 *                     file order; doctor checks the daemon on each and the
 *                     server of the first, and names the others with their
 *                     `wtproxy doctor --front N`; the MCP servers tool
 *                     lists each; init takes the one its Playwright
 *                     config's baseURL names, else the first; run takes
 *                     the one whose start its CMD is (front_pick.c), and
 *                     refuses any other (exit 2, before anything starts),
 *                     as register and unregister do, each service's
 *                     command printed: a guess would put a front end on
 *                     its API's front, to get the API's requests.
 *   a file that does not parse
 *                     gives no front: no number is guessed out of a file
 *                     the daemon refuses. Each command says the parser's
 *                     error (file, line, fix); doctor's server check is
 *                     a problem with it. Run, register and unregister
 *                     take the daemon's one port; a daemon on several
 *                     (likely the app's fronts) makes any one a guess:
 *                     refused as above, with each --front printed.
 *
 * When the file gives none: the one port the daemon listens on, else 8000.
 * A front the daemon does not listen on is warned about by run. Also
 * here: the facts that choice reads (the daemon's ping, its ports). */
#include "cli.h"
#include "front.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "wtfile.h"

int cli_main_checkout(const struct host_worktree *wt, char *out, size_t len)
{
    size_t n = strlen(wt->common);
    if (n < 5 || strcmp(wt->common + n - 5, "/.git") != 0 || n - 5 >= len)
        return -1;
    memcpy(out, wt->common, n - 5);
    out[n - 5] = '\0';
    return 0;
}

int cli_wtproxy_read(const char *dir, struct cli_wtproxy *w)
{
    struct host_worktree wt;
    char main_root[PATH_MAX];
    const char *root = host_worktree_of(dir, &wt, NULL, 0) == 0 ? wt.root : dir;
    memset(w, 0, sizeof *w);
    if (!(w->file = malloc(sizeof *w->file))) {
        snprintf(w->err, sizeof w->err, "out of memory reading %.900s/.wtproxy", root);
        return -1;
    }
    int r = wtfile_read(root, w->file, w->err, sizeof w->err);
    w->from = r == 1 ? 0 : 1;
    if (r == 1 && root == wt.root && cli_main_checkout(&wt, main_root, sizeof main_root) == 0 &&
        (r = wtfile_read(main_root, w->file, w->err, sizeof w->err)) != 1)
        w->from = 2;
    if (r != 0) {
        free(w->file);
        w->file = NULL;
    }
    if (r >= 0)
        w->err[0] = '\0';
    return r < 0 ? -1 : 0;
}

void cli_wtproxy_free(struct cli_wtproxy *w)
{
    free(w->file);
    w->file = NULL;
}

int cli_wtproxy_service_front(const struct cli_wtproxy *w, const char *service)
{
    if (!w->file)
        return 0;
    if (!service) /* the parser refuses two services on one front */
        return w->file->n == 1 ? w->file->svc[0].front : w->file->n > 1 ? -1 : 0;
    const struct wtfile_service *s = wtfile_by_name(w->file, service);
    return s ? s->front : 0;
}

int cli_wtproxy_fronts(const struct cli_wtproxy *w, json_t *ping, int *fronts)
{
    int n = 0;
    fronts[0] = 0;
    for (int i = 0; w->file && i < w->file->n; i++)
        fronts[n++] = w->file->svc[i].front;
    if (!n && ping)
        fronts[0] = cli_daemon_port(ping);
    if (!n && !fronts[0])
        fronts[0] = WTP_DEFAULT_FRONT_PORT;
    return n ? n : 1;
}

void cli_wtproxy_list(const struct cli_wtproxy *w, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; w->file && i < w->file->n && used < len; i++) {
        const struct wtfile_service *s = &w->file->svc[i];
        used += (size_t)snprintf(out + used, len - used, "%s:%d%s%s%s", i ? ", " : "", s->front,
                                 s->name[0] ? " (" : "", s->name, s->name[0] ? ")" : "");
    }
}

int cli_daemon_port(json_t *ping)
{
    size_t i;
    json_t *a;
    int port = 0;
    json_array_foreach(json_object_get(ping, "listen"), i, a) {
        const char *s = json_string_value(a), *colon = s ? strrchr(s, ':') : NULL;
        int p = colon ? atoi(colon + 1) : 0;
        if (!p || (port && p != port))
            return 0;
        port = p;
    }
    return port;
}

json_t *cli_ping(int start_daemon)
{
    char err[256];
    json_t *req = json_pack("{s:s}", "op", "ping"), *ping = NULL;
    if (!req || cli_call(req, start_daemon, &ping, err, sizeof err) != 0)
        ping = NULL;
    json_decref(req);
    return ping;
}

/* A .wtproxy the daemon refuses gives a server of run/register/unregister
 * no front: warned, with the front it gets instead. */
static void warn_refused_file(const struct cli_wtproxy *w, int got)
{
    fprintf(stderr,
            "wtproxy: warning: the daemon refuses the .wtproxy, so it gives this server no "
            "front: it registers on front %d; correct the file (wtproxy doctor checks it): %s\n",
            got, w->err);
}

int cli_server_front(const char *dir, const char *service, struct cli_server_cmd *c,
                     int start_daemon)
{
    struct cli_wtproxy w;
    cli_wtproxy_read(dir, &w);
    int front = cli_wtproxy_service_front(&w, service);
    c->service[0] = '\0';
    if (front < 0) /* several fronts: which one is this server? */
        front = cli_wtproxy_pick(&w, c);
    if (front != 0) {
        cli_wtproxy_free(&w);
        return front;
    }
    json_t *ping = cli_ping(start_daemon);
    int got = cli_daemon_port(ping);
    if (w.err[0] && !got && json_array_size(json_object_get(ping, "listen")) > 1) {
        cli_wtproxy_refuse_unparsed(&w, c, json_object_get(ping, "listen"));
        got = -1; /* the daemon's fronts are the app's: 8000 is a guess among them */
    } else if (w.err[0]) {
        warn_refused_file(&w, got ? got : WTP_DEFAULT_FRONT_PORT);
    }
    json_decref(ping);
    cli_wtproxy_free(&w);
    return got ? got : WTP_DEFAULT_FRONT_PORT;
}

int cli_listens_on(json_t *ping, int front)
{
    char suffix[16];
    size_t i, n = (size_t)snprintf(suffix, sizeof suffix, ":%d", front);
    json_t *a, *all = json_object_get(ping, "listen");
    if (!json_array_size(all))
        return -1;
    json_array_foreach(all, i, a) {
        const char *s = json_string_value(a);
        if (s && strlen(s) > n && strcmp(s + strlen(s) - n, suffix) == 0)
            return 1;
    }
    return 0;
}
