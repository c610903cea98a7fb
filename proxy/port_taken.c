/* port_taken.c - see port_taken.h. The facts come from host/; the words
 * (and the `wtproxy serve` hint) are the daemon's. */
#include "port_taken.h"

#include <stdio.h>

#include "host.h"
#include "port_stranger.h"

/* What the app's tests must change when the daemon serves another port:
 * the port they name is the one taken. */
#define TESTS_FOLLOW "point your app's tests at it (their baseURL or port setting)"

/* " 16190 16192 16193" into buf: o's holders, or its pid alone. */
static void holder_pids(const struct host_port_owner *o, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < (o->nholders ? o->nholders : 1) && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, " %ld",
                                 (long)(o->nholders ? o->holders[i] : o->pid));
}

void proxy_port_kill(const struct host_port_owner *o, int wait, char *buf, size_t len)
{
    char pids[HOST_PORT_HOLDERS_MAX * 12];
    holder_pids(o, pids, sizeof pids);
    if (!wait)
        snprintf(buf, len, "kill%s", pids);
    else if (o->nholders > 1)
        snprintf(buf, len, "kill%s && for p in%s; do tail --pid=$p -f /dev/null; done", pids, pids);
    else
        snprintf(buf, len, "kill %ld && tail --pid=%ld -f /dev/null", (long)o->pid, (long)o->pid);
}

/* How far proxy_port_other looks: a free port is rarely more than a few
 * away on a dev machine. */
#define OTHER_PORT_TRIES 100

int proxy_port_other(int port, const int *serving, int n)
{
    int step = port < 65535 ? 1 : -1;
    struct host_port_owner o;
    for (int p = port + step, tries = 0; p > 0 && p <= 65535 && tries < OTHER_PORT_TRIES;
         p += step, tries++) {
        int used = 0;
        for (int i = 0; i < n && !used; i++)
            used = serving[i] == p;
        if (!used && !host_port_owner_find(p, &o))
            return p;
    }
    return port + step; /* all held: the next one, as before */
}

void proxy_port_taken(const char *addr, int port, const int *serving, int n, char *buf, size_t len)
{
    struct host_port_owner o;
    struct proxy_port_stranger s;
    char on[96] = "", who[160], serve[64], fix[512];
    int other = proxy_port_other(port, serving, n), found = host_port_owner_find(port, &o);

    if (addr && addr[0])
        snprintf(on, sizeof on, " on %s", addr);
    /* cmdline and cwd are cut short so that the hints after them fit in a
     * 1 KiB message, however long the holder's arguments. */
    if (found && o.pid > 0) {
        char kill[HOST_PORT_HOLDERS_MAX * 12 + 8], more[96] = "";
        proxy_port_kill(&o, 0, kill, sizeof kill);
        if (o.nholders > 1) /* its forked workers: they hold the port after it dies */
            snprintf(more, sizeof more, ", and by %d more process%s sharing its socket",
                     o.nholders - 1, o.nholders > 2 ? "es" : "");
        snprintf(buf, len,
                 "port %d%s is already in use by pid %ld%s%.200s%s%s%.400s%s; "
                 "stop %s with `%s`, or serve another port: wtproxy serve --listen %d",
                 port, on, (long)o.pid, o.cmdline[0] ? " (" : "", o.cmdline,
                 o.cmdline[0] ? ")" : "", o.cwd[0] ? ", cwd " : "", o.cwd, more,
                 o.nholders > 1 ? "them all" : "it", kill, other);
    } else if (found && proxy_port_stranger(addr, port, &o, &s)) {
        proxy_port_stranger_who(&s, who, sizeof who);
        snprintf(serve, sizeof serve, "wtproxy serve --listen %d", other);
        proxy_port_stranger_fix(&s, port, serve, TESTS_FOLLOW, fix, sizeof fix);
        snprintf(buf, len, "port %d%s is already in use by %s%s; %s", port, on, who,
                 s.daemon_pid ? ", which serves that user's worktrees only" : "", fix);
    } else {
        snprintf(buf, len,
                 "port %d%s is already in use by a process this user cannot see; find it with "
                 "`ss -ltnp 'sport = :%d'` (as root to see every process), or serve another "
                 "port: wtproxy serve --listen %d",
                 port, on, port, other);
    }
}
