/* sd_listen.c - see sd_listen.h. The protocol, as sd_listen_fds(3) states it:
 *   LISTEN_PID     = the pid the sockets are for; any other pid ignores them
 *   LISTEN_FDS     = N: the sockets are fds 3 .. 3+N-1
 *   LISTEN_FDNAMES = optional, N names separated by ':' (FileDescriptorName=,
 *                    by default the socket unit's name)
 * libsystemd is not linked for these few lines: it would be one more library
 * on every machine, also those that never use systemd.
 * A TCP socket is a front; a Unix socket is the control socket, so that a
 * `wtproxy ls` before the first request starts the daemon too (systemd
 * holds both; conf/systemd/wtproxy.socket). */
#include "sd_listen.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* The cure named in every refusal of an inherited fd. */
#define SD_FIX                                                                                     \
    "the socket unit needs ListenStream=ADDR:PORT lines (TCP), at most one "                       \
    "ListenStream=%t/wtproxy/control.sock and Accept=no (wtproxy help systemd); to start "         \
    "without activation, unset LISTEN_PID LISTEN_FDS LISTEN_FDNAMES"

/* Digits only, no sign or space, at most max. Returns 0, or -1. */
static int parse_count(const char *s, unsigned long long max, unsigned long long *v)
{
    char *end;
    if (!s || s[0] < '0' || s[0] > '9')
        return -1;
    errno = 0;
    *v = strtoull(s, &end, 10);
    return *end || errno == ERANGE || *v > max ? -1 : 0;
}

/* Cut names ("a:b:c") into the n entries of out; when the count differs
 * from n the names are not trusted and all stay "" (they only label log
 * lines). */
static void split_names(const char *names, struct proxy_sd_socket *out, int n)
{
    int count = 1;
    for (const char *p = names; *p; p++)
        count += *p == ':';
    if (count != n)
        return;
    const char *p = names;
    for (int i = 0; i < n; i++) {
        size_t len = strcspn(p, ":");
        snprintf(out[i].name, sizeof out[i].name, "%.*s", (int)len, p);
        p += len + (p[len] == ':');
    }
}

/* The protocol's arithmetic, on the variables' values (NULL: unset).
 * Returns how many sockets are this process's (fds and names filled in
 * out), 0 when none are (note may say why), or -1 with err. */
static int parse_env(const char *pid, const char *fds, const char *names, long self,
                     struct proxy_sd_socket *out, int max, char *note, size_t notelen, char *err,
                     size_t errlen)
{
    unsigned long long p, n;
    note[0] = '\0';
    if (!pid) {
        if (fds)
            snprintf(note, notelen, "LISTEN_FDS is set without LISTEN_PID: ignored");
        return 0;
    }
    if (parse_count(pid, LONG_MAX, &p) < 0 || p == 0) {
        snprintf(err, errlen,
                 "LISTEN_PID=\"%.32s\" is not a process id (socket activation sets it to the "
                 "daemon's pid); unset LISTEN_PID LISTEN_FDS LISTEN_FDNAMES to start without it",
                 pid);
        return -1;
    }
    if ((long)p != self) {
        snprintf(note, notelen,
                 "LISTEN_PID=%llu is another process (this is %ld): its LISTEN_FDS are ignored", p,
                 self);
        return 0;
    }
    if (!fds)
        return 0;
    if (parse_count(fds, INT_MAX - WTP_SD_FIRST_FD, &n) < 0) {
        snprintf(err, errlen,
                 "LISTEN_FDS=\"%.32s\" is not a number of sockets; unset LISTEN_PID LISTEN_FDS "
                 "LISTEN_FDNAMES to start without socket activation",
                 fds);
        return -1;
    }
    if (n > (unsigned long long)max) {
        snprintf(err, errlen,
                 "LISTEN_FDS=%llu: wtproxy serves at most %d sockets; give the socket unit fewer "
                 "ListenStream= lines",
                 n, max);
        return -1;
    }
    for (int i = 0; i < (int)n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].fd = WTP_SD_FIRST_FD + i;
    }
    if (names)
        split_names(names, out, (int)n);
    return (int)n;
}

/* What a non-socket fd is, for the message that refuses it. */
static const char *file_kind(int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return "not open";
    if (S_ISFIFO(st.st_mode))
        return "a pipe";
    if (S_ISREG(st.st_mode))
        return "a regular file";
    if (S_ISCHR(st.st_mode))
        return "a character device (a terminal or /dev/null?)";
    if (S_ISDIR(st.st_mode))
        return "a directory";
    return "not a socket";
}

static int refuse(const struct proxy_sd_socket *s, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen,
             "fd %d%s%s%s passed by socket activation (LISTEN_FDS) is %s; wtproxy serves "
             "listening TCP sockets and one listening Unix socket (its control socket): %s",
             s->fd, s->name[0] ? " (" : "", s->name, s->name[0] ? ")" : "", what, SD_FIX);
    return -1;
}

/* Check that s->fd is a listening stream socket, TCP (IPv4 or IPv6) or a
 * Unix socket with a path, fill its address and make it non-blocking
 * (libevent's listener needs it; systemd passes blocking sockets unless
 * NonBlocking=yes). Returns 0, or -1 with err naming the fd and what it is
 * instead. */
static int check_fd(struct proxy_sd_socket *s, char *err, size_t errlen)
{
    int type = 0, listening = 0;
    socklen_t tl = sizeof type, ll = sizeof listening;
    if (getsockopt(s->fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0)
        return refuse(s, errno == ENOTSOCK ? file_kind(s->fd) : "not open", err, errlen);
    s->addrlen = sizeof s->addr;
    if (getsockname(s->fd, (struct sockaddr *)&s->addr, &s->addrlen) < 0)
        return refuse(s, "a socket without an address", err, errlen);
    int family = s->addr.ss_family, unix_ = family == AF_UNIX;
    if (!unix_ && family != AF_INET && family != AF_INET6)
        return refuse(s, "a socket of another family than IPv4, IPv6 or Unix", err, errlen);
    if (unix_ && (s->addrlen <= offsetof(struct sockaddr_un, sun_path) ||
                  ((struct sockaddr_un *)&s->addr)->sun_path[0] == '\0'))
        return refuse(s, "a Unix socket without a path", err, errlen);
    if (type != SOCK_STREAM)
        return refuse(s,
                      unix_                ? "a Unix datagram socket"
                      : type == SOCK_DGRAM ? "a UDP socket"
                                           : "a non-stream socket",
                      err, errlen);
    if (getsockopt(s->fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) < 0 || !listening)
        return refuse(s,
                      unix_ ? "a Unix socket that is not listening"
                            : "a TCP socket that is not listening (Accept=yes passes "
                              "connections)",
                      err, errlen);
    int flags = fcntl(s->fd, F_GETFL);
    if (flags < 0 || fcntl(s->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        snprintf(err, errlen, "fd %d passed by socket activation: cannot make it non-blocking: %s",
                 s->fd, strerror(errno));
        return -1;
    }
    return 0;
}

/* Move the Unix socket among the n checked sockets of out to *control,
 * keeping the others in order. Returns how many remain, or -1 with err
 * when there is more than one. */
static int split_control(struct proxy_sd_socket *out, int n, struct proxy_sd_socket *control,
                         char *err, size_t errlen)
{
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (out[i].addr.ss_family != AF_UNIX) {
            out[kept++] = out[i];
            continue;
        }
        if (control->fd >= 0) {
            snprintf(err, errlen,
                     "fd %d and fd %d passed by socket activation (LISTEN_FDS) are both Unix "
                     "sockets; wtproxy takes one, its control socket: give the socket unit one "
                     "ListenStream=%%t/wtproxy/control.sock",
                     control->fd, out[i].fd);
            return -1;
        }
        *control = out[i];
    }
    return kept;
}

int proxy_sd_listen_fds(struct proxy_sd_socket *out, int max, struct proxy_sd_socket *control,
                        char *note, size_t notelen, char *err, size_t errlen)
{
    memset(control, 0, sizeof *control);
    control->fd = -1;
    int n = parse_env(getenv("LISTEN_PID"), getenv("LISTEN_FDS"), getenv("LISTEN_FDNAMES"),
                      (long)getpid(), out, max, note, notelen, err, errlen);
    /* Unset whatever the outcome: the dev servers the daemon starts must
     * never take these for their own (sd_listen_fds' unset_environment). */
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    for (int i = 0; i < n; i++) {
        int flags = fcntl(out[i].fd, F_GETFD);
        if (flags < 0 || fcntl(out[i].fd, F_SETFD, flags | FD_CLOEXEC) < 0)
            return refuse(&out[i], "not open", err, errlen);
    }
    for (int i = 0; i < n; i++)
        if (check_fd(&out[i], err, errlen) < 0)
            return -1;
    return split_control(out, n, control, err, errlen);
}
