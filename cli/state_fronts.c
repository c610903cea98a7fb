/* state_fronts.c - the fronts of the registrations a daemon started now
 * adopts: the state file's entries whose server still runs. A daemon
 * that died left them there; the next one routes to them on their fronts
 * only if it listens there. A start printed from a folder outside any
 * worktree listened on 8000 alone: the three servers it adopted all said
 * front 8430, and 8430 answered nothing. Read here, not asked of the
 * daemon: none answers when this is needed. */
#include "cli.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "host.h"
#include "registry.h"

/* The state file a daemon started from this shell reads: WTPROXY_CONFIG's
 * state_file, else the per-user one (proxy/server.c's open_registry).
 * Returns 0, or -1 when there is none to read. */
static int state_path(char *out, size_t outlen)
{
    const char *config = getenv("WTPROXY_CONFIG");
    char err[PATH_MAX + 256], dir[PATH_MAX];
    if (config && *config) {
        static struct proxy_config c; /* large; the CLI is one thread here */
        proxy_config_defaults(&c);
        if (proxy_config_load_file(&c, config, err, sizeof err) < 0)
            return -1; /* the daemon's own start says what is wrong with it */
        if (c.state_file[0])
            return snprintf(out, outlen, "%s", c.state_file) < (int)outlen ? 0 : -1;
    }
    if (reg_state_dir(dir, sizeof dir, err, sizeof err) < 0)
        return -1;
    return snprintf(out, outlen, "%s/registry.json", dir) < (int)outlen ? 0 : -1;
}

/* Whether entry o's server still runs: its pid with the start time it was
 * registered with (a pid reused since is another program). No pid (a
 * `register` without one): taken as running, as the daemon does. */
static int entry_alive(json_t *o)
{
    json_int_t pid = json_integer_value(json_object_get(o, "pid"));
    json_int_t start = json_integer_value(json_object_get(o, "pid_start"));
    if (pid <= 0)
        return 1;
    unsigned long long now = host_pid_start((pid_t)pid);
    return now != 0 && (start == 0 || (json_int_t)now == start);
}

json_t *cli_state_daemon(void)
{
    char path[PATH_MAX];
    return state_path(path, sizeof path) == 0 ? reg_store_daemon(path) : NULL;
}

int cli_state_fronts(int *ports, int n, int max)
{
    char path[PATH_MAX];
    json_error_t jerr;
    json_t *doc = state_path(path, sizeof path) == 0 ? json_load_file(path, 0, &jerr) : NULL;
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(doc, "entries"), i, o) {
        json_int_t front = json_integer_value(json_object_get(o, "front"));
        int seen = 0;
        for (int k = 0; k < n; k++)
            seen |= ports[k] == front;
        if (front > 0 && front <= 65535 && !seen && n < max && entry_alive(o))
            ports[n++] = (int)front;
    }
    json_decref(doc);
    return n;
}
