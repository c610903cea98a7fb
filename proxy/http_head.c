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

/* Fields that never cross the proxy as they came. */
static int dropped(const struct http_msg *m, const struct http_field *f, int upgrade,
                   int request, int no_length)
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
    return named_by_connection(m, f);
}

static void add_field(struct evbuffer *out, const char *name, size_t nlen, const char *value,
                      size_t vlen)
{
    evbuffer_add(out, name, nlen);
    evbuffer_add(out, ": ", 2);
    evbuffer_add(out, value, vlen);
    evbuffer_add(out, "\r\n", 2);
}

static void add_kept_fields(struct evbuffer *out, const struct http_msg *m, int upgrade,
                            int request, int no_length)
{
    for (size_t i = 0; i < m->nfields; i++) {
        const struct http_field *f = &m->fields[i];
        if (!dropped(m, f, upgrade, request, no_length))
            add_field(out, f->name, f->nlen, f->value, f->vlen);
    }
}

void http_head_write_request(struct evbuffer *out, const struct http_msg *m,
                             const struct http_forward *fw)
{
    const char *method = llhttp_method_name(llhttp_get_method((llhttp_t *)&m->parser));
    evbuffer_add(out, method, strlen(method));
    evbuffer_add(out, " ", 1);
    evbuffer_add(out, m->url, m->url_len);
    evbuffer_add(out, " HTTP/1.1\r\n", 11);
    const struct http_field *host = http_msg_field(m, "host", NULL);
    if (!host)
        add_field(out, "Host", 4, fw->default_host, strlen(fw->default_host));
    add_kept_fields(out, m, fw->upgrade, 1, 0);
    add_field(out, "X-Forwarded-For", 15, fw->client_ip, strlen(fw->client_ip));
    if (host)
        add_field(out, "X-Forwarded-Host", 16, host->value, host->vlen);
    else
        add_field(out, "X-Forwarded-Host", 16, fw->default_host, strlen(fw->default_host));
    evbuffer_add(out, "X-Forwarded-Proto: http\r\n", 25);
    if (fw->chunked)
        evbuffer_add(out, "Transfer-Encoding: chunked\r\n", 28);
    if (fw->upgrade)
        evbuffer_add(out, "Connection: upgrade\r\n", 21);
    evbuffer_add(out, "\r\n", 2);
}

void http_head_write_response(struct evbuffer *out, const struct http_msg *m,
                              const struct http_reply *r)
{
    /* Digits by hand: snprintf cost 800 instructions a response. The
     * status was checked to be 100-599 (upstream.c). */
    int status = llhttp_get_status_code((llhttp_t *)&m->parser);
    char line[] = "HTTP/1.1 000 ";
    line[9] = (char)('0' + status / 100 % 10);
    line[10] = (char)('0' + status / 10 % 10);
    line[11] = (char)('0' + status % 10);
    evbuffer_add(out, line, sizeof line - 1);
    evbuffer_add(out, m->reason, m->reason_len);
    evbuffer_add(out, "\r\n", 2);
    /* RFC 9110 §8.6: no Content-Length in a 1xx or a 204. A client that
     * honours one there reads the next response's bytes as this one's body
     * (found by tests/fuzz/fuzz_response). */
    int no_length = status < 200 || status == 204;
    add_kept_fields(out, m, r->upgrade, 0, no_length);
    if (r->chunked)
        evbuffer_add(out, "Transfer-Encoding: chunked\r\n", 28);
    if (r->upgrade)
        evbuffer_add(out, "Connection: upgrade\r\n", 21);
    else if (r->close)
        evbuffer_add(out, "Connection: close\r\n", 19);
    evbuffer_add(out, "\r\n", 2);
}
