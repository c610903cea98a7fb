/* stream.c - see stream.h: a stream's life (its block, events and
 * buffers, kept for reuse), its settings and its read registration;
 * stream_io.c does the reads and writes. */
#include "stream.h"
#include "stream_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void stream_schedule(struct stream *s)
{
    event_active(s->defer, EV_TIMEOUT, 1);
}

static void in_changed(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg);

/* The input's callback exists only while reads are stopped because the
 * input is full: then a drain must restart them. Otherwise every change to
 * the input (a read, a drain) would run it for nothing: libevent skips a
 * buffer without callbacks at once, and with one runs its loop, about 5% of
 * a keep-alive request's instructions (callgrind). */
static void watch_drains(struct stream *s, int on)
{
    if (on && !s->in_cb)
        s->in_cb = evbuffer_add_cb(s->in, in_changed, s); /* NULL: retried next time */
    else if (!on && s->in_cb) {
        evbuffer_remove_cb_entry(s->in, s->in_cb);
        s->in_cb = NULL;
    }
}

/* Register for input exactly while the owner wants it and there is room. */
void stream_update_read(struct stream *s)
{
    int active = s->want_read && !s->ended && !s->connecting;
    int full = active && s->read_high && evbuffer_get_length(s->in) >= s->read_high;
    int want = active && !full;
    if (want && !s->rev_added)
        s->rev_added = event_add(s->rev, NULL) == 0;
    else if (!want && s->rev_added) {
        event_del(s->rev);
        s->rev_added = 0;
    }
    watch_drains(s, active && full);
}

/* Safe to remove itself from here: libevent takes the next entry first. */
static void in_changed(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
    struct stream *s = arg;
    (void)b;
    if (info->n_deleted && s->want_read && !s->rev_added)
        stream_update_read(s);
}

/* Round n up to what malloc aligns to, so an event can follow it. */
static size_t aligned(size_t n)
{
    size_t a = _Alignof(max_align_t);
    return (n + a - 1) / a * a;
}

/* Blocks of closed streams, with their two emptied evbuffers, kept for the
 * next ones: each Connection: close request made and freed a client
 * stream's block, its two evbuffers and the output's callback entry.
 * Bounded, per loop thread (a stream lives on the loop that made it). Under
 * AddressSanitizer none is kept: a stale pointer to a closed stream must
 * land in freed memory, where ASan catches it. */
#define STREAM_SPARE_MAX 64
#ifdef __SANITIZE_ADDRESS__
#define STREAM_SPARE_KEPT 0
#else
#define STREAM_SPARE_KEPT STREAM_SPARE_MAX
#endif
static _Thread_local struct stream *spare[STREAM_SPARE_MAX];
static _Thread_local int nspare;

/* A spare block with its buffers, or a new zeroed one without (NULL when
 * out of memory). */
static struct stream *block_get(size_t head, size_t size)
{
    if (nspare == 0)
        return calloc(1, size);
    struct stream *s = spare[--nspare];
    struct evbuffer *in = s->in, *out = s->out;
    memset(s, 0, head);
    s->in = in, s->out = out;
    return s;
}

static void block_free(struct stream *s)
{
    if (s->in)
        evbuffer_free(s->in);
    if (s->out)
        evbuffer_free(s->out);
    free(s);
}

/* Keep a closed stream's block, its events deleted and its fd closed, for
 * block_get; or free it. */
static void block_put(struct stream *s)
{
    if (nspare >= STREAM_SPARE_KEPT) {
        block_free(s);
        return;
    }
    watch_drains(s, 0);
    evbuffer_drain(s->in, evbuffer_get_length(s->in));
    evbuffer_drain(s->out, evbuffer_get_length(s->out));
    spare[nspare++] = s;
}

void stream_free_spares(void)
{
    while (nspare > 0)
        block_free(spare[--nspare]);
}

/* The three events live in the stream's block (event_assign), not in three
 * blocks of their own (event_new): one calloc and one free per stream
 * instead of four of each, about 1 200 instructions of a Connection: close
 * request. Their size is asked of libevent at run time, so a newer libevent
 * with a larger struct event still fits. A spare block comes with its
 * evbuffers. */
static struct stream *wrap(struct event_base *base, evutil_socket_t fd)
{
    size_t head = aligned(sizeof(struct stream)), ev = aligned(event_get_struct_event_size());
    struct stream *s = block_get(head, head + 3 * ev);
    if (!s)
        return NULL;
    s->fd = fd;
    s->rev = (struct event *)((char *)s + head);
    s->wev = (struct event *)((char *)s + head + ev);
    s->defer = (struct event *)((char *)s + head + 2 * ev);
    /* Edge-triggered (EPOLLET), as nginx: a level-triggered fd that epoll
     * reported goes back on its ready list and is polled again by the next
     * epoll_wait, for nothing once it is read. libevent cannot mix the two
     * on one fd, so the write side is edge-triggered too (flush writes until
     * EAGAIN or empty). EV_CLOSED asks for EPOLLRDHUP: it says an EOF sits
     * behind the data a short read took, which no later edge would tell.
     * event_assign fails only on arguments these are not. */
    event_assign(s->rev, base, fd, EV_READ | EV_CLOSED | EV_PERSIST | EV_ET, stream_on_readable, s);
    event_assign(s->wev, base, fd, EV_WRITE | EV_PERSIST | EV_ET, stream_on_writable, s);
    /* Persistent though never added: event_active alone schedules it, and
     * libevent unlinks a persistent event from the active queue when it
     * runs instead of calling event_del on it (a one-shot one is deleted
     * after each run, about 90 instructions a keep-alive request). */
    event_assign(s->defer, base, -1, EV_PERSIST, stream_on_defer, s);
    if (s->in)
        return s;
    s->in = evbuffer_new();
    s->out = evbuffer_new();
    if (!s->in || !s->out) {
        block_free(s);
        return NULL;
    }
    return s;
}

struct stream *stream_new(struct event_base *base, evutil_socket_t fd)
{
    struct stream *s = wrap(base, fd);
    if (!s)
        close(fd);
    return s;
}

struct stream *stream_connect(struct event_base *base, const struct sockaddr *sa, socklen_t len,
                              char *err, size_t errlen)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "socket: %s", strerror(e));
        errno = e;
        return NULL;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, sa, len) < 0 && errno != EINPROGRESS) {
        int e = errno;
        snprintf(err, errlen, "%s", strerror(e));
        close(fd);
        errno = e;
        return NULL;
    }
    struct stream *s = stream_new(base, fd);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        errno = ENOMEM;
        return NULL;
    }
    s->connecting = 1;
    s->wev_added = event_add(s->wev, NULL) == 0;
    return s;
}

void stream_free(struct stream *s)
{
    if (!s)
        return;
    /* Only the events that are pending: an event_del of one that is not
     * still costs libevent's checks, about 100 instructions each. rev and wev
     * are active only while added (event_del clears both), and the deferred
     * callback is scheduled exactly while a read is due or a flush that is
     * not listed (stream_flush_soon). */
    if (s->rev_added)
        event_del(s->rev);
    if (s->wev_added)
        event_del(s->wev);
    if (s->read_due || (s->flush_due && !s->flush_listed))
        event_del(s->defer);
    stream_unlist(s);
    if (s->fd >= 0)
        close(s->fd);
    block_put(s);
}

void stream_setcb(struct stream *s, stream_data_cb readcb, stream_data_cb writecb,
                  stream_event_cb eventcb, void *arg)
{
    s->readcb = readcb;
    s->writecb = writecb;
    s->eventcb = eventcb;
    s->arg = arg;
}

struct evbuffer *stream_input(struct stream *s)
{
    return s->in;
}
/* No evbuffer callback watches the output: with one, libevent ran its
 * callback loop on every add and every drain of it, about 800
 * instructions of a keep-alive request (callgrind). Handing the buffer out
 * is taken as the promise of an add instead; a flush due for nothing
 * finds the output empty and does nothing. */
struct evbuffer *stream_output(struct stream *s)
{
    if (!s->wev_added && !s->connecting && !s->flush_due)
        stream_flush_soon(s);
    return s->out;
}

size_t stream_output_length(struct stream *s)
{
    return evbuffer_get_length(s->out);
}
evutil_socket_t stream_fd(struct stream *s)
{
    return s->fd;
}

void stream_enable_read(struct stream *s)
{
    s->want_read = 1;
    stream_update_read(s);
}

void stream_disable_read(struct stream *s)
{
    s->want_read = 0;
    stream_update_read(s);
}

void stream_set_read_high(struct stream *s, size_t high)
{
    s->read_high = high;
    stream_update_read(s);
}

void stream_set_write_low(struct stream *s, size_t low)
{
    s->write_low = low;
}

/* Why a re-arm after the read rather than once per connection: Linux clears
 * TCP_QUICKACK on its own (a socket that sends soon after it receives goes
 * back to delayed ACKs, and quick-ACK mode ends after a few ACKs), and
 * setting it sends the ACK that is pending now, which is the one the
 * sender's Nagle waits for. */
void stream_ack_now(struct stream *s)
{
#ifdef TCP_QUICKACK
    int one = 1;
    setsockopt(s->fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
#else
    (void)s;
#endif
}

void stream_trigger_read(struct stream *s)
{
    s->read_due = 1;
    stream_schedule(s);
}
