/* listener.c - see listener.h. */
#include "listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"
#include "log_flood.h"
#include "port_taken.h"
#include "sd_listen.h"
#include "server.h"

/* Accepted per report at most: the rest waits for the next poll, so that
 * the identification workers' answers (a higher priority) run between:
 * a load test's 1,500 connections at once would otherwise all be accepted
 * before the first answer, each waiting for its process's placement. */
#define ACCEPT_MAX 16

/* Each connection holds two fds (its client's, its backend's); the rest of
 * the daemon (idle pooled backend connections, recent callers' pidfds,
 * inotify, the workers' pipes, control and dashboard clients, logs) keeps
 * pool_size plus FD_RESERVE, or half the limit when that is less (a tiny
 * limit still serves; accept_failed covers the rest). */
#define FD_RESERVE 128
/* After running out of fds, accepting pauses this long (or until a
 * connection ends), and it is said at most once per FD_WARN_MS. */
#define ACCEPT_RETRY_MS 100
#define FD_WARN_MS 10000

static unsigned long long fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
        return 0;
    return (unsigned long long)rl.rlim_cur;
}

void listener_fit_fd_limit(struct proxy_server *s)
{
    unsigned long long limit = fd_limit(), reserve = FD_RESERVE + s->cfg.pool_size;
    unsigned long long fit = (limit - (reserve < limit / 2 ? reserve : limit / 2)) / 2;
    s->max_clients = s->cfg.max_connections;
    if (!limit || fit >= s->cfg.max_connections)
        return;
    s->max_clients = fit ? (unsigned)fit : 1;
    proxy_log("the open-file limit (%llu) holds %u connections at once, fewer than "
              "max_connections (%u): the others wait to be accepted. Raise it: ulimit -Hn %llu "
              "before wtproxy serve, or LimitNOFILE=%llu in its systemd unit",
              limit, s->max_clients, s->cfg.max_connections,
              2ULL * s->cfg.max_connections + reserve, 2ULL * s->cfg.max_connections + reserve);
}

static void accept_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    struct proxy_server *s = arg;
    (void)fd;
    (void)what;
    if (!s->stopping && s->nclients < s->max_clients)
        listener_set_accepting(s, 1);
}

/* Out of fds (or kernel memory): the pending connection stays queued and
 * the listener would be reported again at once, forever (a busy loop
 * writing this line). So accepting pauses until a connection ends
 * (proxy_server_client_gone) or ACCEPT_RETRY_MS passed. */
static void accept_failed(struct proxy_server *s, int err)
{
    if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM) {
        char line[128];
        snprintf(line, sizeof line, "accept failed: %s", strerror(err));
        log_flood_line(s->flood, line, "%s", line);
        return;
    }
    listener_set_accepting(s, 0);
    static const struct timeval retry = {0, ACCEPT_RETRY_MS * 1000};
    evtimer_add(s->accept_retry, &retry);
    unsigned long long now = proxy_now_ms(s);
    if (s->fd_warned_ms && now - s->fd_warned_ms < FD_WARN_MS)
        return;
    s->fd_warned_ms = now;
    proxy_log("cannot accept a connection: %s, with %u connection(s) open (open-file limit "
              "%llu): new connections wait until one ends. Raise the limit (ulimit -Hn before "
              "wtproxy serve, LimitNOFILE= in its systemd unit) or lower max_connections",
              strerror(err), s->nclients, fd_limit());
}

/* Accept until the backlog is empty (accept4 says EAGAIN) or ACCEPT_MAX
 * were taken (level-triggered: the rest is reported again). One connection
 * per report instead, as nginx without multi_accept, cost an epoll_wait per
 * connection under load (8.2 syscalls a Connection: close request at -c50
 * became 9.1). What libevent's evconnlistener did, without its wrapper and
 * locking (about 200 instructions a connection). Accepted sockets are
 * close-on-exec, so that a dev server the daemon starts does not inherit
 * its callers' connections. */
static void on_acceptable(evutil_socket_t lfd, short what, void *arg)
{
    struct proxy_listener *l = arg;
    struct proxy_server *s = l->srv;
    (void)what;
    for (int n = 0; s->accepting && n < ACCEPT_MAX; n++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int fd = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
            continue;
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                accept_failed(s, errno);
            return;
        }
        proxy_client_accept(s, l, fd, (struct sockaddr *)&ss);
        if (s->nclients >= s->max_clients)
            listener_set_accepting(s, 0);
    }
}

static int is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

static int parse_addr(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len)
{
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    memset(ss, 0, sizeof *ss);
    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        *len = sizeof *in4;
        return 0;
    }
    if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        *len = sizeof *in6;
        return 0;
    }
    return -1;
}

static void name_of(const char *host, int port, int v6, char *buf, size_t len)
{
    snprintf(buf, len, v6 ? "[%s]:%d" : "%s:%d", host, port);
}

static int port_of(const struct sockaddr_storage *ss)
{
    return ntohs(ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)ss)->sin6_port
                                           : ((const struct sockaddr_in *)ss)->sin_port);
}

/* Serve the listening, non-blocking socket fd bound to ss (the listener
 * owns it from here, also on error); origin ends the "listening on" line.
 * Returns the port, or -1 with err. */
static int add_listener(struct proxy_server *s, int fd, const struct sockaddr_storage *ss,
                        const char *origin, char *err, size_t errlen)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int v6 = ss->ss_family == AF_INET6, bound = port_of(ss);
    inet_ntop(ss->ss_family,
              v6 ? (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr
                 : (const void *)&((const struct sockaddr_in *)ss)->sin_addr,
              host, sizeof host);
    struct proxy_listener *l = &s->listeners[s->nlisteners];
    int one = 1;
    l->srv = s;
    l->port = bound;
    /* Set once here rather than on each accepted socket (Linux copies it
     * to them): one setsockopt less per connection. */
    l->nodelay = setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0;
    name_of(host, bound, v6, l->name, sizeof l->name);
    l->fd = fd;
    l->ev = event_new(s->base, fd, EV_READ | EV_PERSIST, on_acceptable, l);
    if (!l->ev || event_add(l->ev, NULL) < 0) {
        if (l->ev)
            event_free(l->ev);
        close(fd);
        snprintf(err, errlen, "cannot listen on %s: out of memory", l->name);
        return -1;
    }
    s->nlisteners++;
    if (!is_loopback((const struct sockaddr *)ss)) {
        char fix[160];
        if (origin[0])
            snprintf(fix, sizeof fix,
                     "Give the socket unit loopback addresses only "
                     "(ListenStream=127.0.0.1:%d and [::1]:%d).",
                     bound, bound);
        else
            snprintf(fix, sizeof fix, "Use --listen %d for loopback only.", bound);
        proxy_log("WARNING: listening on %s, which is not loopback: anyone who can reach this "
                  "machine can use your dev servers. %s",
                  l->name, fix);
    }
    proxy_log("listening on %s%s", l->name, origin);
    return bound;
}

/* The sentence for host:port in use, whose other port is none of the
 * ports this daemon is to serve besides: `serve --listen 8440 --listen
 * 8441` with 8440 taken offered 8441, the other front it serves already. */
static void taken(const struct proxy_server *s, const char *host, int port, char *err,
                  size_t errlen)
{
    int ports[WTP_MAX_LISTEN];
    for (int i = 0; i < s->cfg.nlisten; i++)
        ports[i] = s->cfg.listen[i].port;
    proxy_port_taken(host, port, ports, s->cfg.nlisten, err, errlen);
}

/* Bind one address. Returns the port bound, -1 on error (err filled), or
 * -2 when the address family is not available here (no IPv6). */
static int open_one(struct proxy_server *s, const char *host, int port, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (parse_addr(host, port, &ss, &len) < 0) {
        snprintf(err, errlen, "listen address \"%s\" is not an IP address", host);
        return -1;
    }
    int v6 = ss.ss_family == AF_INET6, one = 1;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 && v6 && errno == EAFNOSUPPORT)
        return -2;
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (v6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    /* The whole backlog the kernel allows (net.core.somaxconn; 4096 by
     * default): a test runner opening 1,500 connections while the loop is
     * busy must find them all queued. With 511 (nginx's default) the rest
     * had their SYN dropped and waited 1 s or more for a retransmission
     * (test 304). systemd's Backlog= defaults to the same. */
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, SOMAXCONN) < 0) {
        int e = errno;
        close(fd);
        if (v6 && (e == EADDRNOTAVAIL || e == EAFNOSUPPORT))
            return -2;
        if (e == EADDRINUSE)
            taken(s, host, port, err, errlen);
        else
            snprintf(err, errlen,
                     "cannot listen on %s port %d: %s; serve an address of this "
                     "machine and a port you may bind (ports below 1024 need root): wtproxy "
                     "serve --listen 127.0.0.1:%d",
                     host, port, strerror(e), port < 1024 ? 8000 : port);
        return -1;
    }
    getsockname(fd, (struct sockaddr *)&ss, &len);
    return add_listener(s, fd, &ss, "", err, errlen);
}

/* Serve the sockets systemd passed (already checked by sd_listen.c)
 * instead of the configured addresses: systemd owns the port, before this
 * daemon ran and after it stops. */
static int adopt_inherited(struct proxy_server *s, char *err, size_t errlen)
{
    char origin[128];
    for (int i = 0; i < s->ninherited; i++) {
        const struct proxy_sd_socket *sd = &s->inherited[i];
        snprintf(origin, sizeof origin, " (fd %d%s%s, socket activation)", sd->fd,
                 sd->name[0] ? " " : "", sd->name);
        if (add_listener(s, sd->fd, &sd->addr, origin, err, errlen) < 0)
            return -1;
    }
    proxy_log("socket activation: serving the %d socket(s) passed in LISTEN_FDS; the configured "
              "listen addresses are not bound (the socket unit's ListenStream= lines decide)",
              s->ninherited);
    s->accepting = 1;
    return 0;
}

int listener_open_all(struct proxy_server *s, char *err, size_t errlen)
{
    if (!(s->accept_retry = evtimer_new(s->base, accept_retry_cb, s))) {
        snprintf(err, errlen, "cannot listen: out of memory");
        return -1;
    }
    listener_fit_fd_limit(s);
    if (s->ninherited > 0)
        return adopt_inherited(s, err, errlen);
    for (int i = 0; i < s->cfg.nlisten; i++) {
        const struct proxy_listen *pl = &s->cfg.listen[i];
        if (pl->host[0]) {
            if (open_one(s, pl->host, pl->port, err, errlen) < 0)
                return -1;
            continue;
        }
        int port = open_one(s, "127.0.0.1", pl->port, err, errlen);
        if (port < 0)
            return -1;
        /* ::1 on the same port, so localhost works whichever family a
         * client resolves it to; a machine without IPv6 keeps 127.0.0.1. */
        int r = open_one(s, "::1", port, err, errlen);
        if (r == -1)
            return -1;
        if (r == -2)
            proxy_log("no IPv6 loopback here: serving 127.0.0.1:%d only", port);
    }
    s->accepting = 1;
    return 0;
}

void listener_close_all(struct proxy_server *s)
{
    for (int i = 0; i < s->nlisteners; i++) {
        event_free(s->listeners[i].ev);
        close(s->listeners[i].fd);
    }
    s->nlisteners = 0;
    s->accepting = 0;
    if (s->accept_retry)
        event_free(s->accept_retry);
    s->accept_retry = NULL;
}

void listener_set_accepting(struct proxy_server *s, int on)
{
    if (s->accepting == on)
        return;
    for (int i = 0; i < s->nlisteners; i++) {
        if (on)
            event_add(s->listeners[i].ev, NULL);
        else
            event_del(s->listeners[i].ev);
    }
    s->accepting = on;
}
