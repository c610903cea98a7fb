/* test_stream.c - proxy/stream_io.c's direct writes (stream_send,
 * stream_send_from) on loopback TCP: the bytes leave in order, and a write
 * that fails outright is reported with its own errno, not that of a second
 * write (ECONNRESET from a peer's reset, where writing again says EPIPE).
 * Includes the .c files to reach their statics. */
#include "../../proxy/stream.c"
#include "../../proxy/stream_io.c"

#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>

#include "tap.h"

static int events, event_what, event_errno;

static void on_event(struct stream *s, short what, void *arg)
{
    (void)s;
    (void)arg;
    events++;
    event_what = what;
    event_errno = errno;
}

/* A connected loopback pair: the returned end, and the peer's in *peer. */
static int tcp_pair(int *peer)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0);
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&a, &len) || connect(c, (struct sockaddr *)&a, len)) {
        perror("tcp_pair");
        exit(1);
    }
    *peer = accept(l, NULL, NULL);
    close(l);
    return c;
}

/* The peer resets the connection; returns once the reset has arrived (the
 * socket reports an error), so the next write fails at once. */
static void reset_by_peer(int fd, int peer)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    struct pollfd p = {.fd = fd};
    setsockopt(peer, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(peer);
    poll(&p, 1, 5000);
}

static struct stream *new_stream(struct event_base *base, int fd)
{
    struct stream *s = stream_new(base, fd);
    stream_setcb(s, NULL, NULL, on_event, NULL);
    events = 0;
    return s;
}

static void test_order(struct event_base *base)
{
    int peer, fd = tcp_pair(&peer);
    struct stream *s = new_stream(base, fd);
    struct evbuffer *from = evbuffer_new();
    char got[64] = {0};
    stream_send(s, "head1 ", 6);
    evbuffer_add(stream_output(s), "head2 ", 6);
    evbuffer_add(from, "body", 4);
    evbuffer_add(from, "+more", 5);
    stream_send_from(s, from, 4);
    event_base_loop(base, EVLOOP_NONBLOCK);
    ok(recv(peer, got, sizeof got - 1, 0) == 16 && strcmp(got, "head1 head2 body") == 0,
       "the queued output, then the bytes sent from a buffer, in order");
    ok(evbuffer_get_length(from) == 5 && stream_output_length(s) == 0 && events == 0,
       "only the bytes asked for taken, nothing left queued, no error");
    evbuffer_free(from);
    stream_free(s);
    close(peer);
}

static void test_reset(struct event_base *base, int from_buffer)
{
    int peer, fd = tcp_pair(&peer);
    struct stream *s = new_stream(base, fd);
    struct evbuffer *from = evbuffer_new();
    reset_by_peer(fd, peer);
    evbuffer_add(from, "body", 4);
    if (from_buffer)
        stream_send_from(s, from, 4);
    else
        stream_send(s, "head", 4);
    event_base_loop(base, EVLOOP_NONBLOCK);
    ok(events == 1 && event_what == (STREAM_WRITING | STREAM_ERROR),
       "%s to a reset peer: one write error reported",
       from_buffer ? "stream_send_from" : "stream_send");
    ok(event_errno == ECONNRESET, "its errno is the first write's, ECONNRESET (got %s)",
       strerror(event_errno));
    evbuffer_free(from);
    stream_free(s);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* as the daemon: a second write would raise it */
    struct event_base *base = event_base_new();
    test_order(base);
    test_reset(base, 0);
    test_reset(base, 1);
    stream_free_spares();
    event_base_free(base);
    return done_testing();
}
