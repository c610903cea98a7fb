/* signals.c - the daemon's SIGTERM, SIGINT and SIGHUP, and who sent them.
 *
 * A daemon that stops says in its log which process stopped it. Before,
 * its log ended "stopping" with no sender: a daemon stopped by a stray
 * kill (a script's pid that went stale and now names the daemon, a test
 * harness stopping the wrong group) left its user, and CI, guessing.
 * libevent's signal events drop the siginfo, so the handlers here write
 * the signal, the sender's pid and uid into a pipe the loop reads, as
 * libevent does inside. The sender's command line is read on the loop,
 * once a stop or reload: one small /proc file. */
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
    pid_t pid, ppid; /* ppid 0: unknown */
    uid_t uid;
    char cmd[200]; /* the sender's command line, read at once; "" unknown */
};

struct proxy_signals {
    struct event *ev;
    proxy_signal_fn fn;
    void *arg;
};

/* One daemon per process: the handlers find the pipe here. */
static int sig_pipe[2] = {-1, -1};

/* "/proc/PID/name" into path, with the calls a signal handler may make. */
static void proc_path(char *path, pid_t pid, const char *name)
{
    char digits[16];
    int n = 0;
    do
        digits[n++] = (char)('0' + pid % 10);
    while ((pid /= 10) > 0 && n < (int)sizeof digits);
    memcpy(path, "/proc/", 6);
    path += 6;
    while (n > 0)
        *path++ = digits[--n];
    *path++ = '/';
    memcpy(path, name, strlen(name) + 1);
}

/* Up to len - 1 bytes of /proc/PID/name into buf, NUL-terminated; the
 * length read (0 when gone). Async-signal-safe. */
static size_t read_proc(pid_t pid, const char *name, char *buf, size_t len)
{
    char path[48];
    proc_path(path, pid, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? 0 : read(fd, buf, len - 1);
    if (fd >= 0)
        close(fd);
    n = n < 0 ? 0 : n;
    buf[n] = '\0';
    return (size_t)n;
}

/* The sender, read in the handler: a `kill` command has often exited by
 * the time the loop reads the pipe, and its parent (the script that ran
 * it) is who to name. /proc/PID/stat is "PID (COMM) STATE PPID ...". */
static void read_sender(struct sent *m)
{
    char stat[512];
    size_t n = read_proc(m->pid, "stat", stat, sizeof stat);
    const char *p = n ? strrchr(stat, ')') : NULL;
    if (p && p[1] == ' ' && p[2] && p[3] == ' ')
        for (p += 4; *p >= '0' && *p <= '9'; p++)
            m->ppid = m->ppid * 10 + (*p - '0');
    n = read_proc(m->pid, "cmdline", m->cmd, sizeof m->cmd);
    for (size_t i = 0; i + 1 < n; i++) /* arguments apart by spaces, the last NUL kept */
        if (m->cmd[i] == '\0')
            m->cmd[i] = ' ';
}

static void on_signal(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    int saved = errno;
    struct sent m = {.sig = sig, .code = si->si_code, .pid = si->si_pid, .uid = si->si_uid};
    if (m.code == SI_USER || m.code == SI_QUEUE || m.code == SI_TKILL)
        read_sender(&m);
    /* Under PIPE_BUF: whole or not at all; a full pipe (about 300
     * unread signals) drops it, and the loop has a stop to read already. */
    ssize_t w = write(sig_pipe[1], &m, sizeof m);
    (void)w;
    errno = saved;
}

/* A command line for the log: control characters as '?', "" as what it means. */
static const char *shown(char *cmd, const char *none)
{
    for (char *c = cmd; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    return cmd[0] ? cmd : none;
}

/* Who sent m, for the log: "SIGTERM from pid 812 (kill 4012), uid 1000,
 * whose parent is pid 800 (sh ./stop-all.sh)". */
static void describe(struct sent *m, char *buf, size_t len)
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
    char parent[256] = "";
    if (m->ppid > 0)
        host_pid_cmdline(m->ppid, parent, sizeof parent);
    int n = snprintf(buf, len, "SIG%s from pid %d (%s), uid %u", name ? name : "?", (int)m->pid,
                     shown(m->cmd, "exited already"), (unsigned)m->uid);
    if (m->ppid > 0 && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ", whose parent is pid %d (%s)", (int)m->ppid,
                 shown(parent, "exited already"));
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
