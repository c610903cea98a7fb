/* stream_io.c - a stream's reads and writes (see stream.h): a short read
 * means the socket is empty, a full one or an EOF behind the data schedules
 * the next; writes go until EAGAIN; small reads through one shared buffer.
 * stream.c has the stream's life and settings. */
#include "stream_int.h"

#include <errno.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* A bulk read goes straight into space reserved in the input. */
static ssize_t read_reserved(struct stream *s, size_t want)
{
    struct evbuffer_iovec v[2];
    struct iovec iov[2];
    int n = evbuffer_reserve_space(s->in, (ev_ssize_t)want, v, 2);
    for (int i = 0; i < n; i++) {
        iov[i].iov_base = v[i].iov_base;
        iov[i].iov_len = v[i].iov_len;
    }
    /* read(2) when the space is one piece, as it nearly always is: readv
     * costs the kernel an iovec import per call. */
    ssize_t r = n == 1  ? read(s->fd, iov[0].iov_base, iov[0].iov_len)
                : n > 1 ? readv(s->fd, iov, n)
                        : -1;
    if (r > 0) {
        size_t left = (size_t)r;
        for (int i = 0; i < n; i++) {
            v[i].iov_len = left < v[i].iov_len ? left : v[i].iov_len;
            left -= v[i].iov_len;
        }
        evbuffer_commit_space(s->in, v, n);
    }
    return r;
}

/* A small read (a head, a small body) goes through one buffer shared by
 * every stream of the loop's thread, and only what came is copied into
 * the input: its chain is then sized for it (1 KiB, from glibc's
 * per-thread cache) instead of a 16 KiB one from malloc's bins, taken and
 * given back twice a request. */
static ssize_t read_small(struct stream *s, size_t want)
{
    static _Thread_local char scratch[STREAM_READ_SMALL];
    ssize_t r = read(s->fd, scratch, want);
    if (r > 0 && evbuffer_add(s->in, scratch, (size_t)r) < 0) {
        errno = ENOMEM;
        return -1;
    }
    return r;
}

/* Returns whether another read is scheduled at once (leave). */
static int on_readable(struct stream *s, short what)
{
    size_t want = s->bulk ? STREAM_READ_BULK : STREAM_READ_SMALL;
    size_t len = evbuffer_get_length(s->in);
    if (s->read_high && s->read_high - len < want)
        want = s->read_high - len;
    ssize_t r = s->bulk ? read_reserved(s, want) : read_small(s, want);
    if (r > 0) {
        s->bulk = (size_t)r == want;
        stream_update_read(s);
        /* Edge-triggered: a short read emptied the socket (data that comes
         * later is a new edge); a full one, or a hang-up behind the data,
         * needs another read, which no edge will ask for. Scheduled before
         * the callback, which may free s (stream_free unschedules it). */
        int again = (s->bulk || (what & EV_CLOSED)) && s->rev_added;
        if (again)
            event_active(s->rev, EV_READ | (what & EV_CLOSED), 1);
        if (s->readcb)
            s->readcb(s, s->arg);
        return again;
    }
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    short ev = STREAM_READING | (r == 0 ? STREAM_EOF : STREAM_ERROR);
    s->ended = 1;
    stream_update_read(s);
    if (s->eventcb)
        s->eventcb(s, ev, s->arg);
    return 0;
}

/* One write of what is queued: write(2) when it is one piece (a head and
 * a small body copied after it, stream_move), writev through libevent
 * otherwise. */
static ssize_t write_some(struct stream *s, size_t len)
{
    if ((size_t)evbuffer_get_contiguous_space(s->out) < len)
        return evbuffer_write(s->out, s->fd);
    ssize_t n = write(s->fd, evbuffer_pullup(s->out, (ev_ssize_t)len), len);
    if (n > 0)
        evbuffer_drain(s->out, (size_t)n);
    return n;
}

/* Write what is queued. Returns 0 when all of it went, 1 when the socket is
 * full (EPOLLOUT is armed), -1 on error (errno set). */
static int flush(struct stream *s)
{
    size_t len;
    if (s->send_errno) {
        errno = s->send_errno;
        return -1;
    }
    while ((len = evbuffer_get_length(s->out)) > 0) {
        ssize_t n = write_some(s, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN)
            return -1;
        if (n <= 0) {
            if (!s->wev_added)
                s->wev_added = event_add(s->wev, NULL) == 0;
            return 1;
        }
        if ((size_t)n == len)
            break; /* all of it: nothing left to ask the length of */
    }
    if (s->wev_added) {
        event_del(s->wev);
        s->wev_added = 0;
    }
    return 0;
}

/* After a write: the one callback it calls, if any, comes last. */
static void after_flush(struct stream *s, int r)
{
    if (r < 0) {
        if (s->eventcb)
            s->eventcb(s, STREAM_WRITING | STREAM_ERROR, s->arg);
    } else if (s->writecb && (r == 0 || evbuffer_get_length(s->out) <= s->write_low)) {
        s->writecb(s, s->arg); /* r == 0: flush left nothing queued */
    }
}

static void on_writable(struct stream *s, evutil_socket_t fd)
{
    if (s->connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        s->connecting = 0;
        event_del(s->wev);
        s->wev_added = 0;
        if (err) {
            errno = err;
            if (s->eventcb)
                s->eventcb(s, STREAM_ERROR, s->arg);
            return;
        }
        if (evbuffer_get_length(s->out) > 0 && !s->flush_due)
            stream_flush_soon(s);
        stream_update_read(s);
        if (s->eventcb)
            s->eventcb(s, STREAM_CONNECTED, s->arg);
        return;
    }
    after_flush(s, flush(s));
}

static void on_defer(struct stream *s)
{
    /* Due with nothing queued: stream_output was asked for and nothing
     * added, or nothing is left to write. No write, and no write callback. */
    int r = 0, flushed = s->flush_due && evbuffer_get_length(s->out) > 0;
    s->flush_due = 0;
    if (flushed)
        r = flush(s);
    if (s->read_due && s->readcb) {
        s->read_due = 0;
        if (flushed &&
            (r < 0 || (s->writecb && (r == 0 || evbuffer_get_length(s->out) <= s->write_low)))) {
            /* Two callbacks due: the write side's now, the read in the
             * next pass (scheduled first: the first may free s). */
            s->read_due = 1;
            stream_schedule(s);
            after_flush(s, r);
            return;
        }
        s->readcb(s, s->arg);
        return;
    }
    if (flushed)
        after_flush(s, r);
}

/* What a direct write took (0 when it failed). A failure other than a
 * full socket is kept for the flush to report, as any flush's error
 * (after_flush): a second write would report another errno, EPIPE where
 * this one saw ECONNRESET. */
static size_t direct_done(struct stream *s, ssize_t n)
{
    if (n >= 0)
        return (size_t)n;
    if (errno != EAGAIN && errno != EINTR)
        s->send_errno = errno;
    return 0;
}

/* A write(2) straight from the caller's bytes: no chain taken and given
 * back, no flush, no write callback, about 600 instructions of a request
 * relayed without a body. A failed write queues the bytes, and the flush
 * writes them or reports the failure (direct_done). */
void stream_send(struct stream *s, const void *data, size_t len)
{
    size_t n = 0;
    if (!s->wev_added && !s->connecting && evbuffer_get_length(s->out) == 0)
        n = direct_done(s, write(s->fd, data, len));
    if (n < len)
        evbuffer_add(stream_output(s), (const char *)data + n, len - n);
}

/* Pieces one direct write of stream_send_from gathers: the output's (a
 * response head, an interim one before it) and the bytes' (a body's
 * chains). More than this goes the queued way. */
#define STREAM_SEND_IOV 8

/* The queued output, then the first n bytes of from, as iov. Returns how
 * many pieces, 0 when they need more than STREAM_SEND_IOV. */
static int gather(struct stream *s, struct evbuffer *from, size_t n, struct iovec *iov)
{
    struct evbuffer_iovec v[STREAM_SEND_IOV];
    int q = evbuffer_peek(s->out, -1, NULL, v, STREAM_SEND_IOV);
    if (q >= STREAM_SEND_IOV)
        return 0;
    int b = evbuffer_peek(from, (ev_ssize_t)n, NULL, v + q, STREAM_SEND_IOV - q);
    if (b < 1 || b > STREAM_SEND_IOV - q)
        return 0;
    size_t left = n;
    for (int i = 0; i < q + b; i++) {
        iov[i].iov_base = v[i].iov_base;
        iov[i].iov_len = v[i].iov_len;
        if (i >= q) { /* the last of from's pieces may hold more than n */
            iov[i].iov_len = left < v[i].iov_len ? left : v[i].iov_len;
            left -= iov[i].iov_len;
        }
    }
    return q + b;
}

/* One writev of the queued output and from's bytes where they lie: the
 * bytes are not copied into the output nor drained from it, and no flush
 * and no write callback follow (about 130 instructions of a small response
 * relayed keep-alive, 220 with Connection: close, whose close then needs no
 * timer). A failed write queues the bytes, as stream_send's (direct_done). */
void stream_send_from(struct stream *s, struct evbuffer *from, size_t n)
{
    struct iovec iov[STREAM_SEND_IOV];
    int k = s->wev_added || s->connecting ? 0 : gather(s, from, n, iov);
    /* write(2) for one piece (a body whose head went before it): writev
     * costs the kernel an iovec import. */
    size_t done = k == 1  ? direct_done(s, write(s->fd, iov[0].iov_base, iov[0].iov_len))
                  : k > 1 ? direct_done(s, writev(s->fd, iov, k))
                          : 0;
    size_t queued = evbuffer_get_length(s->out);
    size_t of_out = done < queued ? done : queued;
    if (of_out > 0)
        evbuffer_drain(s->out, of_out);
    if (done > of_out)
        evbuffer_drain(from, done - of_out);
    if (done - of_out < n)
        stream_move(from, stream_output(s), n - (done - of_out));
}

/* Streams whose output is written as the stream callback running now
 * returns, and whether one runs (libevent runs one callback at a time).
 * Per loop thread, as the streams are. */
static _Thread_local LIST_HEAD(listed_head, stream) listed;
static _Thread_local int in_callback;

/* Inside a stream callback the flush is listed and made as the callback
 * returns (leave): a pass through the loop's active queue for the
 * deferred callback cost about 215 instructions a flush, two a keep-alive
 * request. Outside one (a timer, another thread's answer), nothing would
 * make it but the deferred callback. */
void stream_flush_soon(struct stream *s)
{
    s->flush_due = 1;
    if (!in_callback) {
        stream_schedule(s);
        return;
    }
    s->flush_listed = 1;
    LIST_INSERT_HEAD(&listed, s, listed_link);
}

void stream_unlist(struct stream *s)
{
    if (!s->flush_listed)
        return;
    LIST_REMOVE(s, listed_link);
    s->flush_listed = 0;
    s->flush_due = 0;
}

static void enter(void)
{
    in_callback = 1;
}

/* The callback returned: write what it queued. The write callbacks this
 * calls list their output too, made in this loop; one that frees a listed
 * stream takes it off first (stream_free). After a read that scheduled
 * the next at once (it filled what it asked), the flushes go to the
 * deferred callback, queued behind that read: the bytes of both leave in
 * one write, as a 10 MB body's did before (half the writes). */
static void leave(int read_again)
{
    struct stream *s;
    while ((s = LIST_FIRST(&listed))) {
        stream_unlist(s);
        if (read_again) {
            s->flush_due = 1;
            stream_schedule(s);
        } else if (evbuffer_get_length(s->out) > 0)
            after_flush(s, flush(s));
    }
    in_callback = 0;
}

/* libevent's callbacks (their argument is the stream), each between enter
 * and leave. */
void stream_on_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    enter();
    leave(on_readable(arg, what));
}

void stream_on_writable(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    enter();
    on_writable(arg, fd);
    leave(0);
}

void stream_on_defer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    enter();
    on_defer(arg);
    leave(0);
}

/* Bytes up to this many are copied behind what the destination holds
 * rather than moved as a chain of their own: a small body then leaves in
 * the same piece as its head, one write(2) instead of a writev of two. */
#define STREAM_COPY_MAX 1024

void stream_move(struct evbuffer *from, struct evbuffer *to, size_t n)
{
    struct evbuffer_iovec v;
    if (n <= STREAM_COPY_MAX && evbuffer_peek(from, (ev_ssize_t)n, NULL, &v, 1) == 1 &&
        v.iov_len >= n) {
        evbuffer_add(to, v.iov_base, n);
        evbuffer_drain(from, n);
        return;
    }
    evbuffer_remove_buffer(from, to, n);
}
