/* client_request.c - a client connection's requests (client.c is the
 * connection's life): read and check each request head, stream the
 * request body, then the next request or the end. */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "gate.h"
#include "host.h"
#include "ondemand.h"
#include "refusal_log.h"
#include "request_check.h"
#include "http_head.h"
#include "route.h"

static int req_headers_complete(struct http_msg *m);
static int req_body(struct http_msg *m, const char *at, size_t n);
static int req_message_complete(struct http_msg *m);

static const struct http_msg_hooks req_hooks = {req_headers_complete, req_body,
                                                req_message_complete};

long conn_scan_head(struct head_scan *s, struct evbuffer *in, const struct head_scan_limits *lim)
{
    size_t len = evbuffer_get_length(in);
    long r = 0;
    while (r == 0 && s->total < len) {
        struct evbuffer_ptr pos;
        struct evbuffer_iovec v;
        if (evbuffer_ptr_set(in, &pos, s->total, EVBUFFER_PTR_SET) < 0 ||
            evbuffer_peek(in, -1, &pos, &v, 1) < 1)
            break;
        r = head_scan_feed(s, v.iov_base, v.iov_len, lim);
    }
    return r;
}

static enum proxy_error scan_error(long r)
{
    switch (r) {
    case HS_START_LINE_LONG:
        return PE_REQUEST_LINE_TOO_LONG;
    case HS_HEAD_LARGE:
        return PE_HEAD_TOO_LARGE;
    case HS_TOO_MANY_FIELDS:
        return PE_TOO_MANY_HEADERS;
    case HS_METHOD_LONG:
        return PE_METHOD_TOO_LONG;
    default:
        return PE_BAD_REQUEST;
    }
}

static void reset_request(struct proxy_client *c)
{
    c->keepalive = c->http10 = c->is_head = c->upgrade = c->req_chunked = 0;
    c->req_done = c->req_bodyless = c->from_pool = c->retried = 0;
    c->resp_bytes = c->resp_interim = c->resp_tunnel = c->resp_started = 0;
    c->resp_copy = c->resp_chunked = c->resp_done = c->up_keepalive = 0;
    c->close_after = 0;
    c->awaiting_start = 0;
    ondemand_cancel(c->file_ticket);
    c->file_ticket = NULL;
    if (c->who && !c->who->placed) {
        /* Only a placing lasts the connection: what was unknown may be
         * known by the next request (a registration or a .wtproxy since). */
        free(c->who);
        c->who = NULL;
    }
    c->error_set = 0;
    c->accept[0] = c->path[0] = '\0';
    evbuffer_drain(c->req_head, evbuffer_get_length(c->req_head));
    evbuffer_drain(c->req_prefix, evbuffer_get_length(c->req_prefix));
}

static int parse_failed(llhttp_errno_t err)
{
    return err != HPE_OK && err != HPE_PAUSED && err != HPE_PAUSED_UPGRADE;
}

/* Where re-chunked request body goes: the backend once the head is sent,
 * before that the prefix that waits for it. */
static struct evbuffer *body_sink(struct proxy_client *c)
{
    return c->state == CS_FORWARD ? stream_output(c->up) : c->req_prefix;
}

/* Chunked framing that arrived with the head is checked before any backend
 * is touched, so a malformed or smuggling request in one write reaches no
 * one. (Framing that breaks later, mid-stream, ends the backend's request
 * short, without its last chunk: incomplete, never a second request.) */
static int check_buffered_chunks(struct proxy_client *c)
{
    struct evbuffer *in = stream_input(c->bev);
    while (!c->req_done && evbuffer_get_length(in) > 0) {
        struct evbuffer_iovec v;
        llhttp_errno_t err;
        if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
            break;
        size_t used = http_msg_feed(&c->req, v.iov_base, v.iov_len, &err);
        evbuffer_drain(in, used);
        if (parse_failed(err)) {
            conn_fail(c, PE_BAD_REQUEST, llhttp_get_error_reason(&c->req.parser));
            return -1;
        }
    }
    return 0;
}

/* The head is the first `len` bytes of the client's input: parse it (the
 * hooks check and rewrite it), then hand the request to a backend. */
static void parse_request_head(struct proxy_client *c, size_t len)
{
    struct evbuffer *in = stream_input(c->bev);
    char *head = (char *)evbuffer_pullup(in, (ssize_t)len);
    llhttp_errno_t err;
    reset_request(c);
    http_msg_init(&c->req, HTTP_REQUEST, &req_hooks, c);
    err = http_msg_feed_request_head(&c->req, head, len);
    if (parse_failed(err)) {
        if (c->error_set)
            conn_fail(c, c->error, c->detail);
        else
            conn_fail(c, PE_BAD_REQUEST, request_parse_error(&c->req, err));
        return;
    }
    evbuffer_drain(in, len);
    c->req_bodyless = c->req_done;
    if (c->handler) { /* answered by the daemon itself, before any routing */
        c->handler->serve(c);
        return;
    }
    if (c->req_chunked && check_buffered_chunks(c) < 0)
        return;
    conn_route(c);
}

void conn_read_request_head(struct proxy_client *c)
{
    struct evbuffer *in = stream_input(c->bev);
    const struct proxy_config *cfg = &c->srv->cfg;
    if (evbuffer_get_length(in) == 0)
        return;
    if (c->state == CS_IDLE) {
        c->state = CS_HEAD;
        c->is_head = 0; /* the last request's, until this one's head is parsed */
        c->path[0] = '\0';
        head_scan_init_request(&c->scan);
        conn_arm_timer(c, cfg->head_timeout_ms);
    }
    struct head_scan_limits lim = {cfg->max_request_line, cfg->max_head_size,
                                   cfg->max_header_count};
    long r = conn_scan_head(&c->scan, in, &lim);
    if (r < 0)
        conn_fail(c, scan_error(r), c->scan.error);
    else if (r > 0)
        parse_request_head(c, (size_t)r);
    else if (c->client_eof)
        conn_close(c);
}

/* The exchange with the backend is over (or the connection is), at now
 * (proxy_now_ms as the caller read it for this callback). */
void conn_backend_done_at(struct proxy_client *c, unsigned long long now)
{
    if (c->in_flight && c->backend) {
        c->backend->active--;
        c->backend->last_request_ms = (long long)now;
    }
    c->in_flight = 0;
}

void conn_backend_done(struct proxy_client *c)
{
    conn_backend_done_at(c, c->in_flight && c->backend ? proxy_now_ms(c->srv) : 0);
}

void conn_next_request(struct proxy_client *c)
{
    conn_backend_done(c);
    reg_backend_unref(c->backend);
    c->backend = NULL;
    if (c->close_after || !c->keepalive || c->stopping || c->srv->stopping) {
        conn_close_after_flush(c);
        return;
    }
    c->state = CS_IDLE;
    c->client_paused = 0;
    conn_arm_timer(c, c->srv->cfg.keepalive_timeout_ms);
    if (evbuffer_get_length(stream_input(c->bev)) > 0) {
        /* Pipelined bytes wait: deferred, so a long pipeline of refusals
         * does not recurse. */
        stream_trigger_read(c->bev);
    } else if (c->client_eof) {
        conn_close_after_flush(c);
        return;
    }
    if (!c->client_eof)
        stream_enable_read(c->bev);
}

void conn_request_done(struct proxy_client *c, unsigned long long now)
{
    c->req_done_ms = now;
    if (!c->resp_started)
        conn_arm_timer(c, c->srv->cfg.response_timeout_ms);
}

void conn_feed_request_body(struct proxy_client *c)
{
    struct evbuffer *in = stream_input(c->bev);
    struct evbuffer *out = stream_output(c->up);
    int was_done = c->req_done;
    while (!c->req_done && evbuffer_get_length(in) > 0) {
        if (evbuffer_get_length(out) >= c->srv->cfg.buffer_size) {
            c->client_paused = 1;
            stream_disable_read(c->bev);
            return;
        }
        struct evbuffer_iovec v;
        llhttp_errno_t err;
        if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
            break;
        size_t used = http_msg_feed(&c->req, v.iov_base, v.iov_len, &err);
        if (c->req_chunked)
            evbuffer_drain(in, used);
        else
            stream_move(in, out, used);
        c->last_ms = proxy_now_ms(c->srv);
        if (parse_failed(err)) {
            conn_fail(c, PE_BAD_REQUEST, llhttp_get_error_reason(&c->req.parser));
            return;
        }
    }
    if (c->req_done && !was_done)
        conn_request_done(c, c->last_ms); /* set as the loop took the last bytes */
}

/* Request checks llhttp does not make: request_check.c. */
static int check_request(struct proxy_client *c, struct http_msg *m)
{
    if (request_check(m, &c->error, c->detail, sizeof c->detail) == 0)
        return 0;
    c->error_set = 1;
    return -1;
}

/* dst = the first n bytes of src, cut to fit cap with its NUL. Per
 * request, where snprintf's format parsing cost about 900 instructions
 * (tests/bench/gate_callgrind.sh). */
static void copy_cut(char *dst, size_t cap, const char *src, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void note_request(struct proxy_client *c, struct http_msg *m)
{
    const struct http_field *accept = http_msg_field(m, "accept", NULL);
    if (accept)
        copy_cut(c->accept, sizeof c->accept, accept->value, accept->vlen);
    /* m->url points into the head as read: not NUL-terminated */
    size_t plen = 0;
    while (plen < m->url_len && m->url[plen] != '?' && m->url[plen] != ' ')
        plen++;
    c->is_head = m->parser.method == HTTP_HEAD; /* set before any refusal: no body then */
    /* "METHOD /path": a method has WTP_MAX_METHOD bytes at most */
    copy_cut(c->path, sizeof c->path - 1, m->method, m->method_len);
    size_t mlen = strlen(c->path);
    c->path[mlen] = ' ';
    copy_cut(c->path + mlen + 1, sizeof c->path - mlen - 1, m->url, plen < 96 ? plen : 96);
}

/* Whether m's path is h's: its prefix alone, or followed by '/' or '?'. */
static int handler_path(const struct proxy_handler *h, const struct http_msg *m)
{
    size_t n = h->prefix_len;
    return m->url_len >= n && memcmp(m->url, h->prefix, n) == 0 &&
           (m->url_len == n || m->url[n] == '/' || m->url[n] == '?');
}

/* A header dropped for its '_' (http_head.c), in the daemon's log. Its
 * kind is the name as a backend reads it (any case), so a client sending
 * it on every request is one line and a count. */
static void log_dropped(struct proxy_client *c, const struct http_field *odd)
{
    char what[80];
    int n = snprintf(what, sizeof what, "dropped header ");
    for (size_t i = 0; i < odd->nlen && (size_t)n + 1 < sizeof what; i++)
        what[n++] = (char)tolower((unsigned char)odd->name[i]);
    what[n] = '\0';
    conn_log(c, what,
             "dropped header %.*s of %s from %s: read with '-' for '_' it is a framing or "
             "forwarding field to some backends (wtproxy help relay)",
             (int)(odd->nlen < 64 ? odd->nlen : 64), odd->name, c->path, c->ip);
}

static int req_headers_complete(struct http_msg *m)
{
    struct proxy_client *c = m->owner;
    llhttp_t *p = &m->parser;
    const struct proxy_handler *h = c->srv->handler;
    note_request(c, m);
    c->handler = h && handler_path(h, m) ? h : NULL;
    if (c->handler)
        h->on_head(c, m);
    if (check_request(c, m) < 0)
        return -1;
    const struct http_field *conn = http_msg_field(m, "connection", NULL);
    c->http10 = p->http_minor == 0;
    c->keepalive = llhttp_should_keep_alive(p) && !c->http10;
    c->req_chunked = (p->flags & F_CHUNKED) != 0;
    c->upgrade = http_msg_field(m, "upgrade", NULL) && conn &&
                 http_list_has(conn->value, conn->vlen, "upgrade");
    route_hint(m, c->route_name, sizeof c->route_name);
    struct http_forward fw = {c->ip, c->listener->name, c->req_chunked, c->upgrade};
    const struct http_field *odd = http_head_write_request(c->req_head, m, &fw);
    if (odd)
        log_dropped(c, odd);
    return 0;
}

static int req_body(struct http_msg *m, const char *at, size_t n)
{
    struct proxy_client *c = m->owner;
    if (c->req_chunked) {
        struct evbuffer *out = body_sink(c);
        evbuffer_add_printf(out, "%zx\r\n", n);
        evbuffer_add(out, at, n);
        evbuffer_add(out, "\r\n", 2);
    }
    return 0;
}

static int req_message_complete(struct http_msg *m)
{
    struct proxy_client *c = m->owner;
    c->req_done = 1;
    if (c->req_chunked)
        evbuffer_add(body_sink(c), "0\r\n\r\n", 5);
    return HPE_PAUSED;
}
