/* tunnel.c - after a 101 Switching Protocols, the client and the backend
 * sockets are joined byte for byte until either side closes (le-proxy's
 * shape: stop reading a side while its peer's output is over buffer_size). */
#include "conn.h"

static struct stream *peer_of(struct proxy_client *c, struct stream *bev)
{
    return bev == c->bev ? c->up : c->bev;
}

static void tunnel_read_cb(struct stream *bev, void *arg)
{
    struct proxy_client *c = arg;
    struct evbuffer *out = stream_output(peer_of(c, bev));
    evbuffer_add_buffer(out, stream_input(bev));
    if (evbuffer_get_length(out) >= c->srv->cfg.buffer_size)
        stream_disable_read(bev);
}

static void tunnel_write_cb(struct stream *bev, void *arg)
{
    struct proxy_client *c = arg;
    if (bev == c->up && c->client_eof) {
        if (evbuffer_get_length(stream_output(bev)) == 0)
            conn_close(c);
        return;
    }
    stream_enable_read(peer_of(c, bev));
}

/* One side ended: what it sent still goes to the other, then both close.
 * The backend ending hands the client to the usual flush-and-linger close. */
static void tunnel_event_cb(struct stream *bev, short what, void *arg)
{
    struct proxy_client *c = arg;
    struct stream *peer = peer_of(c, bev);
    (void)what;
    evbuffer_add_buffer(stream_output(peer), stream_input(bev));
    if (bev == c->up) {
        conn_set_client_callbacks(c);
        conn_close_after_flush(c);
        return;
    }
    c->client_eof = 1;
    if (evbuffer_get_length(stream_output(c->up)) == 0) {
        conn_close(c);
        return;
    }
    stream_set_write_low(c->up, 0);
}

void tunnel_start(struct proxy_client *c)
{
    c->state = CS_TUNNEL;
    conn_stop_timer(c);
    evbuffer_drain(c->req_head, evbuffer_get_length(c->req_head));
    stream_setcb(c->bev, tunnel_read_cb, tunnel_write_cb, tunnel_event_cb, c);
    stream_setcb(c->up, tunnel_read_cb, tunnel_write_cb, tunnel_event_cb, c);
    stream_set_read_high(c->bev, 0);
    stream_set_read_high(c->up, 0);
    /* Bytes that came with the heads belong to the new protocol. */
    evbuffer_add_buffer(stream_output(c->bev), stream_input(c->up));
    evbuffer_add_buffer(stream_output(c->up), stream_input(c->bev));
    stream_enable_read(c->bev);
    stream_enable_read(c->up);
}
