/* upstream.c - the backend side of a connection: get a connection (pooled
 * or new), send the rewritten head, parse the response with llhttp and
 * relay it to the client with backpressure. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "gate.h"
#include "http_head.h"
#include "verify.h"
#include "host.h"

static void up_read_cb(struct stream *bev, void *arg);
static void up_write_cb(struct stream *bev, void *arg);
static void up_event_cb(struct stream *bev, short what, void *arg);
static int resp_headers_complete(struct http_msg *m);
static int resp_body(struct http_msg *m, const char *at, size_t n);
static int resp_message_complete(struct http_msg *m);

static const struct http_msg_hooks resp_hooks = {resp_headers_complete, resp_body,
                                                 resp_message_complete};

void upstream_init_response(struct proxy_client *c)
{
    http_msg_init(&c->resp, HTTP_RESPONSE, &resp_hooks, c);
    head_scan_init(&c->scan);
    c->resp_interim = c->resp_tunnel = 0;
}

void upstream_release(struct proxy_client *c)
{
    if (c->up)
        stream_free(c->up);
    c->up = NULL;
    c->up_paused = 0;
}

/* The rewritten head goes, kept in req_head for a retry. Alone (no body
 * byte follows: its request is done, nothing re-chunked waits) it is
 * written at once; followed by a body, queued with it so that both leave
 * in one write. */
static void send_head(struct proxy_client *c)
{
    struct evbuffer *head = c->req_head;
    size_t len = evbuffer_get_length(head);
    if (c->req_done && evbuffer_get_length(c->req_prefix) == 0) {
        stream_send(c->up, evbuffer_pullup(head, -1), len);
        return;
    }
    struct evbuffer *out = stream_output(c->up);
    evbuffer_add(out, evbuffer_pullup(head, -1), len);
    evbuffer_add_buffer(out, c->req_prefix);
}

/* The clock is read once: libevent's cached time does not change within a
 * callback, and each read takes the base's lock (about 45 instructions). */
static void send_request(struct proxy_client *c)
{
    unsigned long long now = proxy_now_ms(c->srv);
    c->state = CS_FORWARD;
    c->backend->requests++;
    c->backend->last_request_ms = (long long)now;
    if (!c->in_flight) {
        c->in_flight = 1;
        c->backend->active++; /* an idle_stop never cuts it */
    }
    upstream_init_response(c);
    send_head(c);
    c->last_ms = now;
    if (c->req_done) {
        conn_request_done(c, now);
        return;
    }
    conn_arm_timer(c, c->srv->cfg.body_timeout_ms);
    conn_feed_request_body(c);
}

void upstream_start(struct proxy_client *c)
{
    struct proxy_server *s = c->srv;
    struct reg_backend *b = c->backend;
    size_t high = s->cfg.buffer_size > s->cfg.max_response_head ? s->cfg.buffer_size
                                                                : s->cfg.max_response_head + 1;
    c->state = CS_CONNECT;
    c->up = c->retried ? NULL : proxy_pool_take(s->pool, (struct sockaddr *)&b->addr, b->addrlen);
    c->from_pool = c->up != NULL;
    if (!c->up) {
        char err[128], d[480];
        c->up = stream_connect(s->base, (struct sockaddr *)&b->addr, b->addrlen, err, sizeof err);
        if (!c->up) {
            /* wtproxy's own shortage is not the dev server's failure */
            int ours = errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM;
            snprintf(d, sizeof d, "connect to %s: %s", b->name, err);
            conn_fail(c, ours ? PE_OUT_OF_FDS : PE_BACKEND_UNREACHABLE, d);
            return;
        }
    }
    stream_setcb(c->up, up_read_cb, up_write_cb, up_event_cb, c);
    stream_set_read_high(c->up, high);
    stream_set_write_low(c->up, s->cfg.buffer_size / 2);
    stream_enable_read(c->up);
    if (c->from_pool)
        send_request(c);
    else
        conn_arm_timer(c, s->cfg.connect_timeout_ms);
}

static int resp_refuse(struct proxy_client *c, const char *detail)
{
    c->error_set = 1;
    snprintf(c->detail, sizeof c->detail, "%s", detail);
    return -1;
}

static void write_final_head(struct proxy_client *c, struct http_msg *m, int has_body)
{
    llhttp_t *p = &m->parser;
    int chunked = has_body && (p->flags & F_CHUNKED);
    int eof_delimited = has_body && !chunked && llhttp_message_needs_eof(p);
    struct http_reply r = {0};
    c->up_keepalive = llhttp_should_keep_alive(p);
    c->resp_copy = chunked;
    c->resp_chunked = r.chunked = chunked && !c->http10;
    r.close = !c->keepalive || eof_delimited || !c->req_done || c->stopping || c->srv->stopping ||
              c->client_eof;
    c->close_after = r.close;
    http_head_write_response(stream_output(c->bev), m, &r);
    c->resp_started = 1;
}

static int resp_headers_complete(struct http_msg *m)
{
    struct proxy_client *c = m->owner;
    llhttp_t *p = &m->parser;
    int status = p->status_code;
    if (p->http_major != 1 || status < 100 || status > 599)
        return resp_refuse(c, "the backend's status line is not HTTP/1.x with a status 100-599");
    if (status == 101) {
        if (!c->upgrade)
            return resp_refuse(c,
                               "the backend switched protocols on a request that asked for none");
        /* RFC 9110 §15.2.2: a 101 names the protocol. Without Upgrade a
         * client takes it for an interim 1xx and parses the tunnelled
         * bytes as the response (found by tests/fuzz/fuzz_response). */
        if (!http_msg_field(m, "upgrade", NULL))
            return resp_refuse(c, "the backend's 101 has no Upgrade header naming the protocol");
        struct http_reply r = {.upgrade = 1};
        http_head_write_response(stream_output(c->bev), m, &r);
        c->resp_tunnel = c->resp_started = 1;
        return 2;
    }
    if (status < 200) {
        /* Interim (100 Continue, 103 Early Hints): relayed to HTTP/1.1
         * clients only (RFC 9110 §15.2), then the final head follows. */
        c->resp_interim = 1;
        if (!c->http10) {
            struct http_reply r = {0};
            http_head_write_response(stream_output(c->bev), m, &r);
        }
        return 0;
    }
    int has_body = !c->is_head && status != 204 && status != 304;
    write_final_head(c, m, has_body);
    return has_body ? 0 : 1;
}

static int resp_body(struct http_msg *m, const char *at, size_t n)
{
    struct proxy_client *c = m->owner;
    if (!c->resp_copy)
        return 0; /* moved whole by the caller, no copy */
    struct evbuffer *out = stream_output(c->bev);
    if (c->resp_chunked)
        evbuffer_add_printf(out, "%zx\r\n", n);
    evbuffer_add(out, at, n);
    if (c->resp_chunked)
        evbuffer_add(out, "\r\n", 2);
    return 0;
}

static int resp_message_complete(struct http_msg *m)
{
    struct proxy_client *c = m->owner;
    if (c->resp_interim || c->resp_tunnel)
        return HPE_PAUSED;
    if (c->resp_chunked)
        evbuffer_add(stream_output(c->bev), "0\r\n\r\n", 5);
    c->resp_done = 1;
    return HPE_PAUSED;
}

/* Returns 1 when a head was parsed (go on), 0 when more bytes are needed,
 * -1 when the connection was failed, closed or turned into a tunnel (c may
 * be gone: touch nothing). */
static int read_response_head(struct proxy_client *c)
{
    const struct proxy_config *cfg = &c->srv->cfg;
    struct evbuffer *in = stream_input(c->up);
    struct head_scan_limits lim = {cfg->max_request_line, cfg->max_response_head,
                                   cfg->max_header_count};
    long r = conn_scan_head(&c->scan, in, &lim);
    if (r == 0)
        return 0;
    if (r < 0) {
        conn_fail(c, PE_BACKEND_BAD_RESPONSE, c->scan.error);
        return -1;
    }
    llhttp_errno_t err;
    c->error_set = 0;
    http_msg_feed(&c->resp, (char *)evbuffer_pullup(in, r), (size_t)r, &err);
    if (err != HPE_OK && err != HPE_PAUSED && err != HPE_PAUSED_UPGRADE) {
        conn_fail(c, PE_BACKEND_BAD_RESPONSE,
                  c->error_set ? c->detail : llhttp_get_error_reason(&c->resp.parser));
        return -1;
    }
    evbuffer_drain(in, (size_t)r);
    if (c->resp_tunnel) {
        tunnel_start(c);
        return -1;
    }
    if (c->resp_interim) {
        upstream_init_response(c);
        return 1;
    }
    evbuffer_drain(c->req_head, evbuffer_get_length(c->req_head));
    conn_arm_timer(c, cfg->body_timeout_ms);
    return 1;
}

/* A backend connection whose exchange ended cleanly goes to the pool, the
 * others are closed. now: the clock as read for this callback (proxy_now_ms:
 * each read takes the loop's lock). */
static void finish_exchange(struct proxy_client *c, unsigned long long now)
{
    struct reg_backend *b = c->backend;
    if (c->up && b && c->req_done && c->up_keepalive && !c->upgrade &&
        stream_output_length(c->up) == 0) {
        proxy_pool_put(c->srv->pool, c->up, (struct sockaddr *)&b->addr, b->addrlen,
                       c->srv->cfg.pool_size, c->srv->cfg.pool_idle_ms, now);
        c->up = NULL; /* the pool's now: not closed below */
    }
    upstream_release(c);
    if (!c->req_done)
        c->close_after = 1;
    conn_backend_done_at(c, now);
    conn_next_request(c);
}

void upstream_feed_response(struct proxy_client *c)
{
    struct evbuffer *in = stream_input(c->up);
    struct evbuffer *out = stream_output(c->bev);
    unsigned long long now = 0; /* the clock, read once in this pass when needed */
    while (!c->resp_done && evbuffer_get_length(in) > 0) {
        if (!c->resp_started) {
            int r = read_response_head(c);
            if (r == 0)
                stream_ack_now(c->up);
            if (r <= 0)
                return;
            continue;
        }
        if (evbuffer_get_length(out) >= c->srv->cfg.buffer_size) {
            c->up_paused = 1;
            stream_disable_read(c->up);
            return;
        }
        struct evbuffer_iovec v;
        llhttp_errno_t err;
        if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
            break;
        size_t used = http_msg_feed(&c->resp, v.iov_base, v.iov_len, &err);
        if (c->resp_copy)
            evbuffer_drain(in, used);
        else if (c->resp_done)
            stream_send_from(c->bev, in, used); /* the last piece: out now, with the head */
        else
            stream_move(in, out, used);
        c->last_ms = now = now ? now : proxy_now_ms(c->srv);
        if (err != HPE_OK && err != HPE_PAUSED) {
            /* The head is out: what was well framed goes too, then the
             * connection ends short, so the client sees an incomplete body. */
            conn_log(c, "closed short: malformed body",
                     "closed %s from %s short: %s sent a malformed body: %s", c->path, c->ip,
                     c->backend->name, llhttp_get_error_reason(&c->resp.parser));
            conn_close_after_flush(c);
            return;
        }
    }
    if (c->resp_done)
        finish_exchange(c, now ? now : proxy_now_ms(c->srv));
    else if (!c->up_paused)
        stream_ack_now(c->up);
}

static void up_read_cb(struct stream *bev, void *arg)
{
    struct proxy_client *c = arg;
    (void)bev;
    c->resp_bytes = 1;
    if (!c->up_paused)
        upstream_feed_response(c);
}

static void up_write_cb(struct stream *bev, void *arg)
{
    struct proxy_client *c = arg;
    (void)bev;
    c->last_ms = proxy_now_ms(c->srv);
    if (c->client_paused && !c->req_done) {
        c->client_paused = 0;
        if (!c->client_eof)
            stream_enable_read(c->bev);
        conn_feed_request_body(c);
    }
}

/* The server on the backend's port did not answer: whatever listens there
 * next must prove again which checkout and code it serves. A refused
 * connection says so in ls and on the dashboard, which said "verified" of
 * a Node server killed under its live watcher (nothing listened until the
 * next edit). */
static void listener_lost(struct proxy_client *c, int refused)
{
    char why[256];
    snprintf(why, sizeof why,
             "its port %d refused the last request's connection while its process lives: it is "
             "between two versions, or its server died under a reloader or watcher that lives "
             "on; wtproxy asks its /__whoami again at the next request",
             c->backend->port);
    whoami_gate_forget(c->backend->gate, refused ? why : NULL);
    if (refused && c->backend->gate)
        proxy_backend_show(c->backend);
}

/* A backend whose server process lives but refuses connections is
 * restarting (an autoreloader between two code versions): retry for
 * reload_grace instead of failing. Returns 1 when a retry is scheduled. */
static int reloading(struct proxy_client *c)
{
    struct reg_backend *b = c->backend;
    unsigned long long now = proxy_now_ms(c->srv);
    if (b->pid <= 0 || b->state == REG_DEAD || host_pid_start(b->pid) != b->pid_start)
        return 0;
    if (!c->refused_since_ms)
        c->refused_since_ms = now;
    if (now - c->refused_since_ms >= c->srv->cfg.reload_grace_ms)
        return 0;
    upstream_release(c);
    conn_wait(c, WTP_RELOAD_POLL_MS);
    return 1;
}

/* The backend closed or failed. What the client sees depends on how far
 * the exchange got: a retry, an error page, a complete close-delimited
 * body, or a connection closed short. */
static void up_closed(struct proxy_client *c, short what, int err)
{
    char d[480];
    if (!c->resp_bytes && c->from_pool && !c->retried && c->req_bodyless) {
        /* The backend closed this idle connection as we reused it: the
         * request never reached it, so sending it again is safe. */
        upstream_release(c);
        c->retried = 1;
        upstream_start(c);
        return;
    }
    if (!c->resp_bytes)
        listener_lost(c, 0);
    /* Accepted, then closed unanswered by a server whose process lives: it
     * is restarting (the listener closed with us in its queue). A request
     * without a body is sent again once it listens. */
    if (!c->resp_bytes && c->req_bodyless && reloading(c))
        return;
    if (!c->resp_started) {
        snprintf(d, sizeof d, "%s %s before its response head%s%s", c->backend->name,
                 (what & STREAM_EOF) ? "closed the connection" : "failed", err ? ": " : "",
                 err ? strerror(err) : "");
        conn_fail(c, PE_BACKEND_BAD_RESPONSE, d);
        return;
    }
    if ((what & STREAM_EOF) && llhttp_message_needs_eof(&c->resp.parser)) {
        llhttp_finish(&c->resp.parser);
        if (c->resp_done) {
            finish_exchange(c, proxy_now_ms(c->srv));
            return;
        }
    }
    conn_log(c, "closed short: ended mid-body", "closed %s from %s short: %s ended mid-body",
             c->path, c->ip, c->backend->name);
    conn_close_after_flush(c);
}

static void up_event_cb(struct stream *bev, short what, void *arg)
{
    struct proxy_client *c = arg;
    int err = errno;
    (void)bev;
    if (what & STREAM_CONNECTED) {
        send_request(c);
        return;
    }
    if (c->state == CS_CONNECT)
        listener_lost(c, err == ECONNREFUSED && c->backend->pid > 0 &&
                             host_pid_start(c->backend->pid) == c->backend->pid_start);
    if (c->state == CS_CONNECT && err == ECONNREFUSED && reloading(c))
        return;
    if (c->state == CS_CONNECT) {
        char d[480];
        snprintf(d, sizeof d, "connect to %s: %s", c->backend->name,
                 err ? strerror(err) : "connection failed");
        conn_fail(c, PE_BACKEND_UNREACHABLE, d);
        return;
    }
    /* Reads stop while the client lags (backpressure), so an EOF is only
     * seen once every byte before it went through up_read_cb. */
    up_closed(c, what, (what & STREAM_EOF) ? 0 : err);
}
