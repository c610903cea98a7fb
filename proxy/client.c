/* client.c - the client side of a connection, and the connection's life:
 * accept, its callbacks and timers, keep alive or close. Answering a
 * refusal is client_fail.c. Reading and checking each request head and
 * streaming the request body is client_request.c. The backend side is
 * upstream.c. */
#include "client.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "gate.h"
#include "host.h"
#include "log_flood.h"
#include "ondemand.h"
#include "request_check.h"
#include "http_head.h"
#include "route.h"

static void client_read_cb(struct stream *bev, void *arg);
static void client_write_cb(struct stream *bev, void *arg);
static void client_event_cb(struct stream *bev, short what, void *arg);
static void timer_cb(evutil_socket_t fd, short what, void *arg);

static size_t max_size(size_t a, size_t b)
{
    return a > b ? a : b;
}

void conn_set_client_callbacks(struct proxy_client *c)
{
    stream_setcb(c->bev, client_read_cb, client_write_cb, client_event_cb, c);
}

/* a's dotted quad into buf (INET_ADDRSTRLEN): what inet_ntop writes,
 * without the sprintf it makes per call (about 1 400 instructions, 4% of
 * a Connection: close request). */
static void ipv4_text(const struct in_addr *a, char *buf)
{
    const unsigned char *b = (const unsigned char *)&a->s_addr;
    char *p = buf;
    for (int i = 0; i < 4; i++) {
        unsigned v = b[i];
        if (v >= 100)
            *p++ = (char)('0' + v / 100);
        if (v >= 10)
            *p++ = (char)('0' + v / 10 % 10);
        *p++ = (char)('0' + v % 10);
        *p++ = i < 3 ? '.' : '\0';
    }
}

/* Blocks of closed connections kept for the next ones, with their two
 * emptied request buffers: a connection's block (about 1.6 KiB) is larger
 * than what glibc's per-thread cache holds, so malloc and free each went
 * through the arena's bins, and the buffers cost two allocations and two
 * frees more per Connection: close request. Bounded, per loop thread
 * (connections live on the loop that accepted them). */
#define CLIENT_SPARE_MAX 64
/* Under AddressSanitizer none is kept: a stale pointer to a closed
 * connection must land in freed memory, where ASan catches it. */
#ifdef __SANITIZE_ADDRESS__
#define CLIENT_SPARE_KEPT 0
#else
#define CLIENT_SPARE_KEPT CLIENT_SPARE_MAX
#endif
static _Thread_local struct proxy_client *spare[CLIENT_SPARE_MAX];
static _Thread_local int nspare;

static size_t client_block_size(size_t *head)
{
    size_t a = _Alignof(max_align_t);
    *head = (sizeof(struct proxy_client) + a - 1) / a * a;
    return *head + event_get_struct_event_size();
}

/* The connection and its timer in one block (evtimer_assign), as stream.c
 * does for its events: one allocation and one free less per connection.
 * Its request buffers come with a spare block, or are made here; NULL when
 * out of memory. */
static struct proxy_client *client_alloc(struct event_base *base)
{
    size_t head, size = client_block_size(&head);
    struct evbuffer *req_head = NULL, *req_prefix = NULL;
    struct proxy_client *c = NULL;
    if (nspare > 0) {
        c = spare[--nspare];
        req_head = c->req_head, req_prefix = c->req_prefix;
    } else {
        c = malloc(size);
        req_head = evbuffer_new();
        req_prefix = evbuffer_new();
    }
    if (!c || !req_head || !req_prefix) {
        if (req_head)
            evbuffer_free(req_head);
        if (req_prefix)
            evbuffer_free(req_prefix);
        free(c);
        return NULL;
    }
    memset(c, 0, size);
    c->req_head = req_head, c->req_prefix = req_prefix;
    c->timer = (struct event *)((char *)c + head);
    evtimer_assign(c->timer, base, timer_cb, c);
    return c;
}

static void client_free(struct proxy_client *c)
{
    evbuffer_free(c->req_head);
    evbuffer_free(c->req_prefix);
    free(c);
}

/* A closed connection's block, its timer deleted: kept, buffers emptied,
 * or freed. */
static void client_release(struct proxy_client *c)
{
    if (nspare >= CLIENT_SPARE_KEPT) {
        client_free(c);
        return;
    }
    evbuffer_drain(c->req_head, evbuffer_get_length(c->req_head));
    evbuffer_drain(c->req_prefix, evbuffer_get_length(c->req_prefix));
    spare[nspare++] = c;
}

void proxy_client_free_spares(void)
{
    while (nspare > 0)
        client_free(spare[--nspare]);
    stream_free_spares();
}

void proxy_client_accept(struct proxy_server *s, struct proxy_listener *l, evutil_socket_t fd,
                         const struct sockaddr *peer)
{
    struct proxy_client *c = client_alloc(s->base);
    if (!c)
        close(fd);
    else if (!(c->bev = stream_new(s->base, fd))) { /* it closed fd */
        client_release(c);
        c = NULL;
    }
    if (!c) {
        log_flood_line(s->flood, "out of memory: dropped a connection",
                       "out of memory: dropped a connection");
        return;
    }
    c->srv = s;
    c->listener = l;
    if (!l->nodelay) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (peer->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)peer)->sin6_addr, c->ip, sizeof c->ip);
    else
        ipv4_text(&((const struct sockaddr_in *)peer)->sin_addr, c->ip);
    conn_set_client_callbacks(c);
    stream_set_read_high(c->bev, max_size(s->cfg.max_head_size + 1, 16384));
    stream_set_write_low(c->bev, s->cfg.buffer_size / 2);
    stream_enable_read(c->bev);
    c->state = CS_IDLE;
    /* A new connection is there to send a request: it gets head_timeout. */
    conn_arm_timer(c, s->cfg.head_timeout_ms);
    TAILQ_INSERT_TAIL(&s->clients, c, link);
    s->nclients++;
    conn_identify_at_accept(c);
}

static void timer_add(struct proxy_client *c, long long now, unsigned ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    c->timer_at_ms = evtimer_add(c->timer, &tv) == 0 ? now + ms : 0;
}

/* The connection's one deadline moves several times a request (head,
 * response, body, keep-alive), and each evtimer_add is a heap operation:
 * a later deadline only moves c->deadline_ms, and the timer, still armed
 * for the earlier one, re-arms itself when it fires early (timer_cb). A
 * keep-alive connection re-arms once per head_timeout instead of four times
 * a request. Monotonic, so a wall-clock step neither fires nor delays it.
 * Whether it is armed is c->timer_at_ms, not evtimer_pending: libevent
 * takes the base's lock to answer, about 45 instructions a call. */
void conn_arm_timer(struct proxy_client *c, unsigned ms)
{
    long long now = host_mono_ms();
    c->deadline_ms = now + ms;
    if (c->timer_at_ms && c->timer_at_ms <= c->deadline_ms)
        return;
    timer_add(c, now, ms);
}

void conn_stop_timer(struct proxy_client *c)
{
    if (!c->timer_at_ms)
        return; /* an event_del of a timer that is not pending still locks */
    evtimer_del(c->timer);
    c->timer_at_ms = 0;
}

void conn_close(struct proxy_client *c)
{
    if (c->state == CS_HANDLER)
        c->handler->on_close(c);
    identify_cancel(c->ident_ticket);
    whoami_gate_cancel(c->srv->gate, c->gate_ticket);
    ondemand_cancel(c->file_ticket);
    if (c->who && c->srv->ident)
        identify_forget(c->srv->ident, c->who->pid, c->who->fd);
    free(c->who);
    conn_backend_done(c);
    upstream_release(c);
    stream_free(c->bev);
    conn_stop_timer(c);
    reg_backend_unref(c->backend);
    proxy_server_client_gone(c->srv, c);
    client_release(c);
}

/* Half-close our side once everything is written, then read and discard
 * until the client closes or WTP_LINGER_MS pass: closing with unread input
 * would make the kernel send a reset that can destroy our last answer. */
static void linger(struct proxy_client *c)
{
    c->lingering = 1;
    shutdown(stream_fd(c->bev), SHUT_WR);
    evbuffer_drain(stream_input(c->bev), evbuffer_get_length(stream_input(c->bev)));
    stream_set_read_high(c->bev, 0);
    stream_enable_read(c->bev);
    conn_arm_timer(c, WTP_LINGER_MS);
}

/* Everything is written. A client that asked to close and sent nothing
 * more is closed at once (nginx does the same); one that may still be
 * sending (a refused or cut request, or a close it did not ask for) gets
 * the lingering close. */
static void output_done(struct proxy_client *c)
{
    if (c->client_eof ||
        (c->req_done && !c->keepalive && evbuffer_get_length(stream_input(c->bev)) == 0))
        conn_close(c);
    else
        linger(c);
}

void conn_close_after_flush(struct proxy_client *c)
{
    upstream_release(c);
    c->state = CS_CLOSING;
    stream_disable_read(c->bev);
    stream_set_write_low(c->bev, 0);
    if (stream_output_length(c->bev) == 0) {
        output_done(c);
        return;
    }
    /* A client that does not read its last answer gets body_timeout. */
    conn_arm_timer(c, c->srv->cfg.body_timeout_ms);
}

static void client_read_cb(struct stream *bev, void *arg)
{
    struct proxy_client *c = arg;
    switch (c->state) {
    case CS_IDLE:
    case CS_HEAD:
        conn_read_request_head(c);
        break;
    case CS_FORWARD:
        if (!c->req_done && !c->client_paused)
            conn_feed_request_body(c);
        break;
    case CS_HANDLER: /* a body the handler reads itself, or nothing it wants */
        if (c->handler->on_read)
            c->handler->on_read(c);
        else
            evbuffer_drain(stream_input(bev), evbuffer_get_length(stream_input(bev)));
        break;
    case CS_CLOSING:
        evbuffer_drain(stream_input(bev), evbuffer_get_length(stream_input(bev)));
        break;
    default:
        break; /* CS_CONNECT: the body waits in the input buffer */
    }
}

static void client_write_cb(struct stream *bev, void *arg)
{
    struct proxy_client *c = arg;
    c->last_ms = proxy_now_ms(c->srv);
    if (c->state == CS_CLOSING) {
        if (!c->lingering && stream_output_length(bev) == 0)
            output_done(c);
        return;
    }
    if (c->up_paused && c->up) {
        c->up_paused = 0;
        stream_enable_read(c->up);
        upstream_feed_response(c);
    }
}

static void client_event_cb(struct stream *bev, short what, void *arg)
{
    struct proxy_client *c = arg;
    (void)bev;
    if (!(what & STREAM_EOF) || c->state == CS_IDLE || c->state == CS_HEAD ||
        c->state == CS_CLOSING || c->state == CS_HANDLER) {
        conn_close(c);
        return;
    }
    c->client_eof = 1;
    /* A client that stops sending mid-request has given up on it; one that
     * half-closes after a whole request still gets its answer. One whose
     * EOF comes once its answer flows has closed (an EventSource closed, a
     * page left): its backend connection goes now, not at a write to it
     * that fails, seconds later or never, while the server waited for it
     * (uvicorn --reload takes no edit in until its connections close). */
    if (!c->req_done) {
        conn_close(c);
    } else if (c->resp_started) {
        conn_log(c, "closed: client gone mid-response",
                 "closed %s from %s: the client closed its connection mid-response", c->path,
                 c->ip);
        conn_close(c);
    }
}

static void forward_timeout(struct proxy_client *c)
{
    const struct proxy_config *cfg = &c->srv->cfg;
    unsigned long long now = proxy_now_ms(c->srv);
    if (c->req_done && !c->resp_started) {
        if (now - c->req_done_ms >= cfg->response_timeout_ms) {
            char d[480];
            snprintf(d, sizeof d, "no response head from %s within response_timeout (%u ms)",
                     c->backend->name, cfg->response_timeout_ms);
            conn_fail(c, PE_BACKEND_TIMEOUT, d);
        } else {
            conn_arm_timer(c, (unsigned)(cfg->response_timeout_ms - (now - c->req_done_ms)));
        }
        return;
    }
    if (now - c->last_ms >= cfg->body_timeout_ms) {
        conn_log(c, "closed: body_timeout",
                 "closed %s from %s: no body byte moved for body_timeout (%u ms)", c->path, c->ip,
                 cfg->body_timeout_ms);
        conn_close(c);
        return;
    }
    conn_arm_timer(c, (unsigned)(cfg->body_timeout_ms - (now - c->last_ms)));
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct proxy_client *c = arg;
    char d[480];
    long long now = host_mono_ms();
    (void)fd;
    (void)what;
    c->timer_at_ms = 0;         /* a one-shot timer: it fired */
    if (now < c->deadline_ms) { /* armed for a deadline since moved later */
        timer_add(c, now, (unsigned)(c->deadline_ms - now));
        return;
    }
    switch (c->state) {
    case CS_HEAD:
        conn_fail(c, PE_HEAD_TIMEOUT, NULL);
        break;
    case CS_CONNECT:
        snprintf(d, sizeof d, "connecting to %s took longer than connect_timeout (%u ms)",
                 c->backend->name, c->srv->cfg.connect_timeout_ms);
        conn_fail(c, PE_BACKEND_UNREACHABLE, d);
        break;
    case CS_FORWARD:
        forward_timeout(c);
        break;
    case CS_WAIT:
        conn_wait_timeout(c);
        break;
    case CS_IDENTIFY:
        identify_cancel(c->ident_ticket);
        c->ident_ticket = NULL;
        conn_fail(c, PE_IDENTIFY_TIMEOUT, NULL);
        break;
    case CS_TUNNEL:
        break;
    case CS_HANDLER:
        c->handler->on_timer(c);
        break;
    default: /* CS_IDLE: keep-alive over; CS_CLOSING: done lingering */
        conn_close(c);
    }
}

void proxy_client_shutdown(struct proxy_client *c)
{
    c->stopping = 1;
    if (c->state == CS_IDLE || c->state == CS_HANDLER)
        conn_close(c);
}

void proxy_client_abort(struct proxy_client *c)
{
    conn_close(c);
}
