/* signals.c - the daemon's SIGTERM, SIGINT and SIGHUP, and who sent them.
 *
 * A daemon that stops says in its log which process stopped it. Before,
 * its log ended "stopping" with no sender, and a daemon stopped by a kill
 * nobody meant (a script's stale pid; in a container, the `wtproxy run`
 * that had autostarted it, until cli/tree_stop.c told session 0 apart)
 * left its user, and CI, guessing.
 * libevent's signal events drop the siginfo, so the handlers here write
 * the signal, the sender's pid and uid into a pipe the loop reads, as
 * libevent does inside. The sender's command line and its parent's are
 * read on the loop, once a stop or reload: small /proc files. */
#include "signals.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"

struct sent {
    int sig, code;
    pid_t pid;
    uid_t uid;
};

struct proxy_signals {
    struct event *ev;
    proxy_signal_fn fn;
    void *arg;
};

/* One daemon per process: the handlers find the pipe here. */
static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    int saved = errno;
    struct sent m = {sig, si->si_code, si->si_pid, si->si_uid};
    /* Under PIPE_BUF: whole or not at all; a full pipe (thousands of
     * unread signals) drops it, and the loop has a stop to read already. */
    ssize_t n = write(sig_pipe[1], &m, sizeof m);
    (void)n;
    errno = saved;
}

/* Who sent m, for the log: "SIGTERM from pid 812 (kill 4012), uid 1000,
 * whose parent is pid 800 (sh ./stop-all.sh)": a kill run by a script
 * has often exited by now, and if not, its parent is who to name. */
static void describe(const struct sent *m, char *buf, size_t len)
{
    const char *name = sigabbrev_np(m->sig);
    if (m->code == SI_KERNEL) { /* a terminal's Ctrl-C or hang-up */
        snprintf(buf, len, "SIG%s from the terminal", name ? name : "?");
        return;
    }
    if (m->code != SI_USER && m->code != SI_QUEUE && m->code != SI_TKILL) {
        snprintf(buf, len, "SIG%s (si_code %d)", name ? name : "?", m->code);
        return;
    }
    char cmd[256], parent[256] = "";
    host_pid_cmdline(m->pid, cmd, sizeof cmd);
    pid_t ppid = cmd[0] ? host_pid_parent(m->pid) : 0;
    if (ppid > 0)
        host_pid_cmdline(ppid, parent, sizeof parent);
    int n = snprintf(buf, len, "SIG%s from pid %d (%s), uid %u", name ? name : "?", (int)m->pid,
                     cmd[0] ? cmd : "exited already", (unsigned)m->uid);
    if (ppid > 0 && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ", whose parent is pid %d (%s)", (int)ppid,
                 parent[0] ? parent : "exited already");
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    struct proxy_signals *ps = arg;
    struct sent m;
    char from[768];
    (void)what;
    while (read(fd, &m, sizeof m) == (ssize_t)sizeof m) {
        describe(&m, from, sizeof from);
        ps->fn(m.sig, from, ps->arg);
    }
}

static int catch_signal(int sig)
{
    struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&sa.sa_mask);
    return sigaction(sig, &sa, NULL);
}

struct proxy_signals *proxy_signals_new(struct event_base *base, proxy_signal_fn fn, void *arg)
{
    struct proxy_signals *ps = calloc(1, sizeof *ps);
    if (!ps || sig_pipe[0] >= 0 || pipe2(sig_pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
        free(ps);
        return NULL;
    }
    ps->fn = fn;
    ps->arg = arg;
    ps->ev = event_new(base, sig_pipe[0], EV_READ | EV_PERSIST, on_readable, ps);
    if (!ps->ev || event_add(ps->ev, NULL) < 0 || catch_signal(SIGTERM) < 0 ||
        catch_signal(SIGINT) < 0 || catch_signal(SIGHUP) < 0) {
        proxy_signals_free(ps);
        return NULL;
    }
    return ps;
}

void proxy_signals_free(struct proxy_signals *ps)
{
    if (!ps)
        return;
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigaction(SIGTERM, &dfl, NULL);
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGHUP, &dfl, NULL);
    if (ps->ev)
        event_free(ps->ev);
    for (int i = 0; i < 2; i++) {
        if (sig_pipe[i] >= 0)
            close(sig_pipe[i]);
        sig_pipe[i] = -1;
    }
    free(ps);
}
