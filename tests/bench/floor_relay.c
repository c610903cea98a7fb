/* floor_relay.c - the floor of the relay benchmark: the least work any
 * proxy that moves bytes with read/write on sockets can do per request.
 *
 * A single-threaded TCP forwarder on edge-triggered epoll: one backend
 * connection per client connection, made when the client is accepted;
 * bytes read from one side are written to the other from one fixed
 * buffer per socket; no HTTP parsing and no allocation after start-up; when
 * either side ends (EOF or error), both sockets are closed. A keep-alive
 * request costs 4 syscalls (read the request, write it, read the response,
 * write it) plus a share of epoll_wait; a `Connection: close` request adds
 * accept, socket, connect, two epoll_ctl and two close, because an HTTP-
 * blind relay cannot know where a response ends and so cannot pool backend
 * connections (nginx and wtproxy can, which saves them the connect).
 *
 * Usage: bench_floor_relay LISTEN_PORT BACKEND_PORT   (both on 127.0.0.1)
 * Prints "listening on 127.0.0.1:PORT" once it accepts; runs until killed. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_FDS 8192
#define BUF_BYTES 16384

/* What one socket read and has not yet written to its peer. */
struct side {
    size_t off, len;
    char buf[BUF_BYTES];
};

static struct side sides[MAX_FDS]; /* touched only for fds in use */
static int peers[MAX_FDS];          /* -1: not a relayed socket */
static struct sockaddr_in backend;
static int ep;

static void close_pair(int fd)
{
    int peer = peers[fd];
    peers[fd] = -1;
    close(fd);
    if (peer >= 0) {
        peers[peer] = -1;
        close(peer);
    }
}

/* Move bytes from src to its peer until src has nothing more now or the
 * peer is full. A read shorter than the buffer drained the socket (with
 * edge triggering, data arriving later is a new event), so it spares the
 * read that would only say EAGAIN; unless src hung up (hup): its EOF
 * must be read now, as no further edge will come.
 * Returns -1 when the pair was closed. */
static int pump(int src, int hup)
{
    struct side *s = &sides[src];
    int dst = peers[src], drained = 0;
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
        if (drained)
            return 0;
        ssize_t n = read(src, s->buf, sizeof s->buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n <= 0)
            goto closed;
        s->len = (size_t)n;
        drained = (size_t)n < sizeof s->buf && !hup;
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

/* Accept every waiting client and connect each to the backend. */
static void accept_all(int lfd)
{
    for (;;) {
        int c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0)
            return; /* EAGAIN, or out of fds: the next edge retries */
        int b = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (b < 0 || c >= MAX_FDS || b >= MAX_FDS) {
            close(c);
            if (b >= 0)
                close(b);
            continue;
        }
        int one = 1;
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(b, (struct sockaddr *)&backend, sizeof backend) < 0 && errno != EINPROGRESS) {
            close(c);
            close(b);
            continue;
        }
        sides[c].off = sides[c].len = sides[b].off = sides[b].len = 0;
        peers[c] = b;
        peers[b] = c;
        if (watch(c) < 0 || watch(b) < 0)
            close_pair(c);
    }
}

/* One event on a relayed fd: its input goes to the peer, and a writable
 * fd takes what the peer read and could not write yet. */
static void on_event(int fd, uint32_t what)
{
    int hup = (what & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
    int peer = peers[fd];
    if (peer < 0)
        return; /* closed earlier in this batch */
    if ((what & EPOLLOUT) && sides[peer].len > sides[peer].off && pump(peer, 0) < 0)
        return;
    if (what & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        pump(fd, hup);
}

static int listen_on(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 4096) < 0)
        return -1;
    return fd;
}

int main(int argc, char **argv)
{
    char *end1 = NULL, *end2 = NULL;
    long lport = argc == 3 ? strtol(argv[1], &end1, 10) : 0;
    long bport = argc == 3 ? strtol(argv[2], &end2, 10) : 0;
    if (argc != 3 || *end1 || *end2 || lport < 1 || lport > 65535 || bport < 1 || bport > 65535) {
        fprintf(stderr, "usage: bench_floor_relay LISTEN_PORT BACKEND_PORT (both on 127.0.0.1)\n");
        return 2;
    }
    backend = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)bport)};
    backend.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max < MAX_FDS ? rl.rlim_max : MAX_FDS;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    int lfd = listen_on((int)lport);
    ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN | EPOLLET, .data.fd = lfd};
    if (lfd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) < 0) {
        fprintf(stderr, "bench_floor_relay: cannot listen on 127.0.0.1:%ld: %s (pick a free port)\n", lport,
                strerror(errno));
        return 1;
    }
    for (int i = 0; i < MAX_FDS; i++)
        peers[i] = -1;
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
