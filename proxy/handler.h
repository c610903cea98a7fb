/* handler.h - requests the daemon answers itself, behind one small
 * interface (as h2o's handlers are): the connection (client.c) knows a
 * handler only by this table, never by name or by its states. Today there
 * is one, the dashboard (dash.c); another (a health check, an HTTPS
 * certificate page) would be a second table.
 *
 * A request is a handler's when its path is the handler's prefix alone or
 * the prefix followed by '/' or '?'. That check is the only cost a proxied
 * request pays: no call, no allocation. A handler's request may keep its
 * connection past its answer (an event stream) or before it (a reply that
 * waits for a worker thread): the connection is then in CS_HANDLER, and
 * its timer and its end are the handler's. Internal to proxy/. */
#ifndef WTP_HANDLER_H
#define WTP_HANDLER_H

#include <stddef.h>

struct proxy_client;
struct http_msg;

struct proxy_handler {
    const char *prefix; /* "/__wtproxy" */
    size_t prefix_len;

    /* The request's head is complete and still readable (its bytes are
     * gone once it is parsed): note in c what serve() needs from it. */
    void (*on_head)(struct proxy_client *c, const struct http_msg *m);

    /* The head is parsed: answer (conn_next_request or
     * conn_close_after_flush), or set c->state to CS_HANDLER and keep c. */
    void (*serve)(struct proxy_client *c);

    /* c is in CS_HANDLER and bytes arrived (a request body the handler
     * reads itself); NULL: they are discarded. */
    void (*on_read)(struct proxy_client *c);

    /* c is in CS_HANDLER and its timer fired. */
    void (*on_timer)(struct proxy_client *c);

    /* c is in CS_HANDLER and is being closed (the client went, the server
     * stops): forget c and cancel what works for it. */
    void (*on_close)(struct proxy_client *c);
};

#endif
