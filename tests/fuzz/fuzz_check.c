/* fuzz_check.c - see fuzz_check.h. */
#include "fuzz_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_msg.h"

struct fz_ctx {
    int strict;
    int response;
    const struct fz_msgs *req; /* for responses: which requests were HEAD */
    struct fz_msgs *out;
    size_t final_seen; /* final (non-1xx) responses so far */
};

static FILE *report;

void fz_quiet_logs(void)
{
    int fd = dup(2);
    FILE *null = fopen("/dev/null", "w");
    if (fd < 0 || !(report = fdopen(fd, "w")) || !null)
        abort();
    stderr = null;
}

void fz_violated(const char *what, const char *buf, size_t len)
{
    fprintf(report ? report : stderr,
            "fuzz invariant violated: %s\n--- stream (%zu bytes) ---\n%.*s\n---\n", what, len,
            (int)(len > 4000 ? 4000 : len), buf ? buf : "");
    fflush(report ? report : stderr);
    abort();
}

static const char *request_framing_error(struct http_msg *m)
{
    int ncl, nte, nhost;
    http_msg_field(m, "content-length", &ncl);
    http_msg_field(m, "transfer-encoding", &nte);
    http_msg_field(m, "host", &nhost);
    if (ncl && nte)
        return "Content-Length and Transfer-Encoding both forwarded";
    if (ncl > 1)
        return "two Content-Length fields forwarded";
    if (nte > 1)
        return "two Transfer-Encoding fields forwarded";
    if (nhost != 1)
        return "a forwarded request without exactly one Host";
    return NULL;
}

static int on_head(struct http_msg *m)
{
    struct fz_ctx *x = m->owner;
    llhttp_t *p = &m->parser;
    if (!x->response) {
        if (x->strict) {
            const char *e = request_framing_error(m);
            if (e) {
                x->out->error = e;
                return -1;
            }
        }
        if (x->out->n < FZ_MAX_MSGS)
            x->out->head[x->out->n] = p->method == HTTP_HEAD;
        return 0;
    }
    int status = p->status_code;
    /* RFC 9110 §8.6: a client may honour a Content-Length wherever it is,
     * so none may reach it on a response that has no body by its status. */
    if ((status < 200 || status == 204) && http_msg_field(m, "content-length", NULL)) {
        x->out->error = "a 1xx or 204 relayed with a Content-Length";
        return -1;
    }
    /* RFC 9112 §6.3: a 1xx, 204 or 304 has no body whatever its fields say
     * (llhttp 8.1 would read one); a 101 then pauses for the upgrade. */
    if (status < 200 || status == 204 || status == 304) {
        if (status >= 200)
            x->final_seen++;
        return 1;
    }
    size_t i = x->final_seen++;
    int head = x->req && i < x->req->n && i < FZ_MAX_MSGS && x->req->head[i];
    return head ? 1 : 0;
}

static int on_body(struct http_msg *m, const char *at, size_t n)
{
    (void)m;
    (void)at;
    (void)n;
    return 0;
}

static int on_done(struct http_msg *m)
{
    (void)m;
    return HPE_PAUSED;
}

static const struct http_msg_hooks hooks = {on_head, on_body, on_done};

static void parse(const char *buf, size_t len, const struct head_scan_limits *lim, struct fz_ctx *x)
{
    struct fz_msgs *out = x->out;
    size_t off = 0;
    while (off < len && !out->upgraded) {
        struct head_scan hs;
        head_scan_init(&hs);
        long h = head_scan_feed(&hs, buf + off, len - off, lim);
        if (h == 0)
            break;
        if (h < 0) {
            out->error = hs.error;
            break;
        }
        struct http_msg m;
        llhttp_errno_t err;
        http_msg_init(&m, x->response ? HTTP_RESPONSE : HTTP_REQUEST, &hooks, x);
        size_t used;
        if (x->response) {
            used = http_msg_feed(&m, buf + off, len - off, &err);
        } else { /* the relay's way, extension methods and all */
            err = http_msg_feed_request_head(&m, buf + off, (size_t)h);
            used = (size_t)h;
            if (err == HPE_OK)
                used += http_msg_feed(&m, buf + off + h, len - off - (size_t)h, &err);
        }
        if (err == HPE_PAUSED || err == HPE_PAUSED_UPGRADE) {
            /* a 1xx is its own message but answers no request; after an
             * upgrade (or a 101) the bytes are another protocol's */
            int upgrade = err == HPE_PAUSED_UPGRADE || m.parser.upgrade;
            out->n++;
            /* A server may refuse to switch and go on in HTTP (RFC 9110
             * §7.8): a client's later requests still count, for the HEAD
             * flags that frame their responses. What the proxy sent a
             * backend stops here: after a 101 it is a tunnel's bytes. */
            if (upgrade && !x->response && !x->strict)
                out->asked_upgrade = 1;
            else
                out->upgraded = upgrade;
        } else if (err != HPE_OK) {
            if (!out->error)
                out->error = llhttp_get_error_reason(&m.parser);
            break;
        } else {
            break; /* a body still arriving */
        }
        off += used;
        out->consumed = off;
    }
}

void fz_parse_requests(const char *buf, size_t len, const struct head_scan_limits *lim, int strict,
                       struct fz_msgs *out)
{
    struct fz_ctx x = {strict, 0, NULL, out, 0};
    memset(out, 0, sizeof *out);
    parse(buf, len, lim, &x);
    if (strict && out->error)
        fz_violated(out->error, buf, len);
}

void fz_parse_responses(const char *buf, size_t len, const struct fz_msgs *req, struct fz_msgs *out)
{
    struct head_scan_limits lim = {64 * 1024, 1024 * 1024, 1024};
    struct fz_ctx x = {1, 1, req, out, 0};
    memset(out, 0, sizeof *out);
    parse(buf, len, &lim, &x);
    if (out->error)
        fz_violated(out->error, buf, len);
}
