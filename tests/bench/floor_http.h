/* floor_http.h - the least HTTP work the relay benchmark's floors do to pool
 * backend connections for `Connection: close` clients, shared by the epoll
 * floor (floor_relay.c) and the io_uring floor (floor_uring.c) so that the
 * two differ only in how they move bytes: cut the request's `Connection:
 * close` line (the backend keeps the connection open), read the response's
 * Content-Length (where it ends) and make its Connection line `close` (the
 * client knows the server closes). Static inline: each floor is one file
 * plus this one. */
#ifndef FLOOR_HTTP_H
#define FLOOR_HTTP_H

#include <stddef.h>
#include <string.h>
#include <strings.h>

static const char conn_close[] = "Connection: close\r\n";
#define CONN_CLOSE_LEN (sizeof conn_close - 1)

/* The request's `Connection: close` line in buf, or NULL: a keep-alive
 * client (the floors decide by the first read, as every connection of a
 * relay.sh run sends the same kind). */
static inline char *request_close_line(char *buf, size_t len)
{
    return memmem(buf, len, "\r\nConnection: close\r\n", 21);
}

/* Cut the `Connection: close` line at cl out of the request in buf. */
static inline void request_cut_line(char *buf, size_t *len, char *cl)
{
    size_t at = (size_t)(cl - buf) + 2; /* keep the CRLF before it */
    memmove(buf + at, buf + at + CONN_CLOSE_LEN, *len - at - CONN_CLOSE_LEN);
    *len -= CONN_CLOSE_LEN;
}

/* Digits of a Content-Length value from p; -1 if there are none. */
static inline long long parse_length(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    long long v = -1;
    for (; p < end && *p >= '0' && *p <= '9'; p++)
        v = (v < 0 ? 0 : v * 10) + (*p - '0');
    return v;
}

/* The start of a response, just read into buf (*len bytes, with room for
 * CONN_CLOSE_LEN more): its Connection line becomes `Connection: close`
 * (added when absent), and *reuse says whether the backend keeps the
 * connection. Returns the body bytes still to come, or -1 when the
 * response cannot be relayed this way (head split over reads, no
 * Content-Length, more body than announced). */
static inline long long response_head(char *buf, size_t *len, int *reuse)
{
    char *eoh = memmem(buf, *len, "\r\n\r\n", 4);
    if (!eoh)
        return -1;
    size_t head = (size_t)(eoh - buf) + 4, cs = head - 2, ce = head - 2;
    long long length = -1, body = (long long)(*len - head);
    char *last = buf + head - 2; /* the empty line that ends the head */
    *reuse = 1;
    for (char *line = (char *)memchr(buf, '\n', head) + 1, *next; line < last; line = next) {
        next = (char *)memchr(line, '\n', (size_t)(last + 2 - line)) + 1;
        if ((*line | 0x20) != 'c')
            continue;
        if (strncasecmp(line, "content-length:", 15) == 0)
            length = parse_length(line + 15, next);
        else if (strncasecmp(line, "connection:", 11) == 0) {
            cs = (size_t)(line - buf), ce = (size_t)(next - buf);
            *reuse = memmem(line, ce - cs, "close", 5) == NULL;
        }
    }
    if (length < 0)
        return -1;
    memmove(buf + cs + CONN_CLOSE_LEN, buf + ce, *len - ce);
    memcpy(buf + cs, conn_close, CONN_CLOSE_LEN);
    *len = *len + CONN_CLOSE_LEN - (ce - cs);
    return length - body < 0 ? -1 : length - body;
}

#endif
