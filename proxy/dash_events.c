/* dash_events.c - /__wtproxy/events: a Server-Sent Events stream per open
 * dashboard (DASHBOARD.md has the events).
 *
 * The registry never calls into the proxy, so its changes are found by
 * looking: while a stream is open, every WTP_DASH_POLL_MS the backends'
 * JSON is built and compared with what was sent last; only a difference is
 * sent. The leases are compared the same way, but a PostgreSQL store is
 * read on the registry's PostgreSQL thread, at most every
 * WTP_DASH_LEASES_PG_MS (every WTP_DASH_LEASES_RETRY_MS while it fails),
 * one read at a time. The refusal log tells us of each new refusal (we
 * subscribe to it): the new ones go out at the end of that loop turn, a
 * burst in one event. A stream is a connection in CS_HANDLER: no keepalive
 * or response timeout applies, its timer is the heartbeat, and it closes
 * when the browser goes, when it stops reading (WTP_DASH_STREAM_BUFFER
 * unread), or when the daemon stops. */
#include "dash.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "refusal_log.h"
#include "host.h"

struct dash {
    struct proxy_server *srv;
    struct proxy_client *streams[WTP_DASH_MAX_STREAMS];
    size_t n;
    struct event *poll;
    struct event *refused;          /* activated by a new refusal */
    char *backends;                 /* the backends JSON last sent */
    char *leases;                   /* the /api/leases JSON last sent */
    void *leases_job;               /* a read of the PostgreSQL store under way */
    long long leases_next_ms;       /* a PostgreSQL store is not read before (monotonic) */
    unsigned long long refusal_seq; /* the newest refusal sent */
};

static void poll_cb(evutil_socket_t fd, short what, void *arg);
static void refused_cb(evutil_socket_t fd, short what, void *arg);

/* The refusal log has entry seq: send it (and any other new one) once
 * this loop turn is over, when a stream is open. */
static void refusal_added(void *arg, unsigned long long seq)
{
    struct dash *d = arg;
    (void)seq;
    if (d->n > 0)
        event_active(d->refused, 0, 0);
}

struct dash *dash_events_new(struct proxy_server *s)
{
    struct dash *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->srv = s;
    d->poll = event_new(s->base, -1, EV_PERSIST, poll_cb, d);
    d->refused = event_new(s->base, -1, 0, refused_cb, d);
    if (!d->poll || !d->refused || refusal_log_subscribe(s->refusals, refusal_added, d) < 0) {
        dash_events_free(d);
        return NULL;
    }
    return d;
}

void dash_events_free(struct dash *d)
{
    if (!d)
        return;
    refusal_log_unsubscribe(d->srv->refusals, refusal_added, d);
    if (d->leases_job)
        dash_api_leases_cancel(d->srv, d->leases_job);
    if (d->poll)
        event_free(d->poll);
    if (d->refused)
        event_free(d->refused);
    free(d->backends);
    free(d->leases);
    free(d);
}

/* "event: NAME\ndata: JSON\n\n" to c; compact JSON holds no newline. */
static void send_text(struct proxy_client *c, const char *name, const char *json)
{
    evbuffer_add_printf(stream_output(c->bev), "event: %s\ndata: %s\n\n", name, json);
}

static void send_json(struct proxy_client *c, const char *name, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    if (s)
        send_text(c, name, s);
    free(s);
}

/* j (consumed) as compact JSON; NULL out of memory. */
static char *text_of(json_t *j)
{
    char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return t;
}

/* Send text (consumed) as event name to every stream when it differs
 * from *last, which then holds it. */
static void send_changed(struct dash *d, const char *name, char **last, char *text)
{
    if (!text || (*last && strcmp(text, *last) == 0)) {
        free(text);
        return;
    }
    for (size_t i = 0; i < d->n; i++)
        send_text(d->streams[i], name, text);
    free(*last);
    *last = text;
}

/* The leases j (consumed) were read: send them if they changed. A
 * PostgreSQL store is not read again before WTP_DASH_LEASES_PG_MS (after
 * an error, WTP_DASH_LEASES_RETRY_MS). */
static void leases_read(struct dash *d, json_t *j)
{
    const char *store = json_string_value(json_object_get(j, "store"));
    if (store && strcmp(store, "postgresql") == 0)
        d->leases_next_ms = host_mono_ms() + (json_object_get(j, "error") ? WTP_DASH_LEASES_RETRY_MS
                                                                          : WTP_DASH_LEASES_PG_MS);
    send_changed(d, "leases", &d->leases, text_of(j));
}

static void leases_ready(void *arg, json_t *j)
{
    struct dash *d = arg;
    d->leases_job = NULL;
    leases_read(d, j);
}

/* Read the leases, unless a read is under way or a PostgreSQL store was
 * read too recently. */
static void broadcast_leases(struct dash *d)
{
    if (d->leases_job || host_mono_ms() < d->leases_next_ms)
        return;
    json_t *j = dash_api_leases(d->srv, leases_ready, d, &d->leases_job);
    if (j)
        leases_read(d, j);
}

/* The refusals added since the last sent, to every stream. */
static void send_refusals(struct dash *d)
{
    unsigned long long seq = refusal_log_seq(d->srv->refusals);
    if (seq == d->refusal_seq)
        return;
    json_t *news = refusal_log_json(d->srv->refusals, d->refusal_seq);
    for (size_t i = 0; news && i < d->n; i++)
        send_json(d->streams[i], "refusals", news);
    json_decref(news);
    d->refusal_seq = seq;
}

/* Close the streams whose browser stopped reading. From the last: closing
 * one moves the last stream into its slot, already looked at. */
static void close_slow(struct dash *d)
{
    for (size_t i = d->n; i-- > 0;) {
        struct proxy_client *c = d->streams[i];
        if (evbuffer_get_length(stream_output(c->bev)) > WTP_DASH_STREAM_BUFFER) {
            conn_log(c, "dashboard event stream stopped reading",
                     "closed a dashboard event stream from %s: it stopped reading", c->ip);
            conn_close(c);
        }
    }
}

/* Send what changed since the last look to every stream. */
static void broadcast(struct dash *d)
{
    send_changed(d, "backends", &d->backends, text_of(dash_api_backends(d->srv)));
    broadcast_leases(d);
    send_refusals(d);
    close_slow(d);
}

static void refused_cb(evutil_socket_t fd, short what, void *arg)
{
    struct dash *d = arg;
    (void)fd;
    (void)what;
    send_refusals(d);
    close_slow(d);
}

static void poll_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    broadcast(arg);
}

void dash_events_serve(struct proxy_client *c)
{
    struct dash *d = c->srv->dash;
    if (!d || d->n >= WTP_DASH_MAX_STREAMS) {
        dash_events_refuse(c);
        return;
    }
    /* The others first, so that from here on all streams have seen the
     * same backends and refusals and the next change goes to all alike. */
    broadcast(d);
    if (d->n == 0) {
        struct timeval tv = {0, WTP_DASH_POLL_MS * 1000};
        event_add(d->poll, &tv);
    }
    d->streams[d->n++] = c;
    c->state = CS_HANDLER;
    c->resp_started = 1;
    stream_set_read_high(c->bev, 0);
    evbuffer_add_printf(stream_output(c->bev),
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
                        "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
                        "Connection: close\r\n\r\nretry: 1000\n\n");
    json_t *daemon = dash_api_daemon(c->srv);
    send_json(c, "daemon", daemon);
    json_decref(daemon);
    if (d->backends)
        send_text(c, "backends", d->backends);
    json_t *all = refusal_log_json(c->srv->refusals, 0);
    send_json(c, "refusals", all);
    json_decref(all);
    if (d->leases)
        send_text(c, "leases", d->leases);
    conn_arm_timer(c, WTP_DASH_HEARTBEAT_MS);
}

int dash_events_has(const struct proxy_client *c)
{
    const struct dash *d = c->srv->dash;
    for (size_t i = 0; d && i < d->n; i++)
        if (d->streams[i] == c)
            return 1;
    return 0;
}

void dash_events_gone(struct proxy_client *c)
{
    struct dash *d = c->srv->dash;
    for (size_t i = 0; d && i < d->n; i++) {
        if (d->streams[i] == c) {
            d->streams[i] = d->streams[--d->n];
            break;
        }
    }
    if (d && d->n == 0)
        event_del(d->poll);
}

void dash_events_heartbeat(struct proxy_client *c)
{
    if (evbuffer_get_length(stream_output(c->bev)) > WTP_DASH_STREAM_BUFFER) {
        conn_close(c);
        return;
    }
    evbuffer_add(stream_output(c->bev), ":\n\n", 3);
    conn_arm_timer(c, WTP_DASH_HEARTBEAT_MS);
}
