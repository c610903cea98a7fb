/* tree_stop.c - stop a server and everything it started, for `wtproxy run
 * --restart-on-stale`. Django's autoreloader serves from a child of the
 * process we started: stopping only our child would leave that one
 * holding the port, so every descendant is signalled, by pid and start
 * time (a pid reused meanwhile is never hit). */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include "registry.h"
#include "host.h"

#define MAX_TREE 256 /* descendants of one dev server */
#define MAX_ANCESTRY 64

struct proc_id {
    pid_t pid;
    unsigned long long start;
};

static int descends_from(pid_t p, pid_t root)
{
    for (int hops = 0; p > 1 && hops < MAX_ANCESTRY; hops++)
        if ((p = host_pid_parent(p)) == root)
            return 1;
    return 0;
}

/* root and its descendants, now. */
static size_t tree_of(pid_t root, struct proc_id *out, size_t max)
{
    size_t n = 0;
    out[n++] = (struct proc_id){root, host_pid_start(root)};
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && n < max && (e = readdir(d))) {
        pid_t p = (pid_t)host_proc_pid(e->d_name);
        if (p > 0 && p != root && descends_from(p, root))
            out[n++] = (struct proc_id){p, host_pid_start(p)};
    }
    if (d)
        closedir(d);
    return n;
}

/* Signal those of tree still running; returns how many. */
static size_t signal_tree(const struct proc_id *tree, size_t n, int sig)
{
    size_t alive = 0;
    for (size_t i = 0; i < n; i++) {
        if (tree[i].start && host_pid_start(tree[i].pid) == tree[i].start) {
            alive++;
            if (sig)
                kill(tree[i].pid, sig);
        }
    }
    return alive;
}

int cli_stop_tree(pid_t root, unsigned grace_ms, int *wstatus)
{
    struct proc_id *tree = calloc(MAX_TREE, sizeof *tree);
    if (!tree)
        return -1;
    size_t n = tree_of(root, tree, MAX_TREE);
    struct timespec tick = {0, WTP_CLIENT_POLL_MS * 1000000L};
    int status = 0, reaped = 0;
    signal_tree(tree, n, SIGTERM);
    for (unsigned waited = 0;; waited += WTP_CLIENT_POLL_MS) {
        if (!reaped && waitpid(root, &status, WNOHANG) == root) {
            reaped = 1;
            tree[0].start = 0; /* reaped: its pid may be anyone's now */
        }
        if (signal_tree(tree, n, 0) == 0)
            break;
        if (waited >= grace_ms) { /* asked nicely; now for good */
            signal_tree(tree, n, SIGKILL);
            grace_ms = ~0u;
        }
        nanosleep(&tick, NULL);
    }
    if (!reaped && waitpid(root, &status, 0) != root)
        status = 0;
    if (wstatus)
        *wstatus = status;
    free(tree);
    return 0;
}
