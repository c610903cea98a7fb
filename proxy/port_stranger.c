/* port_stranger.c - see port_stranger.h. Whose a socket is comes from the
 * kernel (the uid in /proc/net/tcp, host_port_owner_find); whether it is a
 * wtproxy daemon, from asking it as its dashboard would be asked: GET
 * /__wtproxy/api/daemon, which a daemon answers with its version and pid,
 * to another user with its 403 naming its uid and pid (proxy/DASHBOARD.md).
 * A program that answers that path with that JSON is a wtproxy daemon, or
 * one that wants to be taken for one; nothing cheaper is as honest, and the
 * daemon's control socket is its user's alone. */
#include "port_stranger.h"

#include <errno.h>
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PROBE_REPLY_MAX 8192 /* the /api/daemon answer is about 400 bytes */

/* Wait until fd is ready for events, or the deadline (host_mono_ms) passes.
 * Returns 1 when ready, 0 when not. */
static int wait_fd(int fd, short events, long long deadline)
{
    struct pollfd p = {.fd = fd, .events = events};
    long long left;
    int n;

    while ((left = deadline - host_mono_ms()) > 0) {
        n = poll(&p, 1, (int)left);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return 0;
    }
    return 0;
}

/* Connect to addr:port (a numeric address), bounded by deadline. Returns
 * the connected socket, or -1. */
static int probe_connect(const char *addr, int port, long long deadline)
{
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
                             .ai_socktype = SOCK_STREAM},
                    *ai;
    char service[16];
    int fd, err = 0;
    socklen_t len = sizeof err;

    snprintf(service, sizeof service, "%d", port);
    if (getaddrinfo(addr, service, &hints, &ai) != 0)
        return -1;
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 &&
        (errno != EINPROGRESS || !wait_fd(fd, POLLOUT, deadline) ||
         getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0)) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

/* The reply to GET /__wtproxy/api/daemon on fd, read to its end (the
 * request asks the connection to close) into buf. Returns its length, or
 * -1 when it did not come whole by the deadline. */
static ssize_t probe_exchange(int fd, int port, char *buf, size_t len, long long deadline)
{
    char req[128];
    size_t used = 0;
    ssize_t n;
    int reqlen = snprintf(req, sizeof req,
                          "GET /__wtproxy/api/daemon HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                          "Connection: close\r\n\r\n",
                          port);

    if (send(fd, req, (size_t)reqlen, MSG_NOSIGNAL) != reqlen) /* a fresh socket takes 80 bytes */
        return -1;
    while (used < len - 1 && wait_fd(fd, POLLIN, deadline)) {
        n = recv(fd, buf + used, len - 1 - used, 0);
        if (n == 0) {
            buf[used] = '\0';
            return (ssize_t)used;
        }
        if (n < 0 && errno != EINTR && errno != EAGAIN)
            return -1;
        if (n > 0)
            used += (size_t)n;
    }
    return -1;
}

/* The pid a wtproxy daemon listening on addr:port says it has; 0 when
 * nothing there answers as one within WTP_STRANGER_PROBE_MS. */
static long probe_daemon(const char *addr, int port)
{
    long long deadline = host_mono_ms() + WTP_STRANGER_PROBE_MS;
    char buf[PROBE_REPLY_MAX];
    const char *body;
    json_t *j;
    long pid = 0;
    int fd = probe_connect(addr && addr[0] ? addr : "127.0.0.1", port, deadline);

    if (fd < 0)
        return 0;
    if (probe_exchange(fd, port, buf, sizeof buf, deadline) > 0 &&
        (body = strstr(buf, "\r\n\r\n")) && (j = json_loads(body + 4, 0, NULL))) {
        const char *check = json_string_value(json_object_get(j, "check"));
        if (strncmp(buf, "HTTP/1.1 200 ", 13) == 0 && json_is_string(json_object_get(j, "version")))
            pid = (long)json_integer_value(json_object_get(j, "pid"));
        else if (strncmp(buf, "HTTP/1.1 403 ", 13) == 0 && check && strcmp(check, "user") == 0)
            pid = (long)json_integer_value(json_object_get(j, "daemon_pid"));
        json_decref(j);
    }
    close(fd);
    return pid > 0 ? pid : 0;
}

int proxy_port_stranger(const char *addr, int port, const struct host_port_owner *o,
                        struct proxy_port_stranger *s)
{
    const struct passwd *pw;

    if (o->pid != 0 || o->uid == geteuid())
        return 0;
    memset(s, 0, sizeof *s);
    s->uid = o->uid;
    /* getpwuid may ask NSS (LDAP on a shared box): one lookup, off the loop. */
    if ((pw = getpwuid(o->uid)) && pw->pw_name)
        snprintf(s->user, sizeof s->user, "%s", pw->pw_name);
    s->daemon_pid = probe_daemon(addr, port);
    return 1;
}

void proxy_port_stranger_who(const struct proxy_port_stranger *s, char *buf, size_t len)
{
    if (s->daemon_pid && s->user[0])
        snprintf(buf, len, "user %s's wtproxy daemon (uid %ld, pid %ld)", s->user, (long)s->uid,
                 s->daemon_pid);
    else if (s->daemon_pid)
        snprintf(buf, len, "the wtproxy daemon of uid %ld (pid %ld)", (long)s->uid, s->daemon_pid);
    else if (s->user[0])
        snprintf(buf, len, "a process of user %s (uid %ld)", s->user, (long)s->uid);
    else
        snprintf(buf, len, "a process of uid %ld", (long)s->uid);
}

void proxy_port_stranger_fix(const struct proxy_port_stranger *s, int port, const char *serve,
                             const char *tests, char *buf, size_t len)
{
    char who[80];

    if (s->user[0])
        snprintf(who, sizeof who, "%s", s->user);
    else
        snprintf(who, sizeof who, "uid %ld", (long)s->uid);
    /* Only its user may stop another user's daemon, and a daemon serves
     * its own user's worktrees only: the port is theirs until they stop
     * it, and a port of one's own means the app's tests must use it. */
    if (s->daemon_pid)
        snprintf(buf, len, "as %s: wtproxy stop --daemon; or serve a port of your own: %s, and %s",
                 who, serve, tests);
    else
        snprintf(buf, len,
                 "ask %s to stop it (root sees which: sudo ss -ltnp 'sport = :%d'); or serve a "
                 "port of your own: %s, and %s",
                 who, port, serve, tests);
}
