/* run_port.c - a server that listens, but not on the port its wrapper gave
 * it: its command ignores {port} and $PORT (`start = npm run dev` for a
 * Vite app listens on 5173, `flask run` on 5000). Nothing else says so:
 * the wrapper waits for its port, and the daemon held each request for
 * start_timeout (60 s), then answered a 503 saying only that the server
 * did not listen, which sent the reader to its logs.
 *
 * While CMD is not ready, every LOOK_MS, the wrapper looks at the TCP
 * listeners of the machine and keeps those its own process tree holds
 * (cli_tree_descendants, through /proc/PID/task/TID/children: the tree's few fd tables
 * are read, never every process's). One on another port for SURE_MS, with
 * nothing on its own, is told to the daemon as a failed start ("when":
 * "port", the `start-failed` op) with that port, so that its requests get a
 * 503 with the fix at once. SURE_MS spares a server that opens another
 * port first (a debugger's, an HMR socket) and its own a moment later;
 * one that listens on its own port after all is marked ready, which
 * clears the failure. One that went elsewhere because another program
 * took its port first is started again on another (run_taken.c). The
 * wrapper is a command line, not the daemon's loop: a few /proc reads a
 * second are its to make. */
#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "host.h"

#define LOOK_MS 1000      /* how often a server that is not ready is looked at */
#define SURE_MS 3000      /* listening elsewhere this long, and not on its port: told */
#define MAX_LISTENERS 512 /* listening sockets on the machine, read at a look */

/* A port other than own that a process of the wrapper's tree listens on
 * (its pid in *holder), 0 when none. */
static int listening_elsewhere(pid_t self, int own, pid_t *holder)
{
    static struct host_listener l[MAX_LISTENERS];
    unsigned long inodes[MAX_LISTENERS];
    int ports[MAX_LISTENERS];
    pid_t tree[CLI_TREE_MAX], pids[MAX_LISTENERS] = {0};
    int fds[MAX_LISTENERS];
    size_t nl = host_tcp_listeners(l, MAX_LISTENERS), n = 0, nt;
    for (size_t i = 0; i < nl; i++)
        if (l[i].port != own) {
            inodes[n] = l[i].inode;
            ports[n++] = l[i].port;
        }
    if (n == 0 || (nt = cli_tree_descendants(self, tree, CLI_TREE_MAX)) == 0)
        return 0;
    struct host_scope scope = {.only = tree, .nonly = nt};
    if (host_socket_holders(inodes, n, getuid(), &scope, pids, fds) == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (pids[i] > 0) {
            *holder = pids[i];
            return ports[i];
        }
    return 0;
}

void cli_run_port_restart(struct cli_run_port *p)
{
    *p = (struct cli_run_port){0};
}

/* Say it where the user reads, and tell the daemon, with the server's
 * last lines after ours. */
static void tell(struct cli_run *r, int other, pid_t holder)
{
    char line[PATH_MAX + 1024], cmd[512];
    host_pid_cmdline(holder, cmd, sizeof cmd);
    snprintf(line, sizeof line,
             "wtproxy: %s's server listens on port %d (pid %d: %s), not on %d, the port wtproxy "
             "gave it: its command ignores {port} and $PORT; put {port} where it takes its port "
             "(wtproxy help wtproxy-file), then start it again",
             cli_run_folder(r->worktree), other, (int)holder, cmd, r->port);
    cli_run_tell_said(r, line, "", REG_FAILED_PORT);
}

int cli_run_port_poll(struct cli_run *r)
{
    struct cli_run_port *p = &r->wrong_port;
    long long now = host_mono_ms();
    if (p->told || now < p->next_ms)
        return 0;
    p->next_ms = now + LOOK_MS;
    pid_t holder = 0;
    int other = listening_elsewhere(getpid(), r->port, &holder);
    if (!other) {
        p->since_ms = 0;
        return 0;
    }
    if (!p->since_ms)
        p->since_ms = now;
    if (now - p->since_ms < SURE_MS)
        return 0;
    /* its own port held: by its tree (answering --health), or by another
     * program that took it before CMD could (Vite then moves on) */
    if (cli_port_listened(r->port))
        return cli_run_taken(r, 0) ? 2 : 0;
    p->told = 1;
    tell(r, other, holder);
    return 1;
}
