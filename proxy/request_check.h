/* request_check.h - what a request head must be before any of it is
 * relayed, beyond what llhttp checks (RFC 9112 §3, §6; proxy/RELAY.md). */
#ifndef WTP_REQUEST_CHECK_H
#define WTP_REQUEST_CHECK_H

#include <stddef.h>

#include "error_page.h"
#include "http_msg.h"

/* Check the head of m (fed by http_msg_feed_request_head), inside its
 * headers_complete. Returns 0 when it may be relayed, or -1 with *e the
 * reason and detail (cap bytes, NUL-terminated) what exactly is wrong. */
int request_check(const struct http_msg *m, enum proxy_error *e, char *detail, size_t cap);

/* What to tell the client when llhttp refused m's head with err (the
 * reason is always bad-request: llhttp refuses malformed messages). */
const char *request_parse_error(const struct http_msg *m, llhttp_errno_t err);

#endif
