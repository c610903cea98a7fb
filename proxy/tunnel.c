/* tunnel.c - after a 101 Switching Protocols, the client and the backend
 * sockets are joined byte for byte until either side closes (le-proxy's
 * shape: stop reading a side while its peer's output is over buffer_size). */
#include "conn.h"

static struct bufferevent *peer_of(struct proxy_client *c, struct bufferevent *bev)
{
    return bev == c->bev ? c->up : c->bev;
}

static void tunnel_read_cb(struct bufferevent *bev, void *arg)
{
    struct proxy_client *c = arg;
    struct evbuffer *out = bufferevent_get_output(peer_of(c, bev));
    evbuffer_add_buffer(out, bufferevent_get_input(bev));
    if (evbuffer_get_length(out) >= c->srv->cfg.buffer_size)
        bufferevent_disable(bev, EV_READ);
}

static void tunnel_write_cb(struct bufferevent *bev, void *arg)
{
    struct proxy_client *c = arg;
    if (bev == c->up && c->client_eof) {
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
            conn_close(c);
        return;
    }
    bufferevent_enable(peer_of(c, bev), EV_READ);
}

/* One side ended: what it sent still goes to the other, then both close.
 * The backend ending hands the client to the usual flush-and-linger close. */
static void tunnel_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct proxy_client *c = arg;
    struct bufferevent *peer = peer_of(c, bev);
    (void)what;
    evbuffer_add_buffer(bufferevent_get_output(peer), bufferevent_get_input(bev));
    if (bev == c->up) {
        conn_set_client_callbacks(c);
        conn_close_after_flush(c);
        return;
    }
    c->client_eof = 1;
    if (evbuffer_get_length(bufferevent_get_output(c->up)) == 0) {
        conn_close(c);
        return;
    }
    bufferevent_setwatermark(c->up, EV_WRITE, 0, 0);
}

void tunnel_start(struct proxy_client *c)
{
    c->state = CS_TUNNEL;
    evtimer_del(c->timer);
    evbuffer_drain(c->req_head, evbuffer_get_length(c->req_head));
    bufferevent_setcb(c->bev, tunnel_read_cb, tunnel_write_cb, tunnel_event_cb, c);
    bufferevent_setcb(c->up, tunnel_read_cb, tunnel_write_cb, tunnel_event_cb, c);
    bufferevent_setwatermark(c->bev, EV_READ, 0, 0);
    bufferevent_setwatermark(c->up, EV_READ, 0, 0);
    /* Bytes that came with the heads belong to the new protocol. */
    evbuffer_add_buffer(bufferevent_get_output(c->bev), bufferevent_get_input(c->up));
    evbuffer_add_buffer(bufferevent_get_output(c->up), bufferevent_get_input(c->bev));
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    bufferevent_enable(c->up, EV_READ | EV_WRITE);
}
