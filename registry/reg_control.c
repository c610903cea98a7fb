/* reg_control.c - see reg_control.h. */
#include "reg_control.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "host.h"

#define REG_PEER_IDLE_S 10 /* a silent peer is closed */

struct reg_peer {
    struct reg_control *rc;
    struct bufferevent *bev; /* NULL: gone while its reply was pending */
    uid_t uid;
    pid_t pid;      /* as SO_PEERCRED said at its connect */
    int waiting;    /* a request line's reply is pending */
    int in_handler; /* the handler runs for it now */
    TAILQ_ENTRY(reg_peer) link;
};

struct reg_control {
    struct event_base *base;
    struct evconnlistener *listener;
    TAILQ_HEAD(, reg_peer) peers; /* connected CLIs, freed with the socket */
    reg_control_handler handler;
    void *arg;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int inherited;       /* the socket (and its file) belong to systemd */
    struct event *retry; /* accepting again after accept(2) failed */
    long long said_ms;   /* when that was last said (host_mono_ms) */
};

/* After accept(2) failed for want of fds or memory, the control socket
 * rests this long: the pending connection stays queued, and libevent would
 * otherwise report it again at once, forever (a busy loop, a warning each
 * time). The CLI on the other end waits meanwhile. */
#define RETRY_MS 100

static void read_lines(struct reg_peer *p);

static void reply(struct reg_peer *p, const char *line)
{
    struct evbuffer *out = bufferevent_get_output(p->bev);
    if (!line)
        line = "{\"ok\":false,\"error\":\"internal\",\"message\":\"out of memory\"}";
    evbuffer_add(out, line, strlen(line));
    evbuffer_add(out, "\n", 1);
}

static void reply_too_large(struct reg_peer *p, const char *more)
{
    char line[160];
    snprintf(line, sizeof line,
             "{\"ok\":false,\"error\":\"too-large\",\"message\":\"a request line is at "
             "most %d bytes%s\"}",
             REG_LINE_MAX, more);
    reply(p, line);
}

static void peer_free(struct reg_peer *p)
{
    TAILQ_REMOVE(&p->rc->peers, p, link);
    if (p->bev)
        bufferevent_free(p->bev);
    free(p);
}

static void set_idle_timeout(struct reg_peer *p, int on)
{
    struct timeval idle = {REG_PEER_IDLE_S, 0};
    bufferevent_set_timeouts(p->bev, on ? &idle : NULL, NULL);
}

pid_t reg_peer_pid(const struct reg_peer *p)
{
    return p ? p->pid : 0;
}

void reg_control_reply(struct reg_peer *p, char *line)
{
    p->waiting = 0;
    if (!p->bev) {
        free(line);
        peer_free(p);
        return;
    }
    reply(p, line);
    free(line);
    if (p->in_handler)
        return; /* read_lines goes on with the next line */
    set_idle_timeout(p, 1);
    read_lines(p);
}

/* After the last reply is written, close: for a line too long to read. */
static void close_when_written(struct bufferevent *bev, void *arg)
{
    (void)bev;
    peer_free(arg);
}

/* Serve p's buffered lines, one at a time: a line whose reply is pending
 * holds the rest (silence is not idleness then: no timeout). */
static void read_lines(struct reg_peer *p)
{
    struct bufferevent *bev = p->bev;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t len;
    char *line;
    while (!p->waiting && (line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF))) {
        if (len >= REG_LINE_MAX) {
            reply_too_large(p, "");
        } else {
            p->waiting = p->in_handler = 1;
            p->rc->handler(p->rc->arg, p, p->uid, line, len);
            p->in_handler = 0;
        }
        free(line);
    }
    if (p->waiting) {
        set_idle_timeout(p, 0);
        return;
    }
    if (evbuffer_get_length(in) >= REG_LINE_MAX) {
        reply_too_large(p, "; closing");
        bufferevent_disable(bev, EV_READ);
        bufferevent_setcb(bev, NULL, close_when_written, NULL, p);
    }
}

static void peer_read(struct bufferevent *bev, void *arg)
{
    struct reg_peer *p = arg;
    (void)bev;
    if (!p->waiting)
        read_lines(p);
}

static void peer_event(struct bufferevent *bev, short what, void *arg)
{
    struct reg_peer *p = arg;
    (void)what;
    if (!p->waiting) {
        peer_free(p); /* EOF, error, or silent for REG_PEER_IDLE_S */
        return;
    }
    bufferevent_free(bev); /* the pending reply frees p */
    p->bev = NULL;
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    struct reg_control *rc = arg;
    struct ucred cred;
    socklen_t clen = sizeof cred;
    (void)l;
    (void)sa;
    (void)salen;
    struct reg_peer *p = calloc(1, sizeof *p);
    if (!p || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 ||
        !(p->bev = bufferevent_socket_new(rc->base, fd, BEV_OPT_CLOSE_ON_FREE))) {
        free(p);
        close(fd);
        return;
    }
    p->rc = rc;
    p->uid = cred.uid;
    p->pid = cred.pid;
    TAILQ_INSERT_TAIL(&rc->peers, p, link);
    bufferevent_setwatermark(p->bev, EV_READ, 0, REG_LINE_MAX + 1);
    bufferevent_setcb(p->bev, peer_read, NULL, peer_event, p);
    set_idle_timeout(p, 1);
    bufferevent_enable(p->bev, EV_READ | EV_WRITE);
}

static void accept_again(evutil_socket_t fd, short what, void *arg)
{
    struct reg_control *rc = arg;
    (void)fd;
    (void)what;
    evconnlistener_enable(rc->listener);
}

static void accept_failed(struct evconnlistener *l, void *arg)
{
    static const struct timeval rest = {0, RETRY_MS * 1000};
    struct reg_control *rc = arg;
    long long now = host_mono_ms();
    if (!rc->said_ms || now - rc->said_ms >= 10000) {
        rc->said_ms = now;
        fprintf(stderr,
                "wtproxy: control socket: cannot accept a connection: %s; commands wait. Raise "
                "the open-file limit (ulimit -Hn before wtproxy serve, LimitNOFILE= in its "
                "systemd unit) or lower max_connections\n",
                strerror(errno));
    }
    evconnlistener_disable(l);
    evtimer_add(rc->retry, &rest);
}

/* A socket file left by a daemon that died is replaced; one a daemon still
 * answers on means another daemon serves it: after an upgrade, the old one,
 * which the pasted `setsid -f wtproxy serve` met in the background, its
 * reason only in the log, so the stop is said whole. */
static int claim_socket_path(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof sun) == 0) {
        close(fd);
        snprintf(err, errlen,
                 "another wtproxy daemon already serves %s (wtproxy doctor says whether it is "
                 "another build); stop it first, then run this command again: wtproxy stop "
                 "--daemon; or give this one --control PATH",
                 path);
        return -1;
    }
    if (fd >= 0)
        close(fd);
    if (unlink(path) < 0 && errno != ENOENT) {
        snprintf(err, errlen,
                 "cannot replace %s: %s; remove it (rm %s), or give this daemon "
                 "another: --control PATH",
                 path, strerror(errno), path);
        return -1;
    }
    return 0;
}

struct reg_control *reg_control_new(struct event_base *base, const char *path, int fd,
                                    reg_control_handler handler, void *arg, char *err,
                                    size_t errlen)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sun.sun_path) {
        snprintf(err, errlen,
                 "control socket path too long: %s; give a shorter one: --control "
                 "PATH",
                 path);
        return NULL;
    }
    if (fd < 0 && claim_socket_path(path, err, errlen) < 0)
        return NULL;
    struct reg_control *rc = calloc(1, sizeof *rc);
    if (!rc) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    rc->base = base;
    rc->handler = handler;
    rc->arg = arg;
    TAILQ_INIT(&rc->peers);
    memcpy(rc->path, path, strlen(path) + 1);
    memcpy(sun.sun_path, path, strlen(path) + 1);
    rc->inherited = fd >= 0;
    if (rc->inherited)
        rc->listener = evconnlistener_new(base, accept_cb, rc, LEV_OPT_CLOSE_ON_FREE, -1, fd);
    else
        rc->listener = evconnlistener_new_bind(base, accept_cb, rc,
                                               LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 64,
                                               (struct sockaddr *)&sun, sizeof sun);
    if (!rc->listener) {
        snprintf(err, errlen,
                 "cannot serve the control socket %s: %s; give one in a folder of "
                 "yours: --control PATH",
                 path, strerror(errno));
        free(rc);
        return NULL;
    }
    if (!(rc->retry = evtimer_new(base, accept_again, rc))) {
        snprintf(err, errlen, "cannot serve the control socket %s: out of memory", path);
        reg_control_free(rc);
        return NULL;
    }
    evconnlistener_set_error_cb(rc->listener, accept_failed);
    return rc;
}

/* The last replies (ops the stopping daemon answered "stopping") were
 * queued after the loop's last turn: written now, as far as the socket
 * takes them without waiting, or their peers would never read them. The
 * bufferevent's output cannot be drained by us (libevent freezes its
 * start), so its bytes are sent as they are; it is freed next. */
static void flush_last(struct reg_peer *p)
{
    struct evbuffer *out = bufferevent_get_output(p->bev);
    size_t n = evbuffer_get_length(out);
    if (n) /* a peer that went gets nothing: nobody to tell */
        send(bufferevent_getfd(p->bev), evbuffer_pullup(out, -1), n, MSG_NOSIGNAL);
}

void reg_control_free(struct reg_control *rc)
{
    if (!rc)
        return;
    struct reg_peer *p;
    TAILQ_FOREACH(p, &rc->peers, link)
        if (p->bev)
            flush_last(p);
    while (!TAILQ_EMPTY(&rc->peers))
        peer_free(TAILQ_FIRST(&rc->peers));
    evconnlistener_free(rc->listener);
    if (rc->retry)
        event_free(rc->retry);
    if (!rc->inherited) /* systemd keeps listening there, to start the next daemon */
        unlink(rc->path);
    free(rc);
}
