/* run_keeper.c - stops CMD's tree when its `wtproxy run` wrapper dies
 * without doing it.
 *
 * Why: the wrapper stops its tree whole on every way out it sees
 * (tree_stop.c); a SIGKILL of the wrapper alone (an agent's `kill -9` of
 * the pid `wtproxy ls` shows) is the one it cannot see. PR_SET_PDEATHSIG
 * then reached CMD alone: `/bin/sh -c START`, how a .wtproxy server runs,
 * or Django's autoreloader, died, and the server below it ran on under
 * init, holding its port and its database connections, listed nowhere.
 *
 * The keeper is a child of the wrapper in a session of its own (not in the
 * tree the wrapper stops, not hit by a kill of the wrapper's process
 * group, which takes CMD's tree down by itself), blocked on a pipe whose
 * writing end only the wrapper holds (close-on-exec: CMD never gets it).
 * Each CMD started is told to it, pid and start time; at EOF, the
 * wrapper is gone, and a CMD that still runs was not stopped: the keeper
 * stops its tree, then exits. Forked before the wrapper starts a thread,
 * it never runs what a child of a threaded process must not. */
#include "run.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "host.h"

struct keeper_msg {
    pid_t pid;
    unsigned long long start;
};

/* What is left of the wrapper's open files is not the keeper's: a
 * terminal or a pipe held open would keep whoever reads it waiting.
 * stderr stays, for the one line it may say. */
static void keep_only(int in)
{
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
    }
    for (int fd = 3; fd < 1024; fd++)
        if (fd != in)
            close(fd);
}

/* Named for what it is in ps and top: a second `wtproxy run --front ...`
 * line per server reads as a duplicate, one to kill. The command line is
 * the memory the kernel reads /proc/self/cmdline from, from argv[0] on:
 * rewritten in place, the rest zeroed. */
static void rename_self(pid_t wrapper, const char *worktree)
{
    char name[PATH_MAX + 96], buf[8192];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t len = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
    if (fd >= 0)
        close(fd);
    snprintf(name, sizeof name, "wtproxy-keeper of wtproxy run %d (%s)", (int)wrapper, worktree);
    prctl(PR_SET_NAME, "wtproxy-keeper");
    if (len <= 1)
        return;
    memset(program_invocation_name, 0, (size_t)len);
    snprintf(program_invocation_name, (size_t)len, "%s", name);
}

/* The keeper's life: the last CMD told, until EOF. Never returns. */
static void keep(int in, pid_t wrapper, const char *worktree)
{
    struct keeper_msg m, last = {0, 0};
    ssize_t got;
    setsid();
    signal(SIGPIPE, SIG_IGN);
    keep_only(in);
    rename_self(wrapper, worktree);
    while ((got = read(in, &m, sizeof m)) != 0) {
        if (got == (ssize_t)sizeof m)
            last = m;
        else if (got < 0 && errno != EINTR)
            break;
    }
    if (last.pid > 0 && host_pid_start(last.pid) == last.start) {
        fprintf(stderr,
                "wtproxy: the wrapper of %s's server (pid %d) ended without stopping it (killed?): "
                "stopping its server (pid %d) and what it started\n",
                worktree, (int)wrapper, (int)last.pid);
        cli_stop_orphaned_tree(last.pid, last.start, WTP_RESTART_STOP_MS);
    }
    _exit(0);
}

int cli_run_keeper_start(const char *worktree)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    pid_t wrapper = getpid(), pid = fork();
    if (pid == 0) {
        close(fds[1]);
        keep(fds[0], wrapper, worktree);
    }
    close(fds[0]);
    if (pid < 0) {
        close(fds[1]);
        return -1;
    }
    return fds[1];
}

void cli_run_keeper_tell(int keeper, pid_t cmd)
{
    struct keeper_msg m = {cmd, host_pid_start(cmd)};
    if (keeper >= 0 && m.start) /* one write under PIPE_BUF: never split */
        (void)!write(keeper, &m, sizeof m);
}
