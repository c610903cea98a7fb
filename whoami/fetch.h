/* fetch.h - one `GET /__whoami` straight to a backend (never through the
 * proxy), on the event loop: connect, send, read the response with llhttp
 * up to a size cap, within a deadline. Used by the gate, and by `wtproxy
 * doctor` (cli/doctor_checks.c) on a loop of its own. */
#ifndef WTP_WHOAMI_FETCH_H
#define WTP_WHOAMI_FETCH_H

#include <event2/event.h>
#include <stddef.h>
#include <sys/socket.h>

#define WHOAMI_MAX_ANSWER (64 * 1024) /* PROTOCOL.md: an answer is at most 64 KiB */

enum whoami_fetch_result {
    WF_OK,          /* a whole response: see status and body */
    WF_UNREACHABLE, /* refused, or closed before any byte: not listening, or reloading */
    WF_TIMEOUT,     /* no whole answer within the deadline */
    WF_CUT,         /* closed in the middle of its answer: a crash, or a reload */
    WF_BAD_HTTP,    /* not an HTTP response */
    WF_TOO_LARGE,   /* the body passed WHOAMI_MAX_ANSWER */
};

struct whoami_fetch_reply {
    enum whoami_fetch_result result;
    int status;       /* HTTP status, for WF_OK */
    const char *body; /* for WF_OK: len bytes, valid during the callback only */
    size_t len;
    const char *error; /* for the others: what went wrong, a phrase */
};

typedef void (*whoami_fetch_cb)(void *arg, const struct whoami_fetch_reply *r);

struct whoami_fetch;

/* Start the exchange with the server at addr ("host" is its HOST:PORT, for
 * the Host header). cb runs exactly once, from the loop, unless the fetch
 * is cancelled first. NULL when it cannot even start (out of memory, no
 * socket, a connection refused at once): errno says why, and the caller
 * treats it as WF_UNREACHABLE. */
struct whoami_fetch *whoami_fetch_start(struct event_base *base, const struct sockaddr *addr,
                                        socklen_t addrlen, const char *host, unsigned timeout_ms,
                                        whoami_fetch_cb cb, void *arg);

void whoami_fetch_cancel(struct whoami_fetch *f);

#endif
