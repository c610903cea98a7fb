/* tunnel.c - after a 101 Switching Protocols, the client and the backend
 * sockets are joined byte for byte until either side closes (le-proxy's
 * shape: stop reading a side while its peer's output is over buffer_size). */
#include "conn.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static struct stream *peer_of(struct proxy_client *c, struct stream *bev)
{
    return bev == c->bev ? c->up : c->bev;
}

/* The refusal a tunnel's server earns by the verdict ls shows (state),
 * -1 when it may go on. */
static int verdict_error(const char *state)
{
    return !strcmp(state, "stale")      ? PE_STALE_CODE
           : !strcmp(state, "mismatch") ? PE_CHECKOUT_MISMATCH
           : !strcmp(state, "broken")   ? PE_BROKEN
                                        : -1;
}

/* The tunnel's server no longer runs the code on disk (an edit it did
 * not take in: daphne, which never reloads), now answers for another
 * checkout, or answers /__whoami with an error since an edit broke it
 * (hugo server, whose open live-reload socket went on talking): an open
 * WebSocket went on being answered by it while every new request was
 * refused, and a user's WebSocket test passed on code no longer on disk.
 * Closed at its next bytes, either way, and kept as a refusal of its
 * request, so that `wtproxy refusals` and the Playwright reporter name
 * it; the page's reconnect is a new request, which the gate judges (and
 * at which a server started from a .wtproxy is restarted). The verdict is
 * the one ls shows, copied on the loop as the gate decides: an idle
 * tunnel decides nothing. */
static int closed_for_verdict(struct proxy_client *c)
{
    const struct reg_backend *b = c->backend;
    int e = b ? verdict_error(b->whoami.state) : -1;
    if (e < 0)
        return 0;
    char d[sizeof b->whoami.detail + PATH_MAX + 128], fix[PATH_MAX + 256];
    snprintf(d, sizeof d,
             "closed this upgraded connection (a WebSocket) to the dev server of %s (pid %d): %s",
             b->worktree, (int)b->pid, b->whoami.detail);
    if (b->restart_on_stale)
        snprintf(fix, sizeof fix,
                 "%sconnect again (reload the page): wtproxy restarts the server at that request, "
                 "on the code on disk",
                 e == PE_BROKEN ? "fix the error and save, then " : "");
    else
        snprintf(fix, sizeof fix,
                 "%scd %s && wtproxy restart --front %d, then connect again (reload the page)",
                 e == PE_BROKEN ? "fix the error and save, or " : "", b->worktree, b->front);
    conn_fail_tunnel(c, (enum proxy_error)e, d, fix);
    return 1;
}

static void tunnel_read_cb(struct stream *bev, void *arg)
{
    struct proxy_client *c = arg;
    if (closed_for_verdict(c))
        return;
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
