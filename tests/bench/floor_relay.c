/* floor_relay.c - the floor of the relay benchmark: the least work any
 * proxy that moves bytes with read/write on sockets can do per request.
 *
 * A single-threaded relay on edge-triggered epoll, one fixed buffer per
 * socket, no allocation after start-up. Which of two ways a client is
 * relayed follows its first request, as in relay.sh every connection of a
 * run sends the same kind (wrk -H 'Connection: close' or not); deciding per
 * connection lets one target give both rows of the report:
 *
 * - Keep-alive (no `Connection: close` in the first read): a TCP forwarder.
 *   A backend connection is opened for the client and paired with it; bytes
 *   go through unparsed; when either side ends, both are closed. A request
 *   costs 4 syscalls (read the request, write it, read the response, write
 *   it) plus a share of epoll_wait.
 * - `Connection: close`: a pooling relay, doing the least HTTP work that
 *   lets it reuse backend connections as nginx and wtproxy do. The request's
 *   `Connection: close` line is cut out (so the backend keeps the connection
 *   open), and a backend connection is taken from the idle pool (opened when
 *   the pool is empty). The response head must arrive in one read (the
 *   bench's are ~250 bytes): its Content-Length says where the response
 *   ends, and its Connection line becomes `Connection: close` (added when
 *   absent) so the client knows the server closes. Once the body is written,
 *   the client is closed and the backend connection goes back to the pool
 *   (unless the backend said close). A request costs accept4, epoll_ctl ADD,
 *   read and write each way, and close: 7 syscalls plus a share of
 *   epoll_wait; no TCP_NODELAY on the client (one write then close: Nagle
 *   never holds a first segment). A response without Content-Length, a head
 *   split over reads, or a body longer than announced closes both sides:
 *   the client sees a short answer (wrk counts it), never a wrong one.
 * The pool keeps every idle connection (at most the clients' concurrency,
 * as relay.sh's POOL is above every shape's connections); one that the
 * backend closes while idle is dropped when its hang-up is reported.
 *
 * Usage: bench_floor_relay LISTEN_PORT BACKEND_PORT   (both on 127.0.0.1)
 * Prints "listening on 127.0.0.1:PORT" once it accepts; runs until killed. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "floor_http.h"
#include "floor_setup.h"

#define MAX_FDS 8192
#define BUF_BYTES 16384

/* What one socket read and has not yet written to its peer. */
struct side {
    size_t off, len;
    char buf[BUF_BYTES];
};

enum role {
    R_FREE,   /* not in use */
    R_NEW,    /* accepted client, first request not read yet */
    R_PAIRED, /* either end of a keep-alive forwarding pair */
    R_CLIENT, /* a Connection: close client */
    R_POOLED, /* a backend connection of the pool, busy or idle */
};

struct conn {
    int peer;    /* -1: none (closed, or idle in the pool) */
    int idle_at; /* index in idle[] while idle, else -1 */
    enum role role;
    int reuse;      /* R_POOLED: the current response keeps the connection */
    long long left; /* R_POOLED: body bytes still to come; -1: head not read */
};

static struct side sides[MAX_FDS]; /* touched only for fds in use */
static struct conn conns[MAX_FDS];
static int idle[MAX_FDS], idle_n;
static struct sockaddr_in backend;
static int ep;

static void forget(int fd)
{
    conns[fd] = (struct conn){.peer = -1, .idle_at = -1, .role = R_FREE};
    close(fd);
}

static void close_pair(int fd)
{
    int peer = conns[fd].peer;
    forget(fd);
    if (peer >= 0)
        forget(peer);
}

static void pool_drop(int b)
{
    int at = conns[b].idle_at;
    idle[at] = idle[--idle_n];
    conns[idle[at]].idle_at = at;
    forget(b);
}

/* The response on backend b is written out: close its client; b goes back
 * to the pool if the response left it open. */
static void finish(int b)
{
    forget(conns[b].peer);
    conns[b].peer = -1;
    if (!conns[b].reuse) {
        forget(b);
        return;
    }
    conns[b].idle_at = idle_n;
    idle[idle_n++] = b;
}

/* The start of a response just read into s by pooled backend b
 * (floor_http.h). Returns -1 when it cannot be relayed this way. */
static int pooled_head(int b, struct side *s)
{
    conns[b].left = response_head(s->buf, &s->len, &conns[b].reuse);
    return conns[b].left < 0 ? -1 : 0;
}

/* Count n bytes just read by pooled backend b. Returns -1 on a response
 * the pool cannot reuse the connection after. */
static int response_bytes(int b, struct side *s, size_t n)
{
    if (conns[b].left < 0)
        return pooled_head(b, s);
    conns[b].left -= (long long)n;
    return conns[b].left < 0 ? -1 : 0;
}

/* Move bytes from src to its peer until src has nothing more now or the
 * peer is full. A read shorter than the buffer drained the socket (with
 * edge triggering, data arriving later is a new event), so it spares the
 * read that would only say EAGAIN (drained: the caller's read was such);
 * unless src hung up (hup): its EOF must be read now, as no further edge
 * will come. A pooled backend whose response is complete reads no more:
 * once it is written, finish() ends the client.
 * Returns -1 when src is no longer relaying. */
static int pump(int src, int hup, int drained)
{
    struct side *s = &sides[src];
    int dst = conns[src].peer, pooled = conns[src].role == R_POOLED;
    /* a pooled head may grow by the Connection line it gains */
    size_t room = pooled ? sizeof s->buf - CONN_CLOSE_LEN : sizeof s->buf;
    for (;;) {
        while (s->len > s->off) {
            ssize_t n = write(dst, s->buf + s->off, s->len - s->off);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && errno == EAGAIN)
                return 0; /* dst's EPOLLOUT edge resumes us */
            if (n <= 0)
                goto closed;
            s->off += (size_t)n;
        }
        s->off = s->len = 0;
        if (pooled && conns[src].left == 0) {
            finish(src);
            return -1;
        }
        if (drained)
            return 0;
        ssize_t n = read(src, s->buf, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n <= 0)
            goto closed;
        s->len = (size_t)n;
        drained = (size_t)n < room && !hup;
        if (pooled && response_bytes(src, s, (size_t)n) < 0)
            goto closed;
    }
closed:
    close_pair(src);
    return -1;
}

static int watch(int fd)
{
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.fd = fd};
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* A new backend connection (connect in progress), watched; -1 on failure. */
static int backend_open(void)
{
    int one = 1, b = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (b < 0)
        return -1;
    if (b >= MAX_FDS ||
        (connect(b, (struct sockaddr *)&backend, sizeof backend) < 0 && errno != EINPROGRESS) ||
        watch(b) < 0) {
        close(b);
        return -1;
    }
    setsockopt(b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sides[b].off = sides[b].len = 0;
    return b;
}

/* The first read of client c decides how it is relayed (see the top), then
 * the request goes to its backend. */
static void first_request(int c, int hup)
{
    struct side *s = &sides[c];
    ssize_t n = read(c, s->buf, sizeof s->buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return; /* a stale report: the next edge comes back here */
    if (n <= 0) {
        forget(c);
        return;
    }
    s->off = 0, s->len = (size_t)n;
    char *cl = request_close_line(s->buf, s->len);
    int b = -1;
    if (cl) {
        request_cut_line(s->buf, &s->len, cl);
        b = idle_n ? idle[--idle_n] : backend_open();
        if (b >= 0)
            conns[b] = (struct conn){.peer = c, .idle_at = -1, .role = R_POOLED, .left = -1};
        conns[c].role = R_CLIENT;
    } else {
        int one = 1;
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        b = backend_open();
        if (b >= 0)
            conns[b] = (struct conn){.peer = c, .idle_at = -1, .role = R_PAIRED};
        conns[c].role = R_PAIRED;
    }
    if (b < 0) {
        forget(c);
        return;
    }
    conns[c].peer = b;
    pump(c, hup, (size_t)n < sizeof s->buf && !hup);
}

/* Accept every waiting client; its backend waits for its first request. */
static void accept_all(int lfd)
{
    for (;;) {
        int c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0)
            return; /* EAGAIN, or out of fds: the next edge retries */
        if (c >= MAX_FDS) {
            close(c);
            continue;
        }
        conns[c] = (struct conn){.peer = -1, .idle_at = -1, .role = R_NEW};
        if (watch(c) < 0)
            forget(c);
    }
}

/* One event on a relayed fd: its input goes to the peer, and a writable
 * fd takes what the peer read and could not write yet. An idle pooled
 * connection that turns readable was closed by the backend (or sent what
 * no request asked for): it leaves the pool. */
static void on_event(int fd, uint32_t what)
{
    int hup = (what & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
    int in = (what & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
    char byte;
    if (conns[fd].idle_at >= 0) {
        if (in && !(recv(fd, &byte, 1, MSG_PEEK) < 0 && errno == EAGAIN))
            pool_drop(fd);
        return;
    }
    if (conns[fd].role == R_NEW) {
        if (in)
            first_request(fd, hup);
        return;
    }
    int peer = conns[fd].peer;
    if (peer < 0)
        return; /* closed earlier in this batch */
    if ((what & EPOLLOUT) && sides[peer].len > sides[peer].off && pump(peer, 0, 0) < 0)
        return;
    if (in)
        pump(fd, hup, 0);
}

int main(int argc, char **argv)
{
    long lport;
    int bad = floor_args(argc, argv, "bench_floor_relay", MAX_FDS, &lport, &backend);
    if (bad)
        return bad;
    int lfd = floor_listen(lport, SOCK_NONBLOCK);
    ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN | EPOLLET, .data.fd = lfd};
    if (lfd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) < 0) {
        fprintf(stderr,
                "bench_floor_relay: cannot listen on 127.0.0.1:%ld: %s (pick a free port)\n", lport,
                strerror(errno));
        return 1;
    }
    for (int i = 0; i < MAX_FDS; i++)
        conns[i] = (struct conn){.peer = -1, .idle_at = -1, .role = R_FREE};
    fprintf(stderr, "listening on 127.0.0.1:%ld\n", lport);
    static struct epoll_event evs[512];
    for (;;) {
        int n = epoll_wait(ep, evs, 512, -1);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.fd == lfd)
                accept_all(lfd);
            else
                on_event(evs[i].data.fd, evs[i].events);
        }
    }
}
