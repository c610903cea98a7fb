/* test_request_check.c - the request rules of proxy/request_check.c, one
 * head per row: what is relayed, what is refused and with which reason
 * (RFC 9112 §3.2 Host and request-target, §6 Transfer-Encoding). */
#include "../../proxy/http_msg.c"
#include "../../proxy/request_check.c"

#include <string.h>

#include "tap.h"

#define RELAYED (-1)

struct row {
    const char *head;
    int want; /* RELAYED, or the enum proxy_error */
    const char *why;
};

static int got;
static char detail[256];

static int check_head(struct http_msg *m)
{
    enum proxy_error e;
    got = request_check(m, &e, detail, sizeof detail) == 0 ? RELAYED : (int)e;
    return 0;
}

static int skip_body(struct http_msg *m, const char *at, size_t n)
{
    (void)m, (void)at, (void)n;
    return 0;
}

static int pause_done(struct http_msg *m)
{
    (void)m;
    return HPE_PAUSED;
}

static const struct row rows[] = {
    {"GET / HTTP/1.1\r\nHost: x\r\n\r\n", RELAYED, "a plain GET"},
    {"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", RELAYED, "OPTIONS * (asterisk-form)"},
    {"GET * HTTP/1.1\r\nHost: x\r\n\r\n", PE_BAD_REQUEST, "GET * (asterisk-form is OPTIONS only)"},
    {"FROB * HTTP/1.1\r\nHost: x\r\n\r\n", PE_BAD_REQUEST, "an extension method with *"},
    {"OPTIONS *x HTTP/1.1\r\nHost: x\r\n\r\n", PE_BAD_REQUEST, "* followed by more"},
    {"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n", PE_BAD_REQUEST, "raw UTF-8 in the target"},
    {"GET /?\x80 HTTP/1.1\r\nHost: x\r\n\r\n", PE_BAD_REQUEST, "0x80 in the query"},
    {"GET /caf%C3%A9 HTTP/1.1\r\nHost: x\r\n\r\n", RELAYED, "percent-encoded UTF-8"},
    {"GET http://x/a HTTP/1.1\r\nHost: x\r\n\r\n", RELAYED, "absolute-form"},
    {"GET / HTTP/1.1\r\nHost: \r\n\r\n", PE_BAD_REQUEST, "an empty Host"},
    {"GET / HTTP/1.0\r\nHost:\r\n\r\n", PE_BAD_REQUEST, "an empty Host on HTTP/1.0"},
    {"GET / HTTP/1.0\r\n\r\n", RELAYED, "no Host on HTTP/1.0"},
    {"GET / HTTP/1.1\r\n\r\n", PE_BAD_REQUEST, "no Host on HTTP/1.1"},
    {"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", PE_BAD_REQUEST, "two Hosts"},
    {"GET / HTTP/1.1\r\nHost: shop.localhost:8000\r\n\r\n", RELAYED, "name:port"},
    {"GET / HTTP/1.1\r\nHost: my_app.localhost\r\n\r\n", RELAYED, "an underscore (unreserved)"},
    {"GET / HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n\r\n", RELAYED, "IPv4:port"},
    {"GET / HTTP/1.1\r\nHost: [::1]:8000\r\n\r\n", RELAYED, "[IPv6]:port"},
    {"GET / HTTP/1.1\r\nHost: [::1]\r\n\r\n", RELAYED, "[IPv6]"},
    {"GET / HTTP/1.1\r\nHost: x:\r\n\r\n", RELAYED, "an empty port (port = *DIGIT)"},
    {"GET / HTTP/1.1\r\nHost: a%2Db\r\n\r\n", RELAYED, "pct-encoded"},
    {"GET / HTTP/1.1\r\nHost: a%2\r\n\r\n", PE_BAD_REQUEST, "a cut pct-encoding"},
    {"GET / HTTP/1.1\r\nHost: :80\r\n\r\n", PE_BAD_REQUEST, "a port without host"},
    {"GET / HTTP/1.1\r\nHost: x:8o\r\n\r\n", PE_BAD_REQUEST, "a port with a letter"},
    {"GET / HTTP/1.1\r\nHost: x:1:2\r\n\r\n", PE_BAD_REQUEST, "two ports"},
    {"GET / HTTP/1.1\r\nHost: []\r\n\r\n", PE_BAD_REQUEST, "an empty IP-literal"},
    {"GET / HTTP/1.1\r\nHost: [::1]x\r\n\r\n", PE_BAD_REQUEST, "bytes after ]"},
    {"GET / HTTP/1.1\r\nHost: a,b\r\n\r\n", PE_BAD_REQUEST, "a comma (a list to some)"},
    {"GET / HTTP/1.1\r\nHost: a@b\r\n\r\n", PE_BAD_REQUEST, "userinfo"},
    {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", RELAYED, "chunked"},
    {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: CHUNKED\r\n\r\n", RELAYED,
     "chunked in capitals"},
    {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", PE_UNSUPPORTED_TE,
     "one unknown coding: 501"},
    {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", PE_UNSUPPORTED_TE,
     "an unknown coding before a final chunked: 501"},
    {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
     PE_UNSUPPORTED_TE, "the same in two fields"},
    {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, deflate\r\n\r\n", PE_BAD_REQUEST,
     "two codings, no chunked: 400"},
    {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \r\n\r\n", PE_BAD_REQUEST,
     "an empty Transfer-Encoding"},
    {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: , chunked\r\n\r\n", PE_BAD_REQUEST,
     "a leading comma"},
    {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip,,chunked\r\n\r\n", PE_BAD_REQUEST,
     "an empty element inside"},
    {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: g(z)ip\r\n\r\n", PE_BAD_REQUEST,
     "a coding that is not a token"},
    {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", PE_BAD_REQUEST,
     "Transfer-Encoding on HTTP/1.0"},
    {"CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n", PE_UNSUPPORTED_METHOD, "CONNECT"},
    {"GET  / HTTP/1.1\r\nHost: x\r\n\r\n", PE_BAD_REQUEST, "two spaces before the target"},
};

/* What llhttp itself refuses (llhttp stops reading the field) gets a
 * reason that names the rule, and bad-request as every llhttp error. */
static void test_llhttp_te(void)
{
    static const struct http_msg_hooks hooks = {check_head, skip_body, pause_done};
    const char *heads[] = {
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked,\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
         "Transfer-Encoding: chunked\r\n\r\n"),
    };
    for (size_t i = 0; i < sizeof heads / sizeof *heads; i++) {
        struct http_msg m;
        http_msg_init(&m, HTTP_REQUEST, &hooks, NULL);
        llhttp_errno_t err = http_msg_feed_request_head(&m, heads[i], strlen(heads[i]));
        is_int(err, HPE_INVALID_TRANSFER_ENCODING, "llhttp stops on chunked followed by more (%zu)",
               i);
        has_str(request_parse_error(&m, err), "final", "and the reason says chunked must be final");
    }
}

int main(void)
{
    static const struct http_msg_hooks hooks = {check_head, skip_body, pause_done};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        struct http_msg m;
        got = -2;
        detail[0] = '\0';
        http_msg_init(&m, HTTP_REQUEST, &hooks, NULL);
        llhttp_errno_t err = http_msg_feed_request_head(&m, rows[i].head, strlen(rows[i].head));
        is_int(got, rows[i].want, "%s%s%s (llhttp: %s)", rows[i].why, detail[0] ? ": " : "", detail,
               llhttp_errno_name(err));
    }
    test_llhttp_te();
    return done_testing();
}
