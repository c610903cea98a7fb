/* http_head.c - hop-by-hop filtering and head serialization. */
#include "http_head.h"

#include <string.h>
#include <strings.h>

static int name_is(const struct http_field *f, const char *name)
{
    size_t len = strlen(name);
    return f->nlen == len && strncasecmp(f->name, name, len) == 0;
}

/* Whether any Connection field of m names this field (RFC 9110 §7.6.1:
 * such fields are meant for the next hop only). */
static int named_by_connection(const struct http_msg *m, const struct http_field *f)
{
    char name[128];
    if (f->nlen >= sizeof name)
        return 0;
    memcpy(name, f->name, f->nlen);
    name[f->nlen] = '\0';
    for (size_t i = 0; i < m->nfields; i++) {
        const struct http_field *c = &m->fields[i];
        if (name_is(c, "connection") && http_list_has(c->value, c->vlen, name))
            return 1;
    }
    return 0;
}

/* Fields that never cross the proxy as they came. connection: m has a
 * Connection field (most responses have none: no field is looked up). */
static int dropped(const struct http_msg *m, const struct http_field *f, int upgrade,
                   int request, int no_length, int connection)
{
    static const char *const hop[] = {"connection", "keep-alive", "te", "trailer",
                                      "transfer-encoding", NULL};
    static const char *const forwarding[] = {"x-forwarded-for", "x-forwarded-host",
                                             "x-forwarded-proto", NULL};
    for (int i = 0; hop[i]; i++)
        if (name_is(f, hop[i]))
            return 1;
    if (request)
        for (int i = 0; forwarding[i]; i++)
            if (name_is(f, forwarding[i]))
                return 1;
    if (f->nlen >= 6 && strncasecmp(f->name, "proxy-", 6) == 0)
        return 1;
    if (name_is(f, "upgrade"))
        return !upgrade;
    if (no_length && name_is(f, "content-length"))
        return 1;
    return connection && named_by_connection(m, f);
}

/* A head is put together here and added to the output in one piece: an
 * evbuffer_add per piece ran the output's callbacks four times a field, a
 * quarter of a keep-alive request's instructions (callgrind). A head
 * larger than the buffer goes out in several adds. */
struct head_writer {
    struct evbuffer *out;
    size_t len;
    char buf[4096];
};

static void put(struct head_writer *w, const char *s, size_t n)
{
    if (n == 0)
        return; /* s may be NULL then (an empty reason phrase): no memcpy */
    if (n > sizeof w->buf - w->len) {
        evbuffer_add(w->out, w->buf, w->len);
        w->len = 0;
        if (n > sizeof w->buf) {
            evbuffer_add(w->out, s, n);
            return;
        }
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void put_str(struct head_writer *w, const char *s) { put(w, s, strlen(s)); }

static void put_field(struct head_writer *w, const char *name, size_t nlen, const char *value,
                      size_t vlen)
{
    put(w, name, nlen);
    put(w, ": ", 2);
    put(w, value, vlen);
    put(w, "\r\n", 2);
}

static void put_kept_fields(struct head_writer *w, const struct http_msg *m, int upgrade,
                            int request, int no_length)
{
    int connection = http_msg_field(m, "connection", NULL) != NULL;
    for (size_t i = 0; i < m->nfields; i++) {
        const struct http_field *f = &m->fields[i];
        if (!dropped(m, f, upgrade, request, no_length, connection))
            put_field(w, f->name, f->nlen, f->value, f->vlen);
    }
}

static void finish(struct head_writer *w)
{
    put(w, "\r\n", 2);
    evbuffer_add(w->out, w->buf, w->len);
}

void http_head_write_request(struct evbuffer *out, const struct http_msg *m,
                             const struct http_forward *fw)
{
    struct head_writer w = {.out = out};
    put_str(&w, llhttp_method_name(llhttp_get_method((llhttp_t *)&m->parser)));
    put(&w, " ", 1);
    put(&w, m->url, m->url_len);
    put_str(&w, " HTTP/1.1\r\n");
    const struct http_field *host = http_msg_field(m, "host", NULL);
    if (!host)
        put_field(&w, "Host", 4, fw->default_host, strlen(fw->default_host));
    put_kept_fields(&w, m, fw->upgrade, 1, 0);
    put_field(&w, "X-Forwarded-For", 15, fw->client_ip, strlen(fw->client_ip));
    if (host)
        put_field(&w, "X-Forwarded-Host", 16, host->value, host->vlen);
    else
        put_field(&w, "X-Forwarded-Host", 16, fw->default_host, strlen(fw->default_host));
    put_str(&w, "X-Forwarded-Proto: http\r\n");
    if (fw->chunked)
        put_str(&w, "Transfer-Encoding: chunked\r\n");
    if (fw->upgrade)
        put_str(&w, "Connection: upgrade\r\n");
    finish(&w);
}

void http_head_write_response(struct evbuffer *out, const struct http_msg *m,
                              const struct http_reply *r)
{
    struct head_writer w = {.out = out};
    /* Digits by hand: snprintf cost 800 instructions a response. The
     * status was checked to be 100-599 (upstream.c). */
    int status = llhttp_get_status_code((llhttp_t *)&m->parser);
    char line[] = "HTTP/1.1 000 ";
    line[9] = (char)('0' + status / 100 % 10);
    line[10] = (char)('0' + status / 10 % 10);
    line[11] = (char)('0' + status % 10);
    put(&w, line, sizeof line - 1);
    put(&w, m->reason, m->reason_len);
    put(&w, "\r\n", 2);
    /* RFC 9110 §8.6: no Content-Length in a 1xx or a 204. A client that
     * honours one there reads the next response's bytes as this one's body
     * (found by tests/fuzz/fuzz_response). */
    int no_length = status < 200 || status == 204;
    put_kept_fields(&w, m, r->upgrade, 0, no_length);
    if (r->chunked)
        put_str(&w, "Transfer-Encoding: chunked\r\n");
    if (r->upgrade)
        put_str(&w, "Connection: upgrade\r\n");
    else if (r->close)
        put_str(&w, "Connection: close\r\n");
    finish(&w);
}
