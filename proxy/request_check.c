/* request_check.c - see request_check.h. The grammar it enforces:
 *
 *   request-line  = method SP request-target SP HTTP-version   (RFC 9112 §3)
 *   request-target: origin-form | absolute-form | "*" (OPTIONS only, §3.2.4);
 *                   ASCII only (RFC 3986: a raw octet above 0x7F is not in it)
 *   Host          = uri-host [ ":" port ]   one, non-empty (§3.2, RFC 9110 §4.2.1)
 *   Transfer-Encoding: on HTTP/1.1 only; every field's codings in order
 *                   form one list; chunked is in it once, last (§6.1, §6.3) */
#include "request_check.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static int fail(enum proxy_error *e, enum proxy_error reason, char *d, size_t cap, const char *what)
{
    *e = reason;
    snprintf(d, cap, "%s", what);
    return -1;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}
static int is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* unreserved / sub-delims (RFC 3986 §2), without the comma: a Host with a
 * comma reads as a list to some servers (wtproxy refused it before). */
static int reg_name_char(char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '.' || c == '-')
        return 1; /* nearly every byte of a Host, without a strchr */
    return c != 0 && strchr("_~!$&'()*+;=", c) != NULL;
}

/* uri-host [":" port], uri-host = IP-literal / IPv4address / reg-name, not
 * empty. [v, v + n) is a field value: llhttp took the whitespace around it. */
static int host_valid(const char *v, size_t n)
{
    size_t i = 0;
    if (n > 0 && v[0] == '[') {
        for (i = 1; i < n && v[i] != ']'; i++)
            if (!reg_name_char(v[i]) && v[i] != ':')
                return 0;
        if (i == n || i == 1)
            return 0;
        i++;
    } else {
        for (; i < n && v[i] != ':'; i++) {
            if (v[i] == '%' && i + 2 < n && is_hex(v[i + 1]) && is_hex(v[i + 2]))
                i += 2;
            else if (!reg_name_char(v[i]))
                return 0;
        }
        if (i == 0)
            return 0;
    }
    if (i < n && v[i++] != ':')
        return 0;
    for (; i < n; i++)
        if (!is_digit(v[i]))
            return 0;
    return 1;
}

static int check_host(const struct http_msg *m, enum proxy_error *e, char *d, size_t cap)
{
    int nhost;
    const struct http_field *host = http_msg_field(m, "host", &nhost);
    if (nhost > 1)
        return fail(e, PE_BAD_REQUEST, d, cap, "the request has two Host headers");
    if (!host && m->parser.http_minor == 1)
        return fail(e, PE_BAD_REQUEST, d, cap, "an HTTP/1.1 request without a Host header");
    if (host && host->vlen == 0)
        return fail(e, PE_BAD_REQUEST, d, cap, "the Host header is empty");
    if (host && !host_valid(host->value, host->vlen))
        return fail(e, PE_BAD_REQUEST, d, cap, "the Host header is not a host[:port]");
    return 0;
}

static int check_target(const struct http_msg *m, enum proxy_error *e, char *d, size_t cap)
{
    if (m->url_len > 0 && m->url[0] == '*') {
        if (m->url_len > 1)
            return fail(e, PE_BAD_REQUEST, d, cap, "a request-target starting with * is * alone");
        if (m->parser.method != HTTP_OPTIONS)
            return fail(e, PE_BAD_REQUEST, d, cap,
                        "the request-target * (asterisk-form) is for OPTIONS only "
                        "(RFC 9112 §3.2.4)");
    }
    for (size_t i = 0; i < m->url_len; i++)
        if ((unsigned char)m->url[i] >= 0x80)
            return fail(e, PE_BAD_REQUEST, d, cap,
                        "the request-target has a raw byte above 0x7F: percent-encode it "
                        "(RFC 3986 §2.1)");
    return 0;
}

/* The codings of every Transfer-Encoding field, in order, as one list. */
struct codings {
    size_t count, chunked;
    int last_chunked, empty, malformed;
    const char *first_other; /* the first coding that is not chunked */
    size_t first_other_len;
};

/* One element of the list: coding *( OWS ";" OWS parameter ). */
static void add_coding(struct codings *c, const char *s, size_t n)
{
    while (n > 0 && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n == 0) {
        c->empty = 1;
        return;
    }
    size_t name = 0;
    while (name < n && s[name] != ';' && s[name] != ' ' && s[name] != '\t')
        name++;
    for (size_t i = 0; i < name; i++)
        if (!http_is_tchar((unsigned char)s[i]))
            c->malformed = 1;
    c->count++;
    c->last_chunked = name == 7 && strncasecmp(s, "chunked", 7) == 0;
    if (c->last_chunked) {
        c->chunked++;
        c->malformed |= name != n; /* chunked takes no parameters */
    } else if (!c->first_other) {
        c->first_other = s;
        c->first_other_len = n;
    }
}

static void list_codings(const struct http_msg *m, struct codings *c)
{
    for (size_t i = 0; i < m->nfields; i++) {
        const struct http_field *f = &m->fields[i];
        if (f->nlen != 17 || strncasecmp(f->name, "transfer-encoding", 17) != 0)
            continue;
        size_t start = 0;
        for (size_t j = 0; j <= f->vlen; j++) {
            if (j == f->vlen || f->value[j] == ',') {
                add_coding(c, f->value + start, j - start);
                start = j + 1;
            }
        }
    }
}

/* RFC 9112 §6.3: a request whose chunked is not the final coding, once,
 * has no reliable length: 400 and close. §6.1: a coding the server does
 * not understand: 501. Empty list elements, which RFC 9110 §5.6.1 would
 * have a recipient skip, are refused here: on a framing field, a reader
 * that does not skip them sees another list (", chunked", "chunked,"). */
static int check_te(const struct http_msg *m, int nte, enum proxy_error *e, char *d, size_t cap)
{
    struct codings c = {0};
    if (nte == 0)
        return 0;
    if (m->parser.http_minor == 0)
        return fail(e, PE_BAD_REQUEST, d, cap, "Transfer-Encoding on an HTTP/1.0 request");
    list_codings(m, &c);
    if (c.empty)
        return fail(e, PE_BAD_REQUEST, d, cap, "the Transfer-Encoding list has an empty element");
    if (c.malformed)
        return fail(e, PE_BAD_REQUEST, d, cap, "a Transfer-Encoding coding is not a token");
    if (c.chunked > 1)
        return fail(e, PE_BAD_REQUEST, d, cap, "Transfer-Encoding lists chunked twice");
    if (!c.last_chunked && c.count > 1)
        return fail(e, PE_BAD_REQUEST, d, cap,
                    "chunked is not the final Transfer-Encoding coding (RFC 9112 §6.3)");
    if (c.first_other) {
        *e = PE_UNSUPPORTED_TE;
        snprintf(d, cap, "Transfer-Encoding: %.*s",
                 (int)(c.first_other_len < 100 ? c.first_other_len : 100), c.first_other);
        return -1;
    }
    return 0;
}

int request_check(const struct http_msg *m, enum proxy_error *e, char *detail, size_t cap)
{
    const llhttp_t *p = &m->parser;
    int nte;
    if (p->http_major != 1)
        return fail(e, PE_BAD_REQUEST, detail, cap, "only HTTP/1.0 and HTTP/1.1 are served");
    if (p->method == HTTP_CONNECT)
        return fail(e, PE_UNSUPPORTED_METHOD, detail, cap, "CONNECT");
    /* llhttp takes "GET  / HTTP/1.1"; RFC 9112 §3 allows one SP each side
     * of the target, and a server that splits on runs of spaces reads
     * another target than we route. */
    if (m->url[-1] != ' ' || m->url[-2] == ' ' || m->url[m->url_len] != ' ' ||
        m->url[m->url_len + 1] != 'H')
        return fail(e, PE_BAD_REQUEST, detail, cap,
                    "the request line is not METHOD SP TARGET SP VERSION");
    if (check_target(m, e, detail, cap) < 0 || check_host(m, e, detail, cap) < 0)
        return -1;
    http_msg_field(m, "transfer-encoding", &nte);
    return check_te(m, nte, e, detail, cap);
}

const char *request_parse_error(const struct http_msg *m, llhttp_errno_t err)
{
    /* llhttp stops on a Transfer-Encoding list that goes on after chunked
     * while it reads the field, before check_te sees the head */
    if (err == HPE_INVALID_TRANSFER_ENCODING)
        return "chunked is not the final Transfer-Encoding coding, once (RFC 9112 §6.3)";
    return llhttp_get_error_reason(&m->parser);
}
