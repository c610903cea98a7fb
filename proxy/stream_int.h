/* stream_int.h - what stream.c (a stream's life and settings) and
 * stream_io.c (its reads and writes) share; nothing else includes it. */
#ifndef WTPROXY_STREAM_INT_H
#define WTPROXY_STREAM_INT_H

#include "stream.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <sys/queue.h>

/* Bytes one read asks for: small for requests and small responses (a
 * 16 KiB chain comes from malloc's bins, reused), large once reads come back
 * full, so bulk bodies move in few calls. */
#define STREAM_READ_SMALL (16 * 1024)
#define STREAM_READ_BULK (256 * 1024)

struct stream {
    evutil_socket_t fd;
    struct event *rev, *wev, *defer; /* in the stream's own block (wrap) */
    struct evbuffer *in, *out;
    struct evbuffer_cb_entry *in_cb; /* while reads wait for a drain (watch_drains) */
    stream_data_cb readcb, writecb;
    stream_event_cb eventcb;
    void *arg;
    size_t read_high, write_low;
    int send_errno;                 /* a direct write's failure, for the flush to report */
    LIST_ENTRY(stream) listed_link; /* while flush_listed */
    unsigned want_read : 1;         /* the owner wants input */
    unsigned rev_added : 1;
    unsigned wev_added : 1;
    unsigned connecting : 1;
    unsigned flush_due : 1;
    unsigned flush_listed : 1; /* its flush due as the stream callbacks return */
    unsigned read_due : 1;
    unsigned ended : 1; /* EOF or error seen on read */
    unsigned bulk : 1;  /* the last read filled what it asked for */
};

/* Run the stream's deferred callback (a flush or a read that is due) in
 * this loop pass. */
void stream_schedule(struct stream *s);

/* Write the output soon: as the stream callback running now returns, or
 * outside one from the deferred callback. */
void stream_flush_soon(struct stream *s);

/* Take a stream being freed off the flushes due as callbacks return. */
void stream_unlist(struct stream *s);

/* Register for input exactly while the owner wants it and there is room. */
void stream_update_read(struct stream *s);

/* The events' callbacks (their argument is the stream). */
void stream_on_readable(evutil_socket_t fd, short what, void *arg);
void stream_on_writable(evutil_socket_t fd, short what, void *arg);
void stream_on_defer(evutil_socket_t fd, short what, void *arg);

#endif
