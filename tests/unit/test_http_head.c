/* test_http_head.c - heads as the other side sees them: hop-by-hop fields
 * gone, forwarding fields set, framing re-declared; and wtproxy's own
 * error pages in each format. */
#include "../../proxy/error_page.c"
#include "../../proxy/http_head.c"
#include "../../proxy/http_msg.c"

#include <jansson.h>
#include <string.h>

#include "tap.h"

static struct evbuffer *out;
static struct http_forward fw;
static struct http_reply reply;

static char last_odd[64]; /* the look-alike the last request dropped */

static int write_request(struct http_msg *m)
{
    const struct http_field *odd = http_head_write_request(out, m, &fw);
    snprintf(last_odd, sizeof last_odd, "%.*s", odd ? (int)odd->nlen : 0, odd ? odd->name : "");
    return 0;
}

static int write_response(struct http_msg *m)
{
    http_head_write_response(out, m, &reply);
    return 0;
}

static int no_body(struct http_msg *m, const char *at, size_t n)
{
    (void)m, (void)at, (void)n;
    return 0;
}

static int done(struct http_msg *m)
{
    (void)m;
    return HPE_PAUSED;
}

/* Parse head as a request (or response) and return what we would send. */
static char *rewrite(llhttp_type_t type, const char *head)
{
    static const struct http_msg_hooks req = {write_request, no_body, done};
    static const struct http_msg_hooks resp = {write_response, no_body, done};
    struct http_msg m;
    llhttp_errno_t err;
    static char buf[4096];
    out = evbuffer_new();
    http_msg_init(&m, type, type == HTTP_REQUEST ? &req : &resp, NULL);
    if (type == HTTP_REQUEST)
        http_msg_feed_request_head(&m, head, strlen(head));
    else
        http_msg_feed(&m, head, strlen(head), &err);
    size_t n = evbuffer_get_length(out);
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    evbuffer_remove(out, buf, n);
    buf[n] = '\0';
    evbuffer_free(out);
    return buf;
}

static void test_request(void)
{
    fw = (struct http_forward){"10.1.2.3", "127.0.0.1:8000", 0, 0};
    is_str(rewrite(HTTP_REQUEST,
                   "GET /a?b=1 HTTP/1.1\r\nHost: shop.localhost:8000\r\nAccept: */*\r\n"
                   "Connection: keep-alive, X-Secret\r\nX-Secret: s\r\nKeep-Alive: 5\r\n"
                   "TE: trailers\r\nTrailer: X-Sum\r\nProxy-Authorization: p\r\n"
                   "Proxy-Foo: f\r\nUpgrade: h2c\r\nX-Forwarded-For: 6.6.6.6\r\n"
                   "X-Forwarded-Host: evil\r\nX-Forwarded-Proto: https\r\n\r\n"),
           "GET /a?b=1 HTTP/1.1\r\nHost: shop.localhost:8000\r\nAccept: */*\r\n"
           "X-Forwarded-For: 10.1.2.3\r\nX-Forwarded-Host: shop.localhost:8000\r\n"
           "X-Forwarded-Proto: http\r\n\r\n",
           "hop-by-hop and Connection-named fields go, forwarding fields are replaced");

    fw.chunked = 1;
    is_str(
        rewrite(HTTP_REQUEST, "POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"),
        "POST /u HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 10.1.2.3\r\nX-Forwarded-Host: h\r\n"
        "X-Forwarded-Proto: http\r\nTransfer-Encoding: chunked\r\n\r\n",
        "a chunked body is declared once, by us");

    fw.chunked = 0;
    fw.upgrade = 1;
    is_str(rewrite(HTTP_REQUEST, "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\n"
                                 "Upgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\n"),
           "GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k\r\n"
           "X-Forwarded-For: 10.1.2.3\r\nX-Forwarded-Host: h\r\nX-Forwarded-Proto: http\r\n"
           "Connection: upgrade\r\n\r\n",
           "an upgrade keeps Upgrade and asks for it in Connection");

    fw.upgrade = 0;
    is_str(rewrite(HTTP_REQUEST, "GET / HTTP/1.0\r\n\r\n"),
           "GET / HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nX-Forwarded-For: 10.1.2.3\r\n"
           "X-Forwarded-Host: 127.0.0.1:8000\r\nX-Forwarded-Proto: http\r\n\r\n",
           "an HTTP/1.0 request without Host gets the front address as Host");
}

/* Methods llhttp does not know, HTTP/1.x above 1.1, and fields that read
 * as the proxy's own with '-' for '_' (issue 18, proxy/RELAY.md). */
static void test_request_rfc(void)
{
    fw = (struct http_forward){"10.1.2.3", "127.0.0.1:8000", 0, 0};
    const char *tail = "Host: h\r\nX-Forwarded-For: 10.1.2.3\r\nX-Forwarded-Host: h\r\n"
                       "X-Forwarded-Proto: http\r\n\r\n";
    char want[512];
    snprintf(want, sizeof want, "FROBNICATE /f HTTP/1.1\r\n%s", tail);
    is_str(rewrite(HTTP_REQUEST, "FROBNICATE /f HTTP/1.1\r\nHost: h\r\n\r\n"), want,
           "an extension method is forwarded as the client sent it");
    snprintf(want, sizeof want, "DESCRIBE /d HTTP/1.1\r\n%s", tail);
    is_str(rewrite(HTTP_REQUEST, "DESCRIBE /d HTTP/1.1\r\nHost: h\r\n\r\n"), want,
           "an RTSP name llhttp refuses on HTTP is an extension method");
    snprintf(want, sizeof want, "GETX /g HTTP/1.1\r\n%s", tail);
    is_str(rewrite(HTTP_REQUEST, "GETX /g HTTP/1.1\r\nHost: h\r\n\r\n"), want,
           "a method that starts like a known one (llhttp stops after GET) is an extension");
    is_str(rewrite(HTTP_REQUEST, "FROB /a b HTTP/1.1\r\nHost: h\r\n\r\n"), "",
           "behind a placeholder llhttp still refuses the rest of the line");
    snprintf(want, sizeof want, "GET /v HTTP/1.1\r\n%s", tail);
    is_str(rewrite(HTTP_REQUEST, "\r\nGET /v HTTP/1.2\r\nHost: h\r\n\r\n"), want,
           "HTTP/1.2 is read and forwarded as HTTP/1.1");
    snprintf(want, sizeof want, "M-X /v HTTP/1.1\r\n%s", tail);
    is_str(rewrite(HTTP_REQUEST, "M-X /v HTTP/1.7\r\nHost: h\r\n\r\n"), want, "both at once");
    is_str(rewrite(HTTP_REQUEST, "get / HTTP/1.1\r\nHost: h\r\n\r\n"), "",
           "a case variant of a known method is refused, not forwarded");
    is_str(rewrite(HTTP_REQUEST, "F@O / HTTP/1.1\r\nHost: h\r\n\r\n"), "",
           "a method that is not a token is refused");
    is_str(rewrite(HTTP_REQUEST, "GET / HTTP/1.10\r\nHost: h\r\n\r\n"), "",
           "HTTP/1.10 is no version");
    is_str(rewrite(HTTP_REQUEST, "POST /p HTTP/1.1\r\nHost: h\r\nContent_Length: 9\r\n"
                                 "Content-Length: 005\r\nX_Forwarded_For: 6.6.6.6\r\n"
                                 "transfer_encoding: chunked\r\nKeep_Alive: 1\r\n"
                                 "Proxy_Authorization: p\r\nX_Tag: 1\r\n\r\n"),
           "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nX_Tag: 1\r\n"
           "X-Forwarded-For: 10.1.2.3\r\nX-Forwarded-Host: h\r\nX-Forwarded-Proto: http\r\n\r\n",
           "look-alikes of owned fields go, Content-Length loses its leading zeros");
    is_str(last_odd, "Content_Length", "the first look-alike dropped is reported for the log");
    rewrite(HTTP_REQUEST, "GET / HTTP/1.1\r\nHost: h\r\nX_Tag: 1\r\n\r\n");
    is_str(last_odd, "", "none reported when none was dropped");
    reply = (struct http_reply){0, 0, 0};
    is_str(rewrite(HTTP_RESPONSE, "HTTP/1.1 200 OK\r\nContent-Length: 0002\r\n\r\n"),
           "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n",
           "a response's Content-Length is normalised too");
    is_str(rewrite(HTTP_RESPONSE, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
           "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "a lone 0 stays");
}

static void test_response(void)
{
    reply = (struct http_reply){0, 0, 0};
    is_str(rewrite(HTTP_RESPONSE,
                   "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n"
                   "Keep-Alive: timeout=5\r\nSet-Cookie: a=b\r\n\r\n"),
           "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nSet-Cookie: a=b\r\n\r\n",
           "a response keeps its end-to-end fields and loses hop-by-hop ones");
    reply.close = 1;
    reply.chunked = 1;
    is_str(rewrite(HTTP_RESPONSE, "HTTP/1.0 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n"),
           "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
           "re-chunked and closing: both declared, version is ours");
    reply = (struct http_reply){0, 0, 0};
    is_str(rewrite(HTTP_RESPONSE, "HTTP/1.1 204 \r\n\r\n"), "HTTP/1.1 204 \r\n\r\n",
           "an empty reason phrase stays empty");
    is_str(rewrite(HTTP_RESPONSE, "HTTP/1.1 200 OK\r\nConnection: X-A\r\nX-A: 1\r\nX-B: 2\r\n"
                                  "X-C: 3\r\nconnection: , x-c ,\r\nContent-Length: 0\r\n\r\n"),
           "HTTP/1.1 200 OK\r\nX-B: 2\r\nContent-Length: 0\r\n\r\n",
           "fields named by any of two Connection fields go, whatever their case");
    /* More names than the filter lists at once: the fields are still found. */
    is_str(rewrite(HTTP_RESPONSE,
                   "HTTP/1.1 200 OK\r\nConnection: n1, n2, n3, n4, n5, n6, n7, n8, n9,"
                   " n10, n11, n12, n13, n14, n15, n16, n17, X-Last\r\nX-Keep: k\r\n"
                   "X-Last: l\r\nN1: 1\r\nContent-Length: 0\r\n\r\n"),
           "HTTP/1.1 200 OK\r\nX-Keep: k\r\nContent-Length: 0\r\n\r\n",
           "a Connection field listing 18 names drops the first and the last");
}

static void test_list(void)
{
    ok(http_list_has("keep-alive, Upgrade", 19, "upgrade"), "tokens match case-insensitively");
    ok(http_list_has(" ,close ,", 9, "close"), "empty list elements and spaces are skipped");
    ok(!http_list_has("upgrades", 8, "upgrade"), "a token is matched whole");
    ok(!http_list_has("", 0, "close"), "an empty list has nothing");
    ok(!http_list_has(" , ,", 4, "close"), "a list of separators has nothing");
}

static char *page_for(const char *accept, const char *detail, int head)
{
    static char buf[4096];
    struct evbuffer *b = evbuffer_new();
    error_page_write(b, PE_BACKEND_UNREACHABLE, accept, detail, NULL, 8000, 1, head);
    size_t n = evbuffer_get_length(b);
    evbuffer_remove(b, buf, n < sizeof buf ? n : sizeof buf - 1);
    buf[n < sizeof buf ? n : sizeof buf - 1] = '\0';
    evbuffer_free(b);
    return buf;
}

static char *page(const char *accept, const char *detail)
{
    return page_for(accept, detail, 0);
}

/* Found by tests/fuzz/fuzz_response: a 502 to a HEAD on a kept-alive
 * connection carried its body, which the client read as its next
 * response. */
static void test_error_page_head(void)
{
    char *p = page_for(NULL, "connect refused", 1);
    has_str(p, "HTTP/1.1 502 Bad Gateway\r\n", "a HEAD gets the status line");
    has_str(p, "Content-Length: ", "and the length the body would have");
    size_t n = strlen(p);
    ok(n >= 4 && strcmp(p + n - 4, "\r\n\r\n") == 0, "but no body after the head");
}

static void test_error_pages(void)
{
    char *p = page(NULL, "connect to 127.0.0.1:9: Connection refused");
    has_str(p, "HTTP/1.1 502 Bad Gateway\r\n", "status line");
    has_str(p, "X-Wtproxy-Error: backend-unreachable\r\n", "the reason header");
    has_str(p, "Connection: close\r\n", "closing");
    has_str(p, "Content-Type: text/plain", "plain text without Accept");
    has_str(p, "Connection refused", "the detail is in the body");
    has_str(p, "Fix: ", "the body says what to do");

    p = page("text/html,application/xhtml+xml,*/*;q=0.8", "<script>alert(1)</script>");
    has_str(p, "Content-Type: text/html", "HTML for a browser");
    ok(!strstr(p, "<script>"), "the detail is escaped in HTML");
    has_str(p, "&lt;script&gt;", "as text");

    p = page("application/json", "a \"quoted\" detail");
    has_str(p, "Content-Type: application/json", "JSON when asked");
    json_error_t je;
    json_t *o = json_loads(strstr(p, "\r\n\r\n") + 4, 0, &je);
    ok(o != NULL, "the JSON body parses");
    is_str(json_string_value(json_object_get(o, "error")), "backend-unreachable", "error field");
    is_int(json_integer_value(json_object_get(o, "status")), 502, "status field");
    is_str(json_string_value(json_object_get(o, "detail")), "a \"quoted\" detail", "detail field");
    ok(json_is_string(json_object_get(o, "fix")), "fix field");
    json_decref(o);
}

int main(void)
{
    test_request();
    test_request_rfc();
    test_response();
    test_list();
    test_error_pages();
    test_error_page_head();
    return done_testing();
}
