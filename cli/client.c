/* client.c - one request on the daemon's control socket, one reply
 * (registry/PROTOCOL.md: a JSON object per line); starts the daemon when
 * none answers: the daemon start, which users and the --no-autostart flag
 * call autostart (not the daemon's on-demand start of .wtproxy servers,
 * proxy/ondemand.c). */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "port_stranger.h"
#include "port_taken.h"
#include "proxy_limits.h"
#include "registry.h"
#include "servers.h"
#include "wtfile.h"

#define NOBODY 1      /* exchange(): no daemon listens on the socket */
#define CLOSED 2      /* exchange(): the daemon closed the connection without a reply */
#define LOG_TAIL 2048 /* bytes of the daemon's log shown when it failed */

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

int cli_daemon_start_allowed(int no_autostart_flag)
{
    const char *env = getenv("WTPROXY_NO_AUTOSTART");
    return !no_autostart_flag && !(env && strcmp(env, "1") == 0);
}

/* Connect to the Unix socket at path. Returns 0 with *fd, NOBODY when
 * nothing listens there (no socket, or a stale one), or -1 with err. */
static int dial(const char *path, int *fd, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "control socket path is longer than %zu bytes: %s",
                 sizeof sa.sun_path - 1, path);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    *fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (*fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    if (connect(*fd, (struct sockaddr *)&sa, sizeof sa) == 0)
        return 0;
    int e = errno;
    close(*fd);
    if (e == ENOENT || e == ECONNREFUSED)
        return NOBODY;
    snprintf(err, errlen,
             "cannot connect to the daemon on %s: %s; check the socket's owner and "
             "mode (ls -l %s), or run: wtproxy doctor",
             path, strerror(e), path);
    return -1;
}

/* Wait until fd is ready for events or the deadline passes. Returns 0, or
 * -1 with errno ETIMEDOUT. */
static int wait_fd(int fd, short events, long long deadline)
{
    for (;;) {
        long long left = deadline - host_mono_ms();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, (int)left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* Send all of buf before the deadline. MSG_NOSIGNAL: a daemon that went
 * away must be an error message, not a SIGPIPE that kills `wtproxy run`
 * and orphans its server. Returns 0 or -1 (errno). */
static int send_all(int fd, const char *buf, size_t len, long long deadline)
{
    while (len > 0) {
        if (wait_fd(fd, POLLOUT, deadline) < 0)
            return -1;
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n < 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Read one line (up to WTP_CLIENT_REPLY_MAX) before the deadline into a
 * malloc'd, NUL-terminated *line without its '\n'. Returns 0, CLOSED with
 * err when the daemon closed the connection first, or -1 with err. */
static int recv_line(int fd, long long deadline, char **line, char *err, size_t errlen)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    int rc = -1;
    while (buf) {
        if (wait_fd(fd, POLLIN, deadline) < 0) {
            snprintf(err, errlen, "the daemon did not answer within %d s: %s",
                     WTP_CLIENT_TIMEOUT_MS / 1000, strerror(errno));
            break;
        }
        ssize_t n = recv(fd, buf + len, cap - len - 1, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0) {
            snprintf(err, errlen, "the daemon closed the connection without a reply%s%s",
                     n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
            rc = CLOSED;
            break;
        }
        char *nl = memchr(buf + len, '\n', (size_t)n);
        len += (size_t)n;
        if (nl) {
            *nl = '\0';
            *line = buf;
            return 0;
        }
        if (len + 1 >= cap) {
            char *bigger = cap >= WTP_CLIENT_REPLY_MAX ? NULL : realloc(buf, cap * 2);
            if (!bigger) {
                snprintf(err, errlen, "the daemon's reply is over %d bytes", WTP_CLIENT_REPLY_MAX);
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    if (!buf)
        snprintf(err, errlen, "out of memory");
    free(buf);
    return rc;
}

/* The pid of the process that listens at fd's other end, 0 when unknown. */
static pid_t peer_pid(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 ? cred.pid : 0;
}

/* A ping's "pid" is the daemon's getpid(), as its own pid namespace
 * numbers it: a daemon autostarted inside a sandbox (bwrap --unshare-pid)
 * said 30, a kernel thread here, and `stop --daemon` sent that SIGTERM
 * and offered `kill -9 30`. The kernel numbers the peer in this
 * process's namespace (SO_PEERCRED; 0 when the daemon runs outside it):
 * that is the pid this process may signal. The daemon's own stays as
 * "pid_there". */
static void number_daemon_here(pid_t here, json_t *reply)
{
    json_t *said = json_object_get(reply, "pid");
    if (!json_is_integer(said) || !json_object_get(reply, "build"))
        return;
    if (here == (pid_t)json_integer_value(said))
        return;
    json_object_set(reply, "pid_there", said);
    json_object_set_new(reply, "pid", json_integer(here));
}

/* One request/reply on path. Returns 0 with *reply, NOBODY when no daemon
 * listens, CLOSED with err and the daemon's pid in *closer (0 unknown) when
 * it closed the connection without a reply, or -1 with err. */
static int exchange(const char *path, const char *req, json_t **reply, pid_t *closer, char *err,
                    size_t errlen)
{
    int fd, rc = dial(path, &fd, err, errlen);
    if (rc != 0)
        return rc;
    long long deadline = host_mono_ms() + WTP_CLIENT_TIMEOUT_MS;
    char *line = NULL;
    rc = -1;
    if (send_all(fd, req, strlen(req), deadline) < 0)
        snprintf(err, errlen, "cannot send to the daemon on %s: %s", path, strerror(errno));
    else
        rc = recv_line(fd, deadline, &line, err, errlen);
    pid_t daemon = peer_pid(fd);
    *closer = rc == CLOSED ? daemon : 0;
    close(fd);
    if (rc != 0) { /* a daemon that is stuck or crashing: doctor says which, and its log */
        size_t n = strlen(err);
        snprintf(err + n, errlen - n, "; see what it does: wtproxy doctor");
        return rc;
    }
    json_error_t jerr;
    *reply = json_loads(line, 0, &jerr);
    free(line);
    if (!*reply || !json_is_object(*reply) || !json_is_boolean(json_object_get(*reply, "ok"))) {
        snprintf(err, errlen,
                 "the daemon on %s sent a reply that is not a protocol object%s%s; "
                 "another program or another wtproxy version serves it: wtproxy doctor",
                 path, *reply ? "" : ": ", *reply ? "" : jerr.text);
        json_decref(*reply);
        *reply = NULL;
        return -1;
    }
    number_daemon_here(daemon, *reply);
    return 0;
}

/* A daemon started in a pid namespace of its own (an agent's sandbox:
 * bwrap --unshare-pid) sees only that namespace's processes: it placed
 * no caller from outside (503 "could not be placed" for every other
 * worktree's tests) and dropped the servers it could not see, while
 * every command called it fine. Said where the autostart is said. */
static void say_daemon_confined(void)
{
    fprintf(stderr,
            "wtproxy: warning: this daemon runs in a pid namespace of its own (no kernel "
            "threads are seen here: a sandbox or a container): it sees only this "
            "namespace's processes, and callers outside it get 503 \"could not be "
            "placed\"; started from an agent's sandbox, stop it (wtproxy stop --daemon) and "
            "start it outside (wtproxy doctor, run there, gives the command)\n");
}

/* Whether a daemon answers ping on path; its pid in *pid. */
static int pings(const char *path, long long *pid)
{
    char err[256];
    json_t *reply = NULL;
    pid_t closer;
    if (exchange(path, "{\"op\":\"ping\"}\n", &reply, &closer, err, sizeof err) != 0)
        return 0;
    int ok = json_is_true(json_object_get(reply, "ok"));
    *pid = json_integer_value(json_object_get(reply, "pid"));
    json_decref(reply);
    return ok;
}

/* Print the end of the log written since offset, for a daemon that did
 * not come up: its own words say why (a taken port, a bad config). */
static void show_log_tail(const char *log, off_t offset)
{
    int fd = open(log, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        if (fd >= 0)
            close(fd);
        return;
    }
    if (st.st_size - offset > LOG_TAIL)
        offset = st.st_size - LOG_TAIL;
    char buf[LOG_TAIL + 1];
    ssize_t n = pread(fd, buf, LOG_TAIL, offset);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    fprintf(stderr, "wtproxy: the daemon's log %s ends with:\n%s%s", log, buf,
            buf[n - 1] == '\n' ? "" : "\n");
}

/* The daemon's command line into argv, its numbers into num: serve,
 * --control when WTPROXY_CONTROL chose the socket, and a --listen for each
 * front the worktree's .wtproxy declares (daemon_listen.c). */
struct serve_argv {
    char *argv[5 + 2 * (WTFILE_MAX_SERVICES + 1)];
    char num[WTFILE_MAX_SERVICES + 1][8];
};

static void serve_argv(struct serve_argv *a, const char *control)
{
    int ports[WTFILE_MAX_SERVICES + 1], n = cli_daemon_listen(ports), k = 0;
    a->argv[k++] = "wtproxy";
    a->argv[k++] = "serve";
    if (control) {
        a->argv[k++] = "--control";
        a->argv[k++] = (char *)control;
    }
    for (int i = 0; i < n; i++) {
        snprintf(a->num[i], sizeof a->num[i], "%d", ports[i]);
        a->argv[k++] = "--listen";
        a->argv[k++] = a->num[i];
    }
    a->argv[k] = NULL;
}

/* In the forked child: become the daemon, detached from our session (a
 * kill of the caller's process group must not reach it) and from our
 * stdio (a test harness waiting for our pipes to close must not wait for
 * it), with d's clean environment (daemon_env.c), its log starting with
 * d's line. Everything was built before fork: `wtproxy run` has threads,
 * so the child only makes system calls. Never returns. */
static void exec_daemon(const char *exe, char **argv, int logfd, const struct cli_daemon_env *d)
{
    setsid();
    int null = open("/dev/null", O_RDONLY);
    if (null < 0 || dup2(null, 0) < 0 || dup2(logfd, 1) < 0 || dup2(logfd, 2) < 0)
        _exit(127);
    close_range(3, ~0U, 0);
    ssize_t said = write(2, d->line, strlen(d->line)); /* unwritable: so are its own lines */
    (void)said;
    execve(exe, argv, d->env);
    dprintf(2, "wtproxy: cannot run %s: %s\n", exe, strerror(errno));
    _exit(127);
}

/* Fork the daemon and wait for it to answer ping. Returns 0, or -1 with
 * err (its log's end is printed). */
static int spawn_daemon(const char *path, const char *log, char *err, size_t errlen)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    int logfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    struct stat st;
    if (n < 0 || logfd < 0 || fstat(logfd, &st) < 0) {
        snprintf(err, errlen, "cannot start the daemon: %s: %s", n < 0 ? "/proc/self/exe" : log,
                 strerror(errno));
        if (logfd >= 0)
            close(logfd);
        return -1;
    }
    exe[n] = '\0';
    struct serve_argv a;
    serve_argv(&a, getenv("WTPROXY_CONTROL") ? path : NULL);
    struct cli_daemon_env d = {0};
    pid_t pid = cli_daemon_env(&d, err, errlen) < 0 ? -2 : fork();
    if (pid == 0)
        exec_daemon(exe, a.argv, logfd, &d);
    cli_daemon_env_free(&d);
    close(logfd);
    if (pid == -2)
        return -1;
    if (pid < 0) {
        snprintf(err, errlen, "cannot start the daemon: fork: %s", strerror(errno));
        return -1;
    }
    long long deadline = host_mono_ms() + WTP_DAEMON_START_WAIT_MS, answered;
    int status;
    while (host_mono_ms() < deadline) {
        if (pings(path, &answered)) {
            fprintf(stderr, "wtproxy: started the daemon (pid %lld); log: %s\n", answered, log);
            if (!host_pid_ns_sees_kernel())
                say_daemon_confined();
            return 0;
        }
        if (waitpid(pid, &status, WNOHANG) == pid) {
            show_log_tail(log, st.st_size);
            snprintf(err, errlen,
                     "the daemon exited (status %d) before answering on %s; its "
                     "log %s (above) says why; fix that, or run it in the foreground to see: "
                     "wtproxy serve",
                     WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), path, log);
            return -1;
        }
        sleep_ms(WTP_CLIENT_POLL_MS);
    }
    kill(pid, SIGTERM); /* we report failure: a daemon coming up later would surprise */
    waitpid(pid, &status, 0);
    show_log_tail(log, st.st_size);
    snprintf(err, errlen,
             "the daemon did not answer on %s within %d s; its log %s (above) may "
             "say why; run it in the foreground to see: wtproxy serve",
             path, WTP_DAEMON_START_WAIT_MS / 1000, log);
    return -1;
}

/* Start the daemon unless one answers by now. Concurrent callers (16
 * `wtproxy run` at once) take a lock in the state folder, so one starts it
 * and the others find it answering. Returns 0, or -1 with err. */
static int daemon_start(const char *path, char *err, size_t errlen)
{
    char dir[PATH_MAX], lock[PATH_MAX + 32], log[PATH_MAX + 32];
    if (reg_state_dir(dir, sizeof dir, err, errlen) < 0)
        return -1;
    /* The lock's name is older than the word "daemon start": a wtproxy of
     * an older version starting a daemon at the same time takes it too. */
    snprintf(lock, sizeof lock, "%s/autostart.lock", dir);
    snprintf(log, sizeof log, "%s/daemon.log", dir);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) < 0) {
        snprintf(err, errlen,
                 "cannot lock %s: %s; the state folder must be yours and "
                 "writable: ls -ld %s",
                 lock, strerror(errno), dir);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    long long pid;
    int rc = pings(path, &pid) ? 0 : spawn_daemon(path, log, err, errlen);
    close(fd); /* releases the lock */
    return rc;
}

/* The ports a daemon started here would listen on (daemon_listen.c), or
 * the one a daemon with no config listens on. Returns how many. */
static int start_ports(int *ports)
{
    int n = cli_daemon_listen(ports);
    const char *config = getenv("WTPROXY_CONFIG");
    if (n == 0 && !(config && *config))
        ports[n++] = WTP_DEFAULT_FRONT_PORT;
    return n;
}

/* When a daemon of this user runs where this process cannot reach it
 * (cli_daemon_hidden: a sandbox's own /tmp), err says so in place of "no
 * daemon answers" or of the control folder this process could not
 * create, which said nothing of it: a start here fails on its port, and
 * the kill doctor gave stopped the daemon every other shell used. Returns
 * 1 when said. */
static int hidden_daemon(char *err, size_t errlen)
{
    int ports[WTFILE_MAX_SERVICES + 1], n = start_ports(ports);
    char where[PATH_MAX], said[3 * PATH_MAX], fix[5 * PATH_MAX];
    const char *from;
    reg_control_where(where, sizeof where, &from);
    if (!cli_daemon_hidden(where, from, ports, n, said, sizeof said, fix, sizeof fix))
        return 0;
    snprintf(err, errlen, "%s: %s", said, fix);
    return 1;
}

/* When a port a daemon started here would listen on is held by another
 * user's socket (a shared box: alice's daemon on the team's 8000), the
 * sentence for no daemon at path says so, with its way out: the start it
 * gives otherwise would fail on that port. Asks the port's holder (up to
 * WTP_STRANGER_PROBE_MS): only once no daemon answered. Returns 1 when
 * said. */
static int held_by_another(const char *path, const char *flags, const char *log, char *err,
                           size_t errlen)
{
    int ports[WTFILE_MAX_SERVICES + 1], n = start_ports(ports);
    struct host_port_owner o;
    struct proxy_port_stranger s;
    for (int i = 0; i < n; i++) {
        int p = ports[i], other = proxy_port_other(p, ports, n);
        char who[160], serve[PATH_MAX * 2 + 256], tests[128], fix[PATH_MAX * 2 + 768];
        if (!host_port_owner_find(p, &o) || !proxy_port_stranger("127.0.0.1", p, &o, &s))
            continue;
        size_t used = (size_t)snprintf(serve, sizeof serve,
                                       "setsid -f wtproxy serve --control %s%s", path, flags);
        for (int k = 0; k < n && used < sizeof serve; k++)
            used += (size_t)snprintf(serve + used, sizeof serve - used, " --listen %d",
                                     k == i ? other : ports[k]);
        if (used < sizeof serve)
            snprintf(serve + used, sizeof serve - used, " >>%s 2>&1", log);
        snprintf(tests, sizeof tests,
                 "point your app's tests at port %d (their baseURL or port setting)", other);
        proxy_port_stranger_who(&s, who, sizeof who);
        proxy_port_stranger_fix(&s, p, serve, tests, fix, sizeof fix);
        snprintf(err, errlen,
                 "no daemon answers on %s, and port %d, where one of yours would listen, is "
                 "held by %s%s: %s",
                 path, p, who, s.daemon_pid ? ", which serves that user's worktrees only" : "",
                 fix);
        return 1;
    }
    return 0;
}

/* Why the last daemon did not start, when the daemon's log ends with its
 * word (WTP_NOT_STARTED): a registry whose role lacks a right, a state
 * folder it cannot use. The start said alone failed the same way, and
 * only the log said why. Returns 1 with the reason in out. */
static int last_start_failed(const char *log, char *out, size_t len)
{
    char tail[LOG_TAIL + 1];
    int fd = open(log, O_RDONLY | O_CLOEXEC);
    struct stat st;
    ssize_t n = fd >= 0 && fstat(fd, &st) == 0
                    ? pread(fd, tail, LOG_TAIL, st.st_size > LOG_TAIL ? st.st_size - LOG_TAIL : 0)
                    : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    while (n > 0 && tail[n - 1] == '\n')
        n--;
    tail[n] = '\0';
    const char *line = strrchr(tail, '\n'), *word = "wtproxy: " WTP_NOT_STARTED;
    line = line ? line + 1 : tail;
    if (strncmp(line, word, strlen(word)) != 0)
        return 0;
    snprintf(out, len, "%s", line + strlen(word));
    return 1;
}

/* The sentence for no daemon at path: where it looked, and a start that
 * returns at once (in an agent's shell a foreground `wtproxy serve` never
 * returns; setsid -f leaves it running when that shell ends), answering
 * where this process looked whatever WTPROXY_CONTROL the shell has, with
 * the flags and registry the last daemon ran with (its state file's:
 * daemon_flags.c), and listening where the daemon it would start listens,
 * its output in the log a started daemon writes. */
static void no_daemon(const char *path, char *err, size_t errlen)
{
    char dir[PATH_MAX], why[PATH_MAX + 256], log[PATH_MAX + 16] = "/dev/null";
    char listen[(WTFILE_MAX_SERVICES + 1) * 16], flags[2048], failed[LOG_TAIL + 1],
        said[LOG_TAIL + 64] = "";
    const char *config = getenv("WTPROXY_CONFIG");
    if (reg_state_dir(dir, sizeof dir, why, sizeof why) == 0)
        snprintf(log, sizeof log, "%s/daemon.log", dir);
    cli_daemon_flags(NULL, CLI_DROP_CONTROL | (config && config[0] ? CLI_DROP_CONFIG : 0), flags,
                     sizeof flags);
    if (held_by_another(path, flags, log, err, errlen))
        return;
    cli_daemon_listen_flags(listen, sizeof listen);
    if (last_start_failed(log, failed, sizeof failed))
        snprintf(said, sizeof said, " (the last daemon did not start: %s; fix that first)", failed);
    snprintf(err, errlen,
             "no daemon answers on %s%s" CLI_NO_DAEMON_START "setsid -f wtproxy serve "
             "--control %s%s%s >>%s 2>&1",
             path, said, path, flags, listen, log);
}

/* After a daemon (pid, 0 unknown) closed the connection without a reply:
 * a daemon that stops (wtproxy stop --daemon, SIGTERM) drops the callers it
 * has not answered. Wait for it to be gone (its pid, else its socket),
 * so that the caller starts the next one as when none answers, on ports
 * the stopping one no longer holds. Returns NOBODY once it is gone, 0 when
 * a daemon answers ping after all (ask again), -1 when neither happened in
 * WTP_DAEMON_STOP_WAIT_MS. */
static int await_stopped(const char *path, pid_t pid)
{
    long long deadline = host_mono_ms() + WTP_DAEMON_STOP_WAIT_MS, answered;
    char err[256], who[32] = "";
    int fd;
    /* said at once: the wait can take seconds, and a silent command looks hung */
    if (pid > 0)
        snprintf(who, sizeof who, " (pid %d)", (int)pid);
    fprintf(stderr,
            "wtproxy: the daemon%s closed the connection without a reply: it is stopping; "
            "waiting for it to exit (at most %d s)\n",
            who, WTP_DAEMON_STOP_WAIT_MS / 1000);
    while (host_mono_ms() < deadline) {
        if (pid > 0 && host_pid_start(pid) == 0)
            return NOBODY;
        int listens = dial(path, &fd, err, sizeof err);
        if (listens == 0)
            close(fd);
        else if (listens == NOBODY && pid <= 0)
            return NOBODY;
        if (listens == 0 && pings(path, &answered))
            return 0;
        sleep_ms(WTP_CLIENT_POLL_MS);
    }
    return -1;
}

/* exchange(), with a daemon that closed the connection without a reply
 * taken for one that stops: once it is gone, NOBODY; when one answers
 * after all, asked again. Returns 0 with *reply, NOBODY, or -1 with err. */
static int ask(const char *path, const char *req, json_t **reply, char *err, size_t errlen)
{
    pid_t closer;
    int rc = exchange(path, req, reply, &closer, err, errlen);
    if (rc == CLOSED) {
        rc = await_stopped(path, closer);
        if (rc == 0)
            rc = exchange(path, req, reply, &closer, err, errlen);
    }
    return rc == CLOSED ? -1 : rc;
}

int cli_call(json_t *req, int start_daemon, json_t **reply, char *err, size_t errlen)
{
    char path[PATH_MAX];
    if (reg_control_path(path, sizeof path, err, errlen) < 0) {
        hidden_daemon(err, errlen);
        return -1;
    }
    char *text = json_dumps(req, JSON_COMPACT);
    size_t len = text ? strlen(text) : 0;
    char *line = text ? realloc(text, len + 2) : NULL;
    if (!line) {
        free(text);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(line + len, "\n", 2);
    int rc = ask(path, line, reply, err, errlen);
    if (rc == NOBODY && hidden_daemon(err, errlen))
        rc = -1; /* a daemon runs: starting another fails on its port */
    if (rc == NOBODY && start_daemon) {
        rc = daemon_start(path, err, errlen);
        if (rc == 0)
            rc = ask(path, line, reply, err, errlen);
    }
    if (rc == NOBODY) {
        no_daemon(path, err, errlen);
        rc = CLI_NO_DAEMON;
    }
    free(line);
    /* the daemon's warning is for whoever made the call (PROTOCOL.md) */
    const char *warning = rc == 0 ? json_string_value(json_object_get(*reply, "warning")) : NULL;
    if (warning)
        fprintf(stderr, "wtproxy: warning: %s\n", warning);
    return rc;
}

struct reg_table *cli_table(char *err, size_t errlen)
{
    return cli_table_exited(err, errlen, NULL);
}

struct reg_table *cli_table_exited(char *err, size_t errlen, json_t **exited)
{
    json_t *req = json_pack("{s:s}", "op", "list"), *reply = NULL;
    int r = req ? cli_call(req, 0, &reply, err, errlen) : -1;
    json_decref(req);
    if (r < 0)
        return NULL;
    json_t *entries = json_object_get(reply, "entries");
    struct reg_table *t = json_is_array(entries) ? reg_table_new() : NULL;
    size_t i;
    json_t *e;
    json_array_foreach(t ? entries : NULL, i, e) {
        char why[256];
        if (json_is_true(json_object_get(e, "remote")))
            continue; /* another machine's: never routed here */
        struct reg_backend *b = reg_backend_from_json(e, why, sizeof why);
        struct reg_backend *holder;
        if (b)
            reg_table_put(t, b, &holder);
        reg_backend_unref(b);
    }
    if (!t)
        snprintf(err, errlen, "the daemon's answer to list has no entries");
    else if (exited)
        *exited = cli_exited_of(reply, NULL);
    json_decref(reply);
    return t;
}
