/* tree_stop.c - the `wtproxy run` wrapper's process tree: CMD and
 * everything it started, stopped whole for a restart, a stop, or a
 * removed worktree.
 *
 * The wrapper is the tree's subreaper (cli_tree_adopt): a process whose
 * parent exits is reparented to the wrapper, not to init. Vite under
 * `sh -c` is one when the shell dies first; a helper a script put in the
 * background is one from the start. Before, such an orphan was no
 * descendant of CMD: a stop missed it (it ran on, holding its port), or,
 * dead, it was init's zombie to reap. An init that reaps late (the one on
 * this project's CI machines did not within seconds) left a pid that
 * kill(pid, 0) still finds, and Vite 8's project lock then refused the
 * restarted Vite ("Found another Vite dev process"). Now the tree is every
 * descendant of the wrapper (cli_tree_descendants says which of its own
 * children are not the server's), looked at again at each poll (a process
 * forked while the stop runs is signalled too), and the wrapper reaps
 * every one of them before it starts CMD again. Signals go by pid and
 * start time, so a pid reused meanwhile is never hit. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "registry.h"

struct proc_id {
    pid_t pid;
    unsigned long long start;
};

void cli_tree_adopt(void)
{
    prctl(PR_SET_CHILD_SUBREAPER, 1);
}

/* Append to tree (which holds *n of max) the children of every thread of
 * pid (/proc/PID/task/TID/children, a kernel list of pids); when
 * own_session, only those in the caller's session. Session 0 is a session
 * like any other: in a container (a pid namespace whose session leader is
 * outside it) every process's is 0, and when 0 meant "any session" there,
 * a wrapper stopped the daemon it had autostarted (in a session of its
 * own) along with its server. */
static void add_children(pid_t pid, int own_session, pid_t *tree, size_t *n, size_t max)
{
    pid_t sid = getsid(0);
    char path[96];
    snprintf(path, sizeof path, "%s/%d/task", host_proc_dir, (int)pid);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && *n < max && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char file[sizeof path + 280];
        snprintf(file, sizeof file, "%s/%s/children", path, e->d_name);
        FILE *f = fopen(file, "r");
        int child;
        while (f && *n < max && fscanf(f, "%d", &child) == 1)
            if (!own_session || getsid((pid_t)child) == sid)
                tree[(*n)++] = (pid_t)child;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
}

/* Of the wrapper's own children, those in another session are daemons,
 * not the server's to stop or to be told apart by: the wtproxy daemon the
 * wrapper autostarted (listening on the fronts), a PostgreSQL that
 * `pg_ctl start` in a start line left behind (adopted once its parent
 * exited). Below CMD every descendant counts, as it always did, a
 * detached child of a running dev server included. */
size_t cli_tree_descendants(pid_t self, pid_t *tree, size_t max)
{
    size_t n = 0;
    add_children(self, 1, tree, &n, max);
    for (size_t i = 0; i < n; i++)
        add_children(tree[i], 0, tree, &n, max);
    return n;
}

pid_t cli_tree_reap(pid_t cmd, int *status)
{
    pid_t w, got = 0;
    int st;
    while ((w = waitpid(-1, &st, WNOHANG)) != 0) {
        if (w < 0)
            return got || errno == EINTR ? got : -1;
        if (w == cmd) {
            *status = st;
            got = cmd;
        }
    }
    return got;
}

static int was_told(const struct proc_id *told, size_t n, struct proc_id p)
{
    for (size_t i = 0; i < n; i++)
        if (told[i].pid == p.pid && told[i].start == p.start)
            return 1;
    return 0;
}

/* Send sig to each running descendant of the wrapper not told already
 * (all of them again when *ntold is 0). Returns how many run. */
static size_t signal_new(struct proc_id *told, size_t *ntold, int sig)
{
    pid_t tree[CLI_TREE_MAX];
    size_t n = cli_tree_descendants(getpid(), tree, CLI_TREE_MAX), running = 0;
    for (size_t i = 0; i < n; i++) {
        struct proc_id p = {tree[i], host_pid_start(tree[i])};
        if (!p.start)
            continue; /* a zombie: dead, reaped below */
        running++;
        if (!was_told(told, *ntold, p) && *ntold < CLI_TREE_MAX) {
            told[(*ntold)++] = p;
            kill(p.pid, sig);
        }
    }
    return running;
}

int cli_stop_tree(pid_t root, unsigned grace_ms, int *wstatus)
{
    struct proc_id *told = calloc(CLI_TREE_MAX, sizeof *told);
    if (!told)
        return -1;
    struct timespec tick = {0, WTP_CLIENT_POLL_MS * 1000000L};
    size_t ntold = 0;
    int status = 0, reaped = 0, sig = SIGTERM;
    for (unsigned waited = 0;; waited += WTP_CLIENT_POLL_MS) {
        if (waited >= grace_ms && sig == SIGTERM) { /* asked nicely; now for good */
            sig = SIGKILL;
            ntold = 0;
        }
        size_t running = signal_new(told, &ntold, sig);
        if (cli_tree_reap(root, &status) == root)
            reaped = 1;
        if (running == 0)
            break;
        nanosleep(&tick, NULL);
    }
    /* Every one is dead now, and every zombie among them the wrapper's. */
    if (cli_tree_reap(root, &status) == root)
        reaped = 1;
    if (wstatus)
        *wstatus = reaped ? status : 0;
    free(told);
    return 0;
}

/* The tree a dead wrapper left: the wrapper is gone, so nothing adopts
 * what a process of the tree leaves behind when it dies, and nothing here
 * reaps. Every process once seen in it (by pid and start time) is looked
 * below again at each poll, so that a child whose parent died first (now
 * init's) is still stopped. */
struct orphaned {
    struct proc_id seen[CLI_TREE_MAX];
    int sent[CLI_TREE_MAX]; /* the signal it was sent last, 0 none */
    size_t n;
};

static void see(struct orphaned *o, pid_t pid)
{
    struct proc_id p = {pid, host_pid_start(pid)};
    if (p.start && o->n < CLI_TREE_MAX && !was_told(o->seen, o->n, p)) {
        o->sent[o->n] = 0;
        o->seen[o->n++] = p;
    }
}

static int runs(struct proc_id p)
{
    return host_pid_start(p.pid) == p.start;
}

/* Add what runs below each process seen that still runs (a pid reused
 * meanwhile is another's: not looked below); signal each one running
 * that sig was not sent to. Returns how many run. */
static size_t signal_orphaned(struct orphaned *o, int sig)
{
    pid_t tree[CLI_TREE_MAX];
    size_t n = 0, running = 0;
    for (size_t i = 0; i < o->n; i++)
        if (runs(o->seen[i]))
            add_children(o->seen[i].pid, 0, tree, &n, CLI_TREE_MAX);
    for (size_t i = 0; i < n; i++)
        add_children(tree[i], 0, tree, &n, CLI_TREE_MAX);
    for (size_t i = 0; i < n; i++)
        see(o, tree[i]);
    for (size_t i = 0; i < o->n; i++) {
        if (!runs(o->seen[i]))
            continue; /* dead, a zombie, or its pid reused */
        running++;
        if (o->sent[i] != sig && kill(o->seen[i].pid, sig) == 0)
            o->sent[i] = sig;
    }
    return running;
}

int cli_stop_orphaned_tree(pid_t root, unsigned long long start, unsigned grace_ms)
{
    struct orphaned *o = calloc(1, sizeof *o);
    if (!o)
        return -1;
    struct timespec tick = {0, WTP_CLIENT_POLL_MS * 1000000L};
    o->seen[0] = (struct proc_id){root, start};
    o->n = 1;
    for (unsigned waited = 0; waited < grace_ms + WTP_RESTART_STOP_MS;
         waited += WTP_CLIENT_POLL_MS) {
        if (signal_orphaned(o, waited < grace_ms ? SIGTERM : SIGKILL) == 0)
            break;
        nanosleep(&tick, NULL);
    }
    free(o);
    return 0;
}
