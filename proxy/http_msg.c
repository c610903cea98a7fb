/* http_msg.c - llhttp glue: collect head spans, hand body and end to hooks;
 * extension methods and HTTP/1.x versions above 1.1 through to llhttp. */
#include "http_msg.h"

#include <string.h>
#include <strings.h>

/* One scratch array for every head: the loop is single-threaded and a head
 * is fully handled inside its headers_complete hook. */
static struct http_field scratch[WTP_FIELDS_CAP];

static struct http_msg *msg_of(llhttp_t *p)
{
    return p->data;
}

static int on_message_begin(llhttp_t *p)
{
    struct http_msg *m = msg_of(p);
    m->url = m->reason = NULL;
    m->url_len = m->reason_len = 0;
    m->fields = scratch;
    m->nfields = 0;
    scratch[0].name = NULL;
    return 0;
}

/* Spans arrive whole because heads are fed in one contiguous buffer; the
 * joins below keep us correct if llhttp ever splits one anyway. */
static int join(const char **start, size_t *len, const char *at, size_t n)
{
    if (!*start)
        *start = at;
    else if (*start + *len != at)
        return -1;
    *len += n;
    return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n)
{
    return join(&msg_of(p)->url, &msg_of(p)->url_len, at, n);
}

static int on_status(llhttp_t *p, const char *at, size_t n)
{
    return join(&msg_of(p)->reason, &msg_of(p)->reason_len, at, n);
}

static int on_header_field(llhttp_t *p, const char *at, size_t n)
{
    struct http_msg *m = msg_of(p);
    if (m->nfields >= WTP_FIELDS_CAP)
        return -1;
    struct http_field *f = &m->fields[m->nfields];
    if (f->name == NULL) {
        f->name = at;
        f->nlen = 0;
        f->value = NULL;
        f->vlen = 0;
    }
    f->nlen += (uint32_t)n;
    return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n)
{
    struct http_msg *m = msg_of(p);
    if (m->nfields >= WTP_FIELDS_CAP)
        return -1;
    struct http_field *f = &m->fields[m->nfields];
    if (!f->value)
        f->value = at;
    f->vlen += (uint32_t)n;
    return 0;
}

static int on_header_value_complete(llhttp_t *p)
{
    struct http_msg *m = msg_of(p);
    if (m->nfields >= WTP_FIELDS_CAP)
        return -1;
    if (!m->fields[m->nfields].value)
        m->fields[m->nfields].value = "";
    m->nfields++;
    if (m->nfields < WTP_FIELDS_CAP)
        m->fields[m->nfields].name = NULL;
    return 0;
}

static int on_headers_complete(llhttp_t *p)
{
    struct http_msg *m = msg_of(p);
    return m->hooks->headers_complete(m);
}

/* Check up to crlf_left bytes of the CRLF that must follow chunk data,
 * from at to the end of what is being fed; the rest waits for the next
 * feed. Returns 0, or -1 with llhttp's error set. */
static int check_chunk_crlf(struct http_msg *m, const char *at)
{
    while (m->crlf_left > 0 && at < m->feed_end) {
        char want = m->crlf_left == 2 ? '\r' : '\n';
        if (*at++ != want) {
            m->parser.error = HPE_STRICT;
            llhttp_set_error_reason(&m->parser, "chunk data is not followed by CRLF");
            return -1;
        }
        m->crlf_left--;
    }
    return 0;
}

static int on_chunk_header(llhttp_t *p)
{
    msg_of(p)->chunk_left = p->content_length;
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
    struct http_msg *m = msg_of(p);
    if ((p->flags & F_CHUNKED) && m->chunk_left >= n) {
        m->chunk_left -= n;
        if (m->chunk_left == 0) {
            m->crlf_left = 2;
            if (check_chunk_crlf(m, at + n) < 0)
                return HPE_STRICT;
        }
    }
    return m->hooks->body(m, at, n);
}

static int on_message_complete(llhttp_t *p)
{
    struct http_msg *m = msg_of(p);
    return m->hooks->message_complete(m);
}

static llhttp_settings_t settings;

void http_msg_init(struct http_msg *m, llhttp_type_t type, const struct http_msg_hooks *hooks,
                   void *owner)
{
    if (!settings.on_headers_complete) {
        llhttp_settings_init(&settings);
        settings.on_message_begin = on_message_begin;
        settings.on_url = on_url;
        settings.on_status = on_status;
        settings.on_header_field = on_header_field;
        settings.on_header_value = on_header_value;
        settings.on_header_value_complete = on_header_value_complete;
        settings.on_headers_complete = on_headers_complete;
        settings.on_body = on_body;
        settings.on_chunk_header = on_chunk_header;
        settings.on_message_complete = on_message_complete;
    }
    llhttp_init(&m->parser, type, &settings);
    m->parser.data = m;
    m->hooks = hooks;
    m->owner = owner;
    m->fields = scratch;
    m->nfields = 0;
    m->chunk_left = 0;
    m->crlf_left = 0;
    m->method = NULL;
    m->method_len = 0;
    scratch[0].name = NULL;
}

size_t http_msg_feed(struct http_msg *m, const char *p, size_t n, llhttp_errno_t *err)
{
    llhttp_errno_t e = llhttp_get_errno(&m->parser);
    if (e == HPE_PAUSED)
        llhttp_resume(&m->parser);
    else if (e == HPE_PAUSED_UPGRADE)
        llhttp_resume_after_upgrade(&m->parser);
    m->feed_end = p + n;
    if (m->crlf_left && check_chunk_crlf(m, p) < 0) {
        *err = HPE_STRICT;
        return 0;
    }
    e = llhttp_execute(&m->parser, p, n);
    *err = e;
    if (e == HPE_OK)
        return n;
    const char *pos = llhttp_get_error_pos(&m->parser);
    return pos && pos >= p && pos <= p + n ? (size_t)(pos - p) : 0;
}

/* The methods llhttp parses in an HTTP request (llhttp.h's HTTP_METHOD_MAP;
 * its RTSP ones it refuses with an HTTP version). */
static const char *const llhttp_methods[] = {
#define XX(num, name, string) #string,
    HTTP_METHOD_MAP(XX)
#undef XX
};

int http_is_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Why the method may not go to llhttp as a placeholder: NULL when it can,
 * or the reason it is refused. *known is set when llhttp parses it as it
 * is (then llhttp's own verdict stands). */
static const char *method_refusal(const char *p, size_t n, int *known)
{
    *known = 0;
    for (size_t i = 0; i < n; i++)
        if (!http_is_tchar((unsigned char)p[i]))
            return "the method is not a token (RFC 9110 §9.1)";
    for (size_t i = 0; i < sizeof llhttp_methods / sizeof *llhttp_methods; i++) {
        const char *k = llhttp_methods[i];
        if (strlen(k) != n || strncasecmp(k, p, n) != 0)
            continue;
        if (memcmp(k, p, n) == 0) {
            *known = 1;
            return NULL;
        }
        return "the method differs from a standard one only in case (methods are "
               "case-sensitive, RFC 9110 §9.1)";
    }
    /* RFC 9113 §3.4 reserves PRI for the HTTP/2 preface: llhttp's refusal stands */
    *known = n == 3 && strncasecmp(p, "PRI", 3) == 0;
    return NULL;
}

/* "HTTP/1.x" with x from 2 to 9 ends the start line [line, eol). */
static int higher_minor(const char *line, const char *eol)
{
    return eol - line >= 10 && memcmp(eol - 9, " HTTP/1.", 8) == 0 && eol[-1] >= '2' &&
           eol[-1] <= '9';
}

struct piece {
    const char *p;
    size_t n;
};

llhttp_errno_t http_msg_feed_request_head(struct http_msg *m, const char *head, size_t len)
{
    const char *end = head + len, *line = head;
    while (line < end && (*line == '\r' || *line == '\n'))
        line++; /* RFC 9112 §2.2: empty lines before the start line */
    const char *eol = memchr(line, '\r', (size_t)(end - line));
    const char *sp = memchr(line, ' ', (size_t)(end - line));
    if (!eol)
        eol = end;
    if (!sp || sp > eol)
        sp = line;
    m->method = line;
    m->method_len = (size_t)(sp - line);
    llhttp_errno_t err;
    http_msg_feed(m, head, len, &err);
    const char *pos = llhttp_get_error_pos(&m->parser);
    if (err == HPE_OK || err == HPE_PAUSED || err == HPE_PAUSED_UPGRADE || !pos || pos > eol ||
        sp == line)
        return err; /* fine, or refused after the start line: llhttp's verdict */
    int known;
    const char *why = method_refusal(line, m->method_len, &known);
    if (why) {
        llhttp_set_error_reason(&m->parser, why);
        return err;
    }
    int minor = higher_minor(line, eol);
    if (known && !minor)
        return err;
    /* Again, from a fresh parser: the start line is where llhttp stopped,
     * so no hook beyond the message's begin has run. GET stands for an
     * extension method: llhttp frames a request's body the same for every
     * method but CONNECT, which needs no placeholder. */
    struct piece pieces[4];
    size_t n = 0;
    const char *rest = line;
    if (!known) {
        pieces[n++] = (struct piece){"GET", 3};
        rest = sp;
    }
    if (minor) {
        pieces[n++] = (struct piece){rest, (size_t)(eol - 1 - rest)};
        pieces[n++] = (struct piece){"1", 1};
        rest = eol;
    }
    pieces[n++] = (struct piece){rest, (size_t)(end - rest)};
    http_msg_init(m, HTTP_REQUEST, m->hooks, m->owner);
    m->method = line;
    m->method_len = (size_t)(sp - line);
    for (size_t i = 0; i < n; i++) {
        http_msg_feed(m, pieces[i].p, pieces[i].n, &err);
        if (err != HPE_OK)
            break;
    }
    return err;
}

const struct http_field *http_msg_field_n(const struct http_msg *m, const char *name, size_t len,
                                          int *count)
{
    const struct http_field *found = NULL;
    int c = 0;
    for (size_t i = 0; i < m->nfields; i++) {
        const struct http_field *f = &m->fields[i];
        /* the first byte folded before the call: no false negative, since
         * a byte equal to another ignoring case is equal with 0x20 set */
        if (f->nlen == len && (f->name[0] | 0x20) == (name[0] | 0x20) &&
            strncasecmp(f->name, name, len) == 0) {
            found = f;
            c++;
        }
    }
    if (count)
        *count = c;
    return found;
}

int http_list_next(const char *v, size_t len, size_t *pos, const char **elem, size_t *elen)
{
    size_t i = *pos;
    while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
        i++;
    size_t start = i;
    while (i < len && v[i] != ',')
        i++;
    size_t end = i;
    while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t'))
        end--;
    *pos = i;
    *elem = v + start;
    *elen = end - start;
    return end > start;
}

int http_list_has_n(const char *v, size_t len, const char *token, size_t tlen)
{
    size_t pos = 0, elen;
    const char *elem;
    while (http_list_next(v, len, &pos, &elem, &elen))
        if (elen == tlen && strncasecmp(elem, token, tlen) == 0)
            return 1;
    return 0;
}
