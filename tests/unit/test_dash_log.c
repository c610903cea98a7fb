/* test_dash_log.c - what a server's log becomes before the dashboard's
 * live tail sends it (dash_log.c): ANSI escape sequences and control
 * characters gone, markup kept as the text it is, invalid or cut UTF-8
 * replaced, valid UTF-8 kept. The tail's connection is not exercised here
 * (tests/integration/155 and 156 do): the few functions of other files it
 * calls are stand-ins that must not be reached. */
#include "../../proxy/dash_log.c"

#include <stdlib.h>

#include "tap.h"

/* Not reached by clean() and utf8_len(). */
void conn_close(struct proxy_client *c)
{
    (void)c;
    abort();
}
void conn_arm_timer(struct proxy_client *c, unsigned ms)
{
    (void)c, (void)ms;
    abort();
}
struct evbuffer *stream_output(struct stream *s)
{
    (void)s;
    abort();
}
struct reg_table *reg_server_table(struct reg_server *rs)
{
    (void)rs;
    abort();
}
size_t reg_table_count(const struct reg_table *t)
{
    (void)t;
    abort();
}
struct reg_backend *reg_table_at(const struct reg_table *t, size_t i)
{
    (void)t, (void)i;
    abort();
}
void dash_respond(struct proxy_client *c, const char *status, const char *type, const char *extra,
                  const void *body, size_t len)
{
    (void)c, (void)status, (void)type, (void)extra, (void)body, (void)len;
    abort();
}

/* clean(in) as a C string. */
static const char *cleaned(const char *in, size_t n)
{
    static char out[3 * 256 + 1];
    size_t len = clean((const unsigned char *)in, n, out);
    out[len] = '\0';
    return out;
}

#define CLEAN(s) cleaned((s), sizeof(s) - 1)

int main(void)
{
    is_str(CLEAN("plain text\n"), "plain text\n", "text and newlines stay");
    is_str(CLEAN("<script>alert(1)</script>\n"), "<script>alert(1)</script>\n",
           "markup stays the text it is (the page sets it with textContent)");
    is_str(CLEAN("\x1b[31mred\x1b[0m \x1b[1;32mbold green\x1b[m"), "red bold green",
           "ANSI colour sequences are removed whole");
    is_str(CLEAN("a\x1b"
                 "7b"),
           "ab", "ESC and the one byte after it go");
    is_str(CLEAN("cut \x1b[31"), "cut ", "a sequence cut at the end goes");
    is_str(CLEAN("50%\r75%\r100%\n"), "50%75%100%\n", "carriage returns go");
    is_str(CLEAN("tab\there\a\b\x7f!"), "tab\there!", "tab stays; bell, backspace, DEL go");
    is_str(CLEAN("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x99\x82"),
           "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x99\x82", "valid UTF-8 of 2, 3 and 4 bytes stays");
    is_str(CLEAN("a\xff"
                 "b"),
           "a\xef\xbf\xbd"
           "b",
           "a byte no UTF-8 starts with: U+FFFD");
    is_str(CLEAN("a\xc3(b"), "a\xef\xbf\xbd(b", "a lead byte without its continuation: U+FFFD");
    is_str(CLEAN("end \xe2\x9c"), "end \xef\xbf\xbd\xef\xbf\xbd",
           "a sequence cut at the end: U+FFFD each");
    is_str(CLEAN("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd", "an overlong lead byte (C0) is refused");
    is_str(CLEAN(""), "", "nothing stays nothing");
    char worst[256];
    memset(worst, 0xe2, sizeof worst);
    ok(strlen(cleaned(worst, sizeof worst)) == 3 * sizeof worst,
       "the worst case fits 3 bytes per input byte");
    return done_testing();
}
