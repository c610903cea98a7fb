/* http_head.h - rewrite a parsed head for the other side of the proxy
 * (RFC 9110 §7.6.1): hop-by-hop fields go, forwarding fields are set. */
#ifndef WTP_HTTP_HEAD_H
#define WTP_HTTP_HEAD_H

#include <event2/buffer.h>

#include "http_msg.h"

/* What the proxy adds to a request it forwards. */
struct http_forward {
    const char *client_ip;    /* X-Forwarded-For, replacing the client's */
    const char *default_host; /* Host to send when an HTTP/1.0 client sent none */
    int chunked;              /* the body follows re-chunked */
    int upgrade;              /* keep Upgrade and send Connection: upgrade */
};

/* How the proxy answers the client with a backend's response. */
struct http_reply {
    int chunked; /* the body follows re-chunked */
    int close;   /* Connection: close, the client connection ends after it */
    int upgrade; /* a 101: keep Upgrade and send Connection: upgrade */
};

/* Append "METHOD URL HTTP/1.1" (the client's method bytes, m fed by
 * http_msg_feed_request_head; any HTTP/1.x goes on as 1.1), the end-to-end
 * fields of m, the forwarding fields and the blank line to out. Call inside
 * m's headers_complete. A field whose name reads, with '-' for '_', as one
 * the proxy owns (Content_Length, Transfer_Encoding, X_Forwarded_For...)
 * is dropped: the first such is returned for the log, NULL when none. */
const struct http_field *http_head_write_request(struct evbuffer *out, const struct http_msg *m,
                                                 const struct http_forward *fw);

/* Append "HTTP/1.1 STATUS REASON", the end-to-end fields of m, the framing
 * and connection fields and the blank line to out. */
void http_head_write_response(struct evbuffer *out, const struct http_msg *m,
                              const struct http_reply *r);

#endif
