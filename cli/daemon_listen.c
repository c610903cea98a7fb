/* daemon_listen.c - where a daemon the CLI starts listens: on each front
 * the .wtproxy of the worktree it is started for declares (its own, else
 * its main checkout's), so that the port that worktree's tests call is
 * the daemon's at once. It listened on 8000 whatever the file said: after
 * a daemon died, an agent whose tests call :8420 restarted its server with
 * the MCP tool, read "restarted and ready, verified", and its tests still
 * met a refused connection. The daemon's own default (8000) and
 * WTPROXY_CONFIG's listen lines decide when no front is declared, and
 * whenever WTPROXY_CONFIG names a config with listen lines: its author
 * chose the ports. One without (a config for the registry) left `ls`'s
 * start on 8000 alone, while doctor's served the worktree's fronts.
 * The fronts of the registrations the started daemon adopts are added
 * (state_fronts.c), so that a start from outside any worktree serves the
 * servers it routes to; the default port then only when nothing names
 * another. */
#include "cli.h"
#include "front.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "registry.h"
#include "wtfile.h"

/* The folder whose worktree a started daemon is for: the current one,
 * else the MCP session's worktree (--worktree). */
static char listen_dir[PATH_MAX] = ".";

/* A front the starting command was given (--front), 0 none. */
static int given_front;

void cli_daemon_listen_for(const char *dir)
{
    snprintf(listen_dir, sizeof listen_dir, "%s", dir);
}

void cli_daemon_listen_also(int front)
{
    given_front = front;
}

/* Add port to ports[0, n) unless there. Returns the new count. */
static int add_port(int *ports, int n, int port)
{
    for (int j = 0; j < n; j++)
        if (ports[j] == port)
            return n;
    ports[n] = port;
    return n + 1;
}

/* Whether the config file at path has a `listen` line (unreadable: as if
 * it had, the daemon's own error then says why). */
static int config_listens(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    int found = !f;
    while (!found && fgets(line, sizeof line, f)) {
        const char *p = line + strspn(line, " \t");
        found = strncmp(p, "listen", 6) == 0 && p[6 + strspn(p + 6, " \t")] == '=';
    }
    if (f)
        fclose(f);
    return found;
}

int cli_daemon_listen(int *ports)
{
    const char *config = getenv("WTPROXY_CONFIG");
    if (config && *config && config_listens(config))
        return 0;
    struct cli_wtproxy w = {0};
    int n = 0;
    cli_wtproxy_read(listen_dir, &w); /* one that does not parse declares nothing */
    for (int i = 0; w.file && i < w.file->n; i++)
        n = add_port(ports, n, w.file->svc[i].front);
    cli_wtproxy_free(&w);
    if (given_front)
        n = add_port(ports, n, given_front);
    return cli_state_fronts(ports, n, WTP_MAX_LISTEN);
}

void cli_daemon_listen_flags(char *out, size_t len)
{
    int ports[WTFILE_MAX_SERVICES + 1];
    int n = cli_daemon_listen(ports);
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, " --listen %d", ports[i]);
}

static int has_port(const int *ports, int n, int port)
{
    for (int i = 0; i < n; i++)
        if (ports[i] == port)
            return 1;
    return 0;
}

/* Whether the running daemon's port p (from its ping) is its default
 * alone, no one's front: the daemon was started with no port named (by a
 * start from outside any worktree), while want, the ports asked and the
 * adopted servers' fronts, names others and no config chose the ports.
 * Kept, it made doctor's fix `serve --listen 8000 --listen 8430`: a port
 * that no registration's callers call, which another daemon may need. */
static int default_unwanted(int p, const int *want, int nw)
{
    const char *config = getenv("WTPROXY_CONFIG");
    return p == WTP_DEFAULT_FRONT_PORT && nw > 0 && !has_port(want, nw, p) &&
           !(config && *config && config_listens(config));
}

void cli_serve_cmd(json_t *ping, const int *ports, int n, char *out, size_t outlen)
{
    int want[WTFILE_MAX_SERVICES + 1 + WTP_MAX_LISTEN], nw = 0;
    for (int k = 0; k < n && k <= WTFILE_MAX_SERVICES; k++)
        nw = add_port(want, nw, ports[k]);
    nw = cli_state_fronts(want, nw, (int)(sizeof want / sizeof want[0]));
    int all[48 + WTFILE_MAX_SERVICES + 1 + WTP_MAX_LISTEN], m = 0;
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(ping, "listen"), i, a) {
        const char *s = json_string_value(a), *colon = s ? strrchr(s, ':') : NULL;
        int p = colon ? atoi(colon + 1) : 0;
        if (p > 0 && m < 48 && !has_port(all, m, p) && !default_unwanted(p, want, nw))
            all[m++] = p;
    }
    for (int k = 0; k < nw; k++)
        if (!has_port(all, m, want[k]))
            all[m++] = want[k];
    char dir[PATH_MAX], why[PATH_MAX + 256], log[PATH_MAX + 16] = "/dev/null";
    if (reg_state_dir(dir, sizeof dir, why, sizeof why) == 0)
        snprintf(log, sizeof log, "%s/daemon.log", dir);
    char prog[PATH_MAX];
    host_self_program(prog, sizeof prog, NULL, 0);
    /* Named, not inherited: a daemon started without WTPROXY_CONFIG runs
     * on another store than this shell's commands (doctor's daemon check). */
    const char *config = getenv("WTPROXY_CONFIG");
    char flags[2048];
    cli_daemon_flags(ping, config && config[0] ? CLI_DROP_CONFIG : 0, flags, sizeof flags);
    size_t used = (size_t)snprintf(out, outlen, "setsid -f %s serve%s%s%s", prog,
                                   config && config[0] ? " --config " : "",
                                   config && config[0] ? config : "", flags);
    for (int k = 0; k < m && used < outlen && !(m == 1 && all[0] == WTP_DEFAULT_FRONT_PORT); k++)
        used += (size_t)snprintf(out + used, outlen - used, " --listen %d", all[k]);
    if (used + strlen(log) + 12 > outlen) /* a cut path would be another file */
        snprintf(log, sizeof log, "/dev/null");
    if (used < outlen)
        snprintf(out + used, outlen - used, " >>%s 2>&1", log);
}
