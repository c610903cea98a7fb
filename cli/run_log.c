/* run_log.c - the log of a `wtproxy run` server: every server has one, so
 * that `wtproxy logs`, the dashboard and agents can read what it printed.
 *
 * CMD's stdout and stderr go to two pipes that a thread of the wrapper
 * relays to the log and to the wrapper's own stdout and stderr (a
 * terminal, Playwright's webServer). The log is the wrapper's stdout when
 * that is a regular file already (an on-demand start's: the daemon opened
 * it; the relay then copies nothing to it twice), else the file of the
 * same name the daemon would give it (reg_log_name: the worktree's folder
 * name and a hash of its path) under the state folder's servers/, appended
 * to. Each run begins with a line naming the worktree, and a log last
 * written before the worktree came to be (a path reused) is emptied first:
 * it is an earlier worktree's.
 *
 * The relay is the log's one writer of CMD's output, so it caps the log
 * (host/log_file.c): past the cap the file becomes .1 and a new one starts,
 * on the same fd number, and the wrapper's stdout and stderr follow when
 * they were the log. A dev server writing straight into the file would
 * grow it behind the cap's back: that is why an on-demand start's server
 * is relayed too. The thread blocks every signal: they stay the main
 * thread's, whose waitpid they must interrupt. */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "registry.h"

#define RELAY_CHUNK 16384 /* bytes moved per read */
#define DRAIN_MS 500      /* what CMD wrote last may take this long to arrive at exit */

/* Write all of buf to fd; a reader that went (EPIPE) or another error
 * makes fd -1: the log goes on without it. */
static void put(int *fd, const char *buf, size_t n)
{
    while (*fd >= 0 && n > 0) {
        ssize_t w = write(*fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            *fd = -1;
            return;
        }
        buf += w;
        n -= (size_t)w;
    }
}

/* buf's n bytes went to the log: past the cap it rotates, and the new file's
 * first line says where the earlier ones are. snprintf and write, not
 * dprintf, which may allocate (start_relay says why the thread must not). */
static void counted(struct cli_run_log *l, const char *buf, size_t n)
{
    char err[2 * PATH_MAX + 64], line[sizeof err + 64];
    int r = host_log_wrote(&l->cap, n, buf[n - 1] == '\n', err, sizeof err), len = 0;
    if (r > 0)
        len = snprintf(line, sizeof line, CLI_RUN_LOG_ROTATED, l->path, l->cap.rotated);
    else if (r < 0)
        len = snprintf(line, sizeof line,
                       "--- wtproxy run: %s: this log goes on in the same file ---\n", err);
    if (len > 0)
        put(&l->fd, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
}

/* The relay: both pipes to the wrapper's stdout/stderr and to the log,
 * until both reach end of file (every writer, CMD's whole tree and the
 * wrapper, closed them). */
static void *relay(void *arg)
{
    struct cli_run_log *l = arg;
    char *buf = l->buf;
    int to[2] = {l->to[0], l->to[1]};
    struct pollfd p[2] = {{l->out[0], POLLIN, 0}, {l->err[0], POLLIN, 0}};
    while (p[0].fd >= 0 || p[1].fd >= 0) {
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (p[i].fd < 0 || !p[i].revents)
                continue;
            ssize_t n = read(p[i].fd, buf, RELAY_CHUNK);
            if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
                p[i].fd = -1; /* poll skips negative fds */
                continue;
            }
            put(&to[i], buf, n > 0 ? (size_t)n : 0);
            put(&l->fd, buf, n > 0 ? (size_t)n : 0);
            if (n > 0 && l->fd >= 0)
                counted(l, buf, (size_t)n);
            if (n > 0)
                cli_run_fail_saw(&l->fail, buf, (size_t)n);
        }
    }
    l->done = 1;
    return NULL;
}

/* Whether fd 1 is a regular file: then it is the log (l->path, and l->fd
 * a copy of fd 1, sharing its offset), and neither it nor an fd 2 on the
 * same file gets the relay's copy. */
static int stdout_is_file(struct cli_run_log *l)
{
    struct stat st, st2;
    ssize_t n;
    if (fstat(STDOUT_FILENO, &st) < 0 || !S_ISREG(st.st_mode) ||
        (n = readlink("/proc/self/fd/1", l->path, sizeof l->path - 1)) <= 0 || l->path[0] != '/')
        return 0;
    l->path[n] = '\0';
    if ((l->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3)) < 0) {
        l->path[0] = '\0';
        return 0;
    }
    l->to[0] = -1;
    if (fstat(STDERR_FILENO, &st2) == 0 && st2.st_dev == st.st_dev && st2.st_ino == st.st_ino)
        l->to[1] = -1;
    return 1;
}

/* Open servers/<reg_log_name> for appending. */
static int open_file(struct cli_run_log *l, const char *worktree, int front, const char *service,
                     char *err, size_t errlen)
{
    char dir[PATH_MAX - NAME_MAX - 2], name[NAME_MAX + 1];
    if (reg_state_dir(dir, sizeof dir - 8, err, errlen) < 0)
        return -1;
    size_t len = strlen(dir);
    snprintf(dir + len, sizeof dir - len, "/servers");
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    reg_log_name(worktree, front, service, name, sizeof name);
    snprintf(l->path, sizeof l->path, "%s/%s", dir, name);
    l->fd = open(l->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (l->fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", l->path, strerror(errno));
        l->path[0] = '\0';
        return -1;
    }
    return 0;
}

/* Begin this run in the log: emptied first when it is an earlier
 * worktree's at this path (reg_log_predates), or its lines would be the
 * first a new worktree's `wtproxy logs` shows; then the line naming the
 * worktree and the run's start. */
static void begin(struct cli_run_log *l, const char *worktree, int front, const char *service)
{
    char stamp[64], old[PATH_MAX + 8];
    time_t now = time(NULL);
    struct tm tm;
    if (reg_log_predates(l->path, worktree) && ftruncate(l->fd, 0) == 0) {
        snprintf(old, sizeof old, "%s.1", l->path);
        unlink(old);
    }
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
    dprintf(l->fd, REG_LOG_HEAD "%s (front %d%s%s), %s ---\n", worktree, front,
            service ? ", service " : "", service ? service : "", stamp);
}

/* Start the relay thread with every signal blocked in it. Its buffer is
 * allocated here: the thread never allocates, so a fork (a restart) never
 * copies a malloc lock it holds. */
static int start_relay(struct cli_run_log *l, char *err, size_t errlen)
{
    sigset_t all, old;
    sigfillset(&all);
    if (!(l->buf = malloc(RELAY_CHUNK))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (pipe2(l->out, O_CLOEXEC) < 0 || pipe2(l->err, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int r = pthread_create(&l->thread, NULL, relay, l);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        snprintf(err, errlen, "cannot start the log relay: %s", strerror(r));
        return -1;
    }
    l->relaying = 1;
    return 0;
}

int cli_run_log_open(struct cli_run_log *l, const char *worktree, int front, const char *service)
{
    char err[PATH_MAX + 128];
    *l = (struct cli_run_log){
        .out = {-1, -1}, .err = {-1, -1}, .fd = -1, .to = {STDOUT_FILENO, STDERR_FILENO}};
    cli_run_fail_init(&l->fail);
    int is_file = stdout_is_file(l);
    int failed = !is_file && open_file(l, worktree, front, service, err, sizeof err) < 0;
    if (!failed)
        begin(l, worktree, front, service);
    int also[] = {STDOUT_FILENO, STDERR_FILENO};
    /* Before the relay, which owns the cap from then on. A FIFO or a
     * deleted file is not capped. */
    if (!failed)
        host_log_attach(&l->cap, l->fd, also, 2);
    if (failed || start_relay(l, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy: warning: the server's output is not logged: %s\n", err);
        cli_run_log_close(l);
        return -1;
    }
    /* Python buffers a pipe's output by blocks: the log would lag. */
    setenv("PYTHONUNBUFFERED", "1", 0);
    return 0;
}

void cli_run_log_child(const struct cli_run_log *l)
{
    if (l->relaying && (dup2(l->out[1], STDOUT_FILENO) < 0 || dup2(l->err[1], STDERR_FILENO) < 0))
        _exit(1);
}

void cli_run_log_note(const struct cli_run_log *l, const char *line)
{
    /* The wrapper said it on stderr: when that is the log, it is there. */
    if (l->relaying && l->fd >= 0 && l->to[1] >= 0)
        dprintf(l->fd, "%s\n", line);
}

void cli_run_log_close(struct cli_run_log *l)
{
    cli_run_log_end(l, NULL);
}

/* how, and the time, as the log's last line; only once the relay, its
 * other writer, has ended. */
static void end_line(const struct cli_run_log *l, const char *how)
{
    char stamp[16];
    time_t now = time(NULL);
    struct tm tm;
    if (!how || l->fd < 0 || (l->relaying && !l->done))
        return;
    strftime(stamp, sizeof stamp, "%H:%M:%S", localtime_r(&now, &tm));
    dprintf(l->fd, "--- %s, at %s ---\n", how, stamp);
}

void cli_run_log_end(struct cli_run_log *l, const char *how)
{
    int fds[4] = {l->out[1], l->err[1], -1, -1};
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (l->relaying) {
        /* CMD's tree has ended: its last words arrive within DRAIN_MS,
         * unless a process it left behind holds the pipes. */
        struct timespec tick = {0, 10 * 1000000L};
        for (int waited = 0; !l->done && waited < DRAIN_MS; waited += 10)
            nanosleep(&tick, NULL);
        if (l->done)
            pthread_join(l->thread, NULL);
        else
            pthread_detach(l->thread);
    }
    end_line(l, how);
    if (l->done || !l->relaying) {
        fds[2] = l->out[0];
        fds[3] = l->err[0];
        if (l->fd >= 0)
            close(l->fd);
    }
    for (int i = 2; i < 4; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (l->done || !l->relaying)
        free(l->buf); /* else the detached thread still reads into it */
    l->buf = NULL;
    l->relaying = 0;
}
