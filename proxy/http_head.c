/* http_head.c - hop-by-hop filtering and head serialization. */
#include "http_head.h"

#include <string.h>
#include <strings.h>

struct field_name {
    const char *name;
    size_t len;
};
#define FIELD_NAME(lit)                                                                            \
    {                                                                                              \
        "" lit, sizeof(lit) - 1                                                                    \
    }

/* Length first, then the first bytes with 0x20 set (bytes equal ignoring
 * case are equal so: no false negative): most fields differ there, without
 * a call to strncasecmp. */
static int name_is(const struct http_field *f, struct field_name n)
{
    return f->nlen == n.len && (f->name[0] | 0x20) == (n.name[0] | 0x20) &&
           strncasecmp(f->name, n.name, n.len) == 0;
}

static int name_in(const struct http_field *f, const struct field_name *names, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (name_is(f, names[i]))
            return 1;
    return 0;
}

/* What is known of a message before its fields are filtered: among it the
 * names its Connection fields list (RFC 9110 §7.6.1: those fields are meant
 * for the next hop only), parsed once per head rather than once a field. */
#define CONNECTION_NAMES_MAX 16
struct field_filter {
    int upgrade, request, no_length;
    int named_overflow; /* more names than fit: each field scans the lists */
    size_t nnamed;
    struct field_name named[CONNECTION_NAMES_MAX];
};

static const struct field_name connection_name = FIELD_NAME("connection");

static void list_connection_names(const struct http_msg *m, struct field_filter *ff)
{
    for (size_t i = 0; i < m->nfields; i++) {
        const struct http_field *c = &m->fields[i];
        size_t pos = 0;
        struct field_name t;
        if (!name_is(c, connection_name))
            continue;
        while (http_list_next(c->value, c->vlen, &pos, &t.name, &t.len)) {
            if (ff->nnamed == CONNECTION_NAMES_MAX) {
                ff->named_overflow = 1;
                return;
            }
            ff->named[ff->nnamed++] = t;
        }
    }
}

static int named_by_connection(const struct http_msg *m, const struct field_filter *ff,
                               const struct http_field *f)
{
    if (!ff->named_overflow)
        return name_in(f, ff->named, ff->nnamed);
    for (size_t i = 0; i < m->nfields; i++) {
        const struct http_field *c = &m->fields[i];
        if (name_is(c, connection_name) && http_list_has_n(c->value, c->vlen, f->name, f->nlen))
            return 1;
    }
    return 0;
}

static const struct field_name content_length = FIELD_NAME("content-length");

/* Fields the proxy removes or replaces whatever the message (not counting
 * those a Connection field names). */
static int proxy_owned(const struct field_filter *ff, const struct http_field *f)
{
    static const struct field_name hop[] = {
        FIELD_NAME("connection"), FIELD_NAME("keep-alive"),        FIELD_NAME("te"),
        FIELD_NAME("trailer"),    FIELD_NAME("transfer-encoding"),
    };
    static const struct field_name forwarding[] = {
        FIELD_NAME("x-forwarded-for"),
        FIELD_NAME("x-forwarded-host"),
        FIELD_NAME("x-forwarded-proto"),
    };
    if (name_in(f, hop, sizeof hop / sizeof *hop))
        return 1;
    if (ff->request && name_in(f, forwarding, sizeof forwarding / sizeof *forwarding))
        return 1;
    return f->nlen >= 6 && (f->name[0] | 0x20) == 'p' && strncasecmp(f->name, "proxy-", 6) == 0;
}

/* A request field whose name, read with '-' for '_', is Content-Length or
 * one the proxy removes or replaces: CGI/WSGI environs and some frameworks
 * fold both to '_', so to them Content_Length is a second length and
 * X_Forwarded_For a forged client address. */
static int lookalike(const struct field_filter *ff, const struct http_field *f)
{
    char folded[32];
    if (!ff->request)
        return 0;
    /* the owned names with a '-': Proxy-*, and 10 (Keep-Alive) or 14 to 17
     * bytes long (Content-Length to X-Forwarded-Proto): others cost no memchr */
    int maybe =
        (f->nlen >= 6 && f->name[5] == '_') || f->nlen == 10 || (f->nlen >= 14 && f->nlen <= 17);
    if (!maybe || f->nlen > sizeof folded || !memchr(f->name, '_', f->nlen))
        return 0;
    for (uint32_t i = 0; i < f->nlen; i++)
        folded[i] = f->name[i] == '_' ? '-' : f->name[i];
    struct http_field g = {.name = folded, .nlen = f->nlen};
    return proxy_owned(ff, &g) || name_is(&g, content_length);
}

/* Fields that never cross the proxy as they came. Each name is compared by
 * length first: most fields differ there and cost no strncasecmp. */
static int dropped(const struct http_msg *m, const struct field_filter *ff,
                   const struct http_field *f)
{
    static const struct field_name upgrade = FIELD_NAME("upgrade");
    if (proxy_owned(ff, f))
        return 1;
    if (name_is(f, upgrade))
        return !ff->upgrade;
    if (ff->no_length && name_is(f, content_length))
        return 1;
    return named_by_connection(m, ff, f);
}

/* A head is put together here and added to the output in one piece: an
 * evbuffer_add per piece ran the output's callbacks four times a field, a
 * quarter of a keep-alive request's instructions (callgrind). A head
 * larger than the buffer goes out in several adds. Start one with
 * writer_init, not an initializer: `= {.out = out}` zeroed the 4 KiB
 * buffer, about 520 instructions a head. */
struct head_writer {
    struct evbuffer *out;
    size_t len;
    char buf[4096];
};

static void writer_init(struct head_writer *w, struct evbuffer *out)
{
    w->out = out;
    w->len = 0;
}

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

static void put_str(struct head_writer *w, const char *s)
{
    put(w, s, strlen(s));
}

static void put_field(struct head_writer *w, const char *name, size_t nlen, const char *value,
                      size_t vlen)
{
    put(w, name, nlen);
    put(w, ": ", 2);
    put(w, value, vlen);
    put(w, "\r\n", 2);
}

/* Content-Length = 1*DIGIT (RFC 9110 §8.6) allows "005"; the next hop gets
 * "5", so that no reader can take the leading zeros for octal or a sign of
 * something else. llhttp has checked the digits. */
static void put_field_value_of(struct head_writer *w, const struct http_field *f)
{
    const char *v = f->value;
    size_t n = f->vlen;
    if (n > 1 && v[0] == '0' && name_is(f, content_length)) {
        while (n > 1 && v[0] == '0' && v[1] >= '0' && v[1] <= '9')
            v++, n--;
    }
    put_field(w, f->name, f->nlen, v, n);
}

/* Returns the first request field dropped as a look-alike, NULL if none. */
static const struct http_field *put_kept_fields(struct head_writer *w, const struct http_msg *m,
                                                int upgrade, int request, int no_length)
{
    /* not an initializer, which would zero every slot of ff.named */
    struct field_filter ff;
    ff.upgrade = upgrade, ff.request = request, ff.no_length = no_length;
    ff.named_overflow = 0, ff.nnamed = 0;
    const struct http_field *odd = NULL;
    list_connection_names(m, &ff);
    for (size_t i = 0; i < m->nfields; i++) {
        const struct http_field *f = &m->fields[i];
        if (dropped(m, &ff, f))
            continue;
        if (lookalike(&ff, f)) {
            odd = odd ? odd : f;
            continue;
        }
        put_field_value_of(w, f);
    }
    return odd;
}

static void finish(struct head_writer *w)
{
    put(w, "\r\n", 2);
    evbuffer_add(w->out, w->buf, w->len);
}

const struct http_field *http_head_write_request(struct evbuffer *out, const struct http_msg *m,
                                                 const struct http_forward *fw)
{
    struct head_writer w;
    writer_init(&w, out);
    put(&w, m->method, m->method_len);
    put(&w, " ", 1);
    put(&w, m->url, m->url_len);
    put_str(&w, " HTTP/1.1\r\n");
    const struct http_field *host = http_msg_field(m, "host", NULL);
    if (!host)
        put_field(&w, "Host", 4, fw->default_host, strlen(fw->default_host));
    const struct http_field *odd = put_kept_fields(&w, m, fw->upgrade, 1, 0);
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
    return odd;
}

void http_head_write_response(struct evbuffer *out, const struct http_msg *m,
                              const struct http_reply *r)
{
    struct head_writer w;
    writer_init(&w, out);
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
