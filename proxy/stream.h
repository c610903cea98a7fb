/* stream.h - a non-blocking socket with an input and an output evbuffer.
 *
 * It does the job of libevent's bufferevent with nginx's syscall budget:
 * a read goes straight into the input buffer (bufferevent asks FIONREAD
 * first), and output is written as soon as the callbacks that produced it
 * return (a stream callback's as it returns, any other's from the loop's
 * active queue), so the socket is registered for EPOLLOUT only when it is
 * full (bufferevent registers and unregisters it around every write).
 * Measured on a keep-alive request: 14 syscalls with
 * bufferevent, 4 with this. Its fd is edge-triggered, as nginx's: with 500
 * keep-alive clients, level-triggered epoll handed the loop 11-13 events
 * per request instead of 2 (each fd reported again by every epoll_wait
 * until its callback ran), about 3 µs of CPU per request
 * (tests/bench/RESULTS-relay-shapes.md, "500 connections").
 *
 * Callbacks may free the stream; the stream never touches itself after it
 * calls one. */
#ifndef WTP_STREAM_H
#define WTP_STREAM_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <stddef.h>
#include <sys/socket.h>

#define STREAM_READING 0x01
#define STREAM_WRITING 0x02
#define STREAM_EOF 0x10
#define STREAM_ERROR 0x20
#define STREAM_CONNECTED 0x80

struct stream;
typedef void (*stream_data_cb)(struct stream *s, void *arg);
typedef void (*stream_event_cb)(struct stream *s, short what, void *arg);

/* Wrap a connected socket (owned from now on). NULL when out of memory
 * (the socket is then closed). */
struct stream *stream_new(struct event_base *base, evutil_socket_t fd);

/* Start connecting to sa. The event callback gets STREAM_CONNECTED or
 * STREAM_ERROR. NULL with a message in err, and errno, when it failed at
 * once. */
struct stream *stream_connect(struct event_base *base, const struct sockaddr *sa, socklen_t len,
                              char *err, size_t errlen);

/* Close the socket and free everything; pending output is dropped. The
 * block may be kept for a later stream_new or stream_connect on this
 * thread (not under AddressSanitizer). */
void stream_free(struct stream *s);

/* Free the blocks this thread kept (at shutdown, for leak checkers). */
void stream_free_spares(void);

void stream_setcb(struct stream *s, stream_data_cb readcb, stream_data_cb writecb,
                  stream_event_cb eventcb, void *arg);
struct evbuffer *stream_input(struct stream *s);
/* The output, to add to now: what is added before the current callbacks
 * return is written after them (the socket's EPOLLOUT is armed only when
 * it is full). Not for keeping: an add through a pointer kept from an
 * earlier callback would wait. */
struct evbuffer *stream_output(struct stream *s);
/* Add len bytes to the output, written now when nothing is queued before
 * them (and the socket is neither full nor connecting): what the kernel
 * does not take is queued as through stream_output. What is written now
 * calls no write callback. */
void stream_send(struct stream *s, const void *data, size_t len);
/* Move the first n bytes of from behind the output, written now with what
 * is queued there in one writev (when the socket is neither full nor
 * connecting): what the kernel does not take is queued as through
 * stream_output. What is written now calls no write callback. */
void stream_send_from(struct stream *s, struct evbuffer *from, size_t n);
/* Bytes queued in the output (stream_output, without its flush). */
size_t stream_output_length(struct stream *s);
evutil_socket_t stream_fd(struct stream *s);

void stream_enable_read(struct stream *s);
void stream_disable_read(struct stream *s);

/* Stop reading while the input holds `high` bytes or more (0: no limit). */
void stream_set_read_high(struct stream *s, size_t high);

/* Call writecb each time a write leaves `low` bytes or fewer queued. */
void stream_set_write_low(struct stream *s, size_t low);

/* Acknowledge the bytes read so far now, not after the delayed-ACK timer
 * (Linux TCP_QUICKACK; a no-op elsewhere). For a peer that sends a response
 * in pieces with Nagle on: its next piece waits for this ACK. One setsockopt;
 * call it only when more input is awaited. */
void stream_ack_now(struct stream *s);

/* Move the first n bytes of from to the end of to: small runs copied (so
 * that they leave in one write with what precedes them), large ones moved
 * without a copy. */
void stream_move(struct evbuffer *from, struct evbuffer *to, size_t n);

/* Call readcb once more after the current callbacks, new bytes or not. */
void stream_trigger_read(struct stream *s);

#endif
