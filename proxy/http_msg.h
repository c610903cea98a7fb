/* http_msg.h - one direction of an HTTP/1.x connection, parsed by llhttp.
 *
 * The head's fields are collected as spans into the caller's contiguous head
 * buffer and are valid only inside the headers_complete hook: that hook does
 * all the work that needs them (validate, rewrite, serialize). Body bytes and
 * the end of the message go to the owner's hooks. Every llhttp lenient flag
 * stays off. */
#ifndef WTP_HTTP_MSG_H
#define WTP_HTTP_MSG_H

#include <llhttp.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy_limits.h"

struct http_field {
    const char *name, *value;
    uint32_t nlen, vlen;
};

struct http_msg;

struct http_msg_hooks {
    /* llhttp's contract: 0 go on, 1 no body, 2 no body and upgrade, -1 error */
    int (*headers_complete)(struct http_msg *m);
    /* 0, or -1 to stop with an error */
    int (*body)(struct http_msg *m, const char *at, size_t len);
    /* 0, or HPE_PAUSED to stop right after the message */
    int (*message_complete)(struct http_msg *m);
};

struct http_msg {
    llhttp_t parser;
    const struct http_msg_hooks *hooks;
    void *owner;
    const char *url, *reason; /* spans of the current head */
    size_t url_len, reason_len;
    const char *method; /* a request's method as the client sent it */
    size_t method_len;
    struct http_field *fields;
    size_t nfields;
    /* llhttp 8.1 skips the two bytes after chunk data without looking:
     * "5\r\nhelloXX0\r\n" passes. We check them (see http_msg.c). */
    const char *feed_end;
    uint64_t chunk_left; /* data bytes left in the current chunk */
    int crlf_left;       /* bytes of the CRLF after chunk data still unchecked */
};

void http_msg_init(struct http_msg *m, llhttp_type_t type, const struct http_msg_hooks *hooks,
                   void *owner);

/* Feed bytes. Returns the number consumed (all of them unless the parser
 * paused at the end of a message or stopped on an error), and sets *err to
 * llhttp's errno (HPE_OK, HPE_PAUSED, HPE_PAUSED_UPGRADE, or an error).
 * A paused parser is resumed by the next call. */
size_t http_msg_feed(struct http_msg *m, const char *p, size_t n, llhttp_errno_t *err);

/* Feed a whole request head (head_scan found its end). llhttp 8.1 knows a
 * fixed table of methods and the versions 1.0, 1.1 and 2.0; RFC 9110 §9.1
 * makes methods extensible, and §2.5 has a recipient read HTTP/1.x with x
 * above 1 as the highest 1.x it supports. So when llhttp refuses the start
 * line because of either, the head is fed again with a placeholder method
 * llhttp knows (m->method keeps the client's, which is what the relay
 * forwards) or with the minor version read as 1. Everything else stays
 * llhttp's to refuse. A method that is not a token, or that differs from
 * one llhttp knows only in case (a backend that folds case would frame
 * its response as that method's), stays refused, with its own reason.
 * Returns llhttp's errno, as http_msg_feed sets it. */
llhttp_errno_t http_msg_feed_request_head(struct http_msg *m, const char *head, size_t len);

/* The value of the only field called name (case-insensitive); NULL when
 * absent. *count receives how many there are. The macro takes a string
 * literal (`"" name` refuses anything else) so that its length is known at
 * compile time: these lookups run several times on every request. */
const struct http_field *http_msg_field_n(const struct http_msg *m, const char *name, size_t len,
                                          int *count);
#define http_msg_field(m, name, count) http_msg_field_n((m), "" name, sizeof(name) - 1, (count))

/* The next element of a comma-separated field value from *pos on, without
 * the whitespace around it: 1 with (*elem, *elen), or 0 when none is left. */
int http_list_next(const char *v, size_t len, size_t *pos, const char **elem, size_t *elen);

/* Whether c is a tchar, a byte of a token (RFC 9110 §5.6.2). */
int http_is_tchar(unsigned char c);

/* Whether a comma-separated field value lists token (case-insensitive). */
int http_list_has_n(const char *v, size_t len, const char *token, size_t tlen);
#define http_list_has(v, len, token) http_list_has_n((v), (len), "" token, sizeof(token) - 1)

#endif
