/* front.c - which front port a command means when it is not given one:
 * the port the worktree's .wtproxy declares (its own, else its main
 * checkout's), else the one port the daemon listens on, else 8000; and the
 * facts that choice reads (the daemon's ping, its listen ports). run,
 * register, unregister, why, doctor and the MCP tools pick it the same
 * way, so that none judges a port the daemon does not serve. */
#include "cli.h"

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

int cli_declared_front(const struct host_worktree *wt, int *own, int *main_has)
{
    char main_root[PATH_MAX];
    int front = cli_wtproxy_front(wt->root, own);
    if (cli_main_checkout(wt, main_root, sizeof main_root) == 0) {
        int main_front = cli_wtproxy_front(main_root, main_has);
        if (!front)
            front = main_front;
    }
    return front;
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

int cli_default_front(json_t *ping)
{
    return cli_default_front_in(".", ping);
}

int cli_default_front_in(const char *dir, json_t *ping)
{
    struct host_worktree wt;
    char err[PATH_MAX + 256];
    int own = 0, main_has = 0, front = 0;
    if (host_worktree_of(dir, &wt, err, sizeof err) == 0)
        front = cli_declared_front(&wt, &own, &main_has);
    if (!front && ping)
        front = cli_daemon_port(ping);
    return front ? front : WTP_DEFAULT_FRONT_PORT;
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

int cli_wtproxy_file_of(const char *dir, struct wtfile *file)
{
    struct host_worktree w;
    char err[1024], main_root[PATH_MAX];
    int r = wtfile_read(dir, file, err, sizeof err);
    if (r == 1 && host_worktree_of(dir, &w, NULL, 0) == 0 &&
        cli_main_checkout(&w, main_root, sizeof main_root) == 0)
        r = wtfile_read(main_root, file, err, sizeof err);
    return r;
}

/* The front dir's .wtproxy gives a server: service's, or without one the
 * front all its services share; 0 when there is no such file or service,
 * or its services are on several fronts (which one is not ours to guess). */
static int file_front(const char *dir, const char *service)
{
    struct wtfile *file = malloc(sizeof *file);
    int front = 0;
    if (file && cli_wtproxy_file_of(dir, file) == 0)
        for (int i = 0; i < file->n; i++) {
            const struct wtfile_service *s = &file->svc[i];
            if (service ? strcmp(s->name, service) == 0 : front && front != s->front) {
                front = service ? s->front : 0;
                break;
            }
            if (!service)
                front = s->front;
        }
    free(file);
    return front;
}

int cli_daemon_front(const char *dir, const char *service, int start_daemon)
{
    int front = file_front(dir, service);
    if (front)
        return front;
    json_t *ping = cli_ping(start_daemon);
    front = cli_daemon_port(ping);
    json_decref(ping);
    return front ? front : WTP_DEFAULT_FRONT_PORT;
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
