/* conn.h - the state of one client connection, shared by client.c (the
 * client side and the connection's life), upstream.c (the backend side)
 * and tunnel.c (after a 101). Internal to proxy/. */
#ifndef WTP_CONN_H
#define WTP_CONN_H

#include <event2/buffer.h>
#include "stream.h"
#include <event2/event.h>
#include <netinet/in.h>
#include <sys/queue.h>

#include "error_page.h"
#include "handler.h"
#include "head_scan.h"
#include "http_msg.h"
#include "identify.h"
#include "server.h"

enum conn_state {
    CS_IDLE,     /* between requests: keepalive_timeout */
    CS_HEAD,     /* reading a request head: head_timeout from its first byte */
    CS_IDENTIFY, /* the caller's process is looked for on the worker thread */
    CS_WAIT,     /* the backend is starting or reloading: polled, start_timeout */
    CS_VERIFY,   /* the /__whoami gate is asking the backend; it always answers */
    CS_CONNECT,  /* head parsed, connecting to the backend: connect_timeout */
    CS_FORWARD,  /* relaying body and response: response_timeout, body_timeout */
    CS_TUNNEL,   /* after a 101: bytes both ways */
    CS_CLOSING,  /* flushing what is left, then a lingering close */
    CS_HANDLER,  /* the daemon's own answer holds it (handler.h): an event stream, a reply
                  * waiting for a worker; until either side goes */
};

struct proxy_client {
    struct proxy_server *srv;
    struct proxy_listener *listener;
    struct stream *bev;          /* the client's socket */
    struct stream *up;           /* the backend's socket, NULL when none */
    struct reg_backend *backend; /* the current request's backend */
    struct http_msg req, resp;
    struct head_scan scan;       /* the head being read: request or response */
    struct evbuffer *req_head;   /* rewritten request head, kept until a response starts */
    struct evbuffer *req_prefix; /* re-chunked body checked before any byte is sent */
    struct event *timer;
    long long deadline_ms; /* when the timer's state times out (host_mono_ms) */
    long long timer_at_ms; /* when the armed timer fires: <= deadline_ms; 0 while
                            * it is not armed (the monotonic clock counts from
                            * boot: never 0 when a connection is made) */
    enum conn_state state;
    unsigned long long last_ms; /* last byte moved, for body_timeout */
    unsigned long long req_done_ms;
    unsigned long long wait_since_ms;    /* CS_WAIT for a starting backend */
    unsigned long long refused_since_ms; /* a live backend refused: reload_grace */
    enum proxy_error route_error;        /* why routing found no backend */
    char route_name[256];                /* the worktree the request named */
    struct identify_kept *who;           /* the caller, once identified (per connection) */
    void *ident_ticket;                  /* a pending identification */
    void *gate_ticket;                   /* a pending /__whoami verdict */
    void *file_ticket;                   /* a pending read of the worktree's .wtproxy */
    int awaiting_start;                  /* the daemon started the worktree's server */
    int in_flight;                       /* counted in backend->active */
    char ip[INET6_ADDRSTRLEN];
    char accept[128];                    /* the request's Accept, for error pages */
    char path[128];                      /* method and path without query, for the log */
    const struct proxy_handler *handler; /* the request is the daemon's own, NULL proxied */
    int handler_note;                    /* what the handler's on_head noted */
    void *handler_job;                   /* the handler's pending work for c, NULL none */

    unsigned keepalive : 1; /* the client wants the connection kept */
    unsigned http10 : 1;    /* the request was HTTP/1.0 */
    unsigned is_head : 1;
    unsigned upgrade : 1; /* the request asks for an upgrade */
    unsigned req_chunked : 1;
    unsigned req_done : 1;      /* the whole request body was read */
    unsigned req_bodyless : 1;  /* done with its head: safe to send twice */
    unsigned client_paused : 1; /* client reads stopped for backpressure */
    unsigned client_eof : 1;
    unsigned up_paused : 1; /* backend reads stopped for backpressure */
    unsigned from_pool : 1; /* up came from the pool: may be stale */
    unsigned retried : 1;
    unsigned resp_bytes : 1;   /* the backend sent any byte of a response */
    unsigned resp_interim : 1; /* the head just parsed was a 1xx */
    unsigned resp_tunnel : 1;  /* the head just parsed was a 101 */
    unsigned resp_started : 1; /* a final head went to the client */
    unsigned resp_copy : 1;    /* body bytes are copied (re-chunked), not moved */
    unsigned resp_chunked : 1; /* the client gets chunked framing */
    unsigned resp_done : 1;
    unsigned up_keepalive : 1; /* the backend keeps its connection */
    unsigned lingering : 1;    /* our side shut down, draining the client */
    unsigned close_after : 1;  /* close once this response is sent */
    unsigned stopping : 1;     /* server shutdown: no further request */
    int error_set;             /* a hook recorded a refusal: */
    enum proxy_error error;
    char detail[256];

    TAILQ_ENTRY(proxy_client) link;
};

/* client.c, client_request.c */
long conn_scan_head(struct head_scan *s, struct evbuffer *in, const struct head_scan_limits *lim);
void conn_set_client_callbacks(struct proxy_client *c);
void conn_close(struct proxy_client *c);
void conn_close_after_flush(struct proxy_client *c);
void conn_fail(struct proxy_client *c, enum proxy_error e, const char *detail);
/* conn_fail with the page's Fix line given (NULL: e's own). */
void conn_fail_fix(struct proxy_client *c, enum proxy_error e, const char *detail, const char *fix);
/* A tunnel (after a 101) closed for e: logged and kept in the refusal log
 * as a refusal of its request, with detail and fix; no page (the
 * connection speaks another protocol). */
void conn_fail_tunnel(struct proxy_client *c, enum proxy_error e, const char *detail,
                      const char *fix);
void conn_arm_timer(struct proxy_client *c, unsigned ms);
void conn_stop_timer(struct proxy_client *c);
void conn_request_done(struct proxy_client *c, unsigned long long now);
void conn_feed_request_body(struct proxy_client *c);
void conn_next_request(struct proxy_client *c);
void conn_backend_done(struct proxy_client *c);
void conn_backend_done_at(struct proxy_client *c, unsigned long long now);

/* client_log.c: a line of the daemon's log about c's request, written at
 * once when it is the first of its kind within WTP_LOG_FLOOD_WINDOW_MS,
 * else counted (log_flood.h). The kind is what (short and fixed: "dropped
 * header x_user", "503 no-backend"), the caller's worktree, the worktree
 * named and the backend: the path and the peer's port are left out, since
 * a polling loop varies them and is one story. */
void conn_log(struct proxy_client *c, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* client_request.c */
void conn_read_request_head(struct proxy_client *c); /* CS_IDLE/CS_HEAD: bytes came */

/* dispatch.c */
void conn_route(struct proxy_client *c); /* a parsed request: caller, route, wait, gate */
/* A new connection, before any byte: its caller identified now (when
 * routing needs callers), and a server its worktree's .wtproxy declares
 * on this front started at once (dispatch.c). */
void conn_identify_at_accept(struct proxy_client *c);
void conn_wait_timeout(struct proxy_client *c);      /* CS_WAIT's timer */
void conn_forward(struct proxy_client *c);           /* the gate, then upstream_start */
void conn_wait(struct proxy_client *c, unsigned ms); /* into CS_WAIT, looked at again in ms */
/* Whether a request waits for b: parked while it starts or reloads, or
 * in the /__whoami gate; not yet counted in b->active, which only its
 * exchange with b is. Walks the clients: for a stop's rare decision. */
int conn_backend_awaited(struct proxy_server *s, const struct reg_backend *b);
/* b's wrapper told its start failed: the requests waiting for it are refused. */
void conn_backend_failed(struct proxy_server *s, const struct reg_backend *b);

/* last_words.c: append to the refusal d (len bytes in all) what the
 * server of (front, worktree) that exited lately said last, as its
 * wrapper told it: its exit status (with_status 1) and its last lines;
 * and write into fix the one command that fixes it, the page's Fix line.
 * Returns 1 when it did, 0 when no such words are kept (a wrapper killed
 * with SIGKILL tells none). */
int conn_last_words(struct proxy_server *s, int front, const char *worktree, int with_status,
                    char *d, size_t len, char *fix, size_t fixlen);
#define CONN_FIX_MAX (6 * PATH_MAX) /* a fix conn_last_words writes */

/* upstream.c */
void upstream_start(struct proxy_client *c);
void upstream_feed_response(struct proxy_client *c);
void upstream_release(struct proxy_client *c); /* close the backend connection, if any */
void upstream_init_response(struct proxy_client *c);

/* tunnel.c */
void tunnel_start(struct proxy_client *c);

#endif
