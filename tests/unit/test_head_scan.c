/* test_head_scan.c - the strict head scanner: where heads end, what it
 * refuses, and that byte-at-a-time delivery gives the same answers. */
#include "../../proxy/head_scan.c"

#include <stdlib.h>
#include <string.h>

#include "tap.h"

static const struct head_scan_limits lim = {64, 256, 4};
static int as_request; /* scan with head_scan_init_request: a method limit */

/* Scan s whole, or one byte per call when bytewise is set. */
static long scan(const char *s, size_t n, int bytewise, const char **why)
{
    struct head_scan hs;
    if (as_request)
        head_scan_init_request(&hs);
    else
        head_scan_init(&hs);
    long r = 0;
    if (!bytewise)
        r = head_scan_feed(&hs, s, n, &lim);
    for (size_t i = 0; bytewise && i < n && r == 0; i++)
        r = head_scan_feed(&hs, s + i, 1, &lim);
    *why = hs.error;
    return r;
}

/* head may hold NUL bytes: n is its length. */
static void expect_n(const char *name, const char *head, size_t n, long want)
{
    const char *why;
    for (int bytewise = 0; bytewise < 2; bytewise++) {
        long got = scan(head, n, bytewise, &why);
        is_int(got, want, "%s (%s)%s%s", name, bytewise ? "bytewise" : "whole", why ? ": " : "",
               why ? why : "");
    }
}

static void expect(const char *name, const char *head, long want)
{
    expect_n(name, head, strlen(head), want);
}

/* The grammar one byte at a time, as head_scan.c did before it learnt to
 * skip runs of plain bytes: the reference the fast scan must agree with. */
static long reference_scan(const unsigned char *p, size_t n, const struct head_scan_limits *l,
                           size_t max_method)
{
    size_t total = 0, line_len = 0, fields = 0;
    int lines = 0, saw_cr = 0, in_name = 1, name_space = 0, in_method = 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        if (++total > l->max_head)
            return HS_HEAD_LARGE;
        if (saw_cr) {
            if (c != '\n')
                return HS_MALFORMED;
            saw_cr = 0;
            if (lines > 0 && line_len == 0)
                return (long)total;
            if (lines == 0 && line_len == 0)
                continue;
            if (lines > 0 && in_name)
                return HS_MALFORMED;
            if (lines > 0 && ++fields > l->max_fields)
                return HS_TOO_MANY_FIELDS;
            lines++, line_len = 0, in_name = 1, name_space = 0;
            continue;
        }
        if (c == '\r') {
            saw_cr = 1;
            continue;
        }
        if (c == '\n' || c == '\0')
            return HS_MALFORMED;
        line_len++;
        if (lines == 0 && c == ' ')
            in_method = 0;
        if (lines == 0 && in_method && max_method && line_len > max_method)
            return HS_METHOD_LONG;
        if (lines == 0 && line_len > l->max_start_line)
            return HS_START_LINE_LONG;
        if (lines > 0 && in_name && c == ':') {
            if (line_len == 1 || name_space)
                return HS_MALFORMED;
            in_name = 0;
        } else if (lines > 0 && in_name && (c == ' ' || c == '\t')) {
            if (line_len == 1)
                return HS_MALFORMED;
            name_space = 1;
        }
    }
    return 0;
}

static size_t random_bytes(unsigned char *buf, size_t size)
{
    static const char alphabet[] = "aaaaaaaaaaXy:: \t\r\n\r\n\r\n\r\n\r\n\x01\x0c\x8d;!";
    size_t n = (size_t)(rand() % (int)size);
    for (size_t i = 0; i < n; i++)
        buf[i] =
            rand() % 50 == 0 ? '\0' : (unsigned char)alphabet[rand() % (int)(sizeof alphabet - 1)];
    return n;
}

/* Mostly well-formed lines (what takes the whole-line path), now and then
 * a byte changed. */
static size_t random_lines(unsigned char *buf, size_t size)
{
    static const char *const pieces[] = {
        "GET / HTTP/1.1\r\n",
        "HTTP/1.1 200 OK\r\n",
        "Host: x\r\n",
        "Accept-Encoding: identity\r\n",
        "X-Long-Name-Here: 0123456789abcdef\r\n",
        "A:\r\n",
        "B: a\tb\r\n",
        "\r\n",
        "C : d\r\n",
        " e\r\n",
    };
    size_t n = 0;
    while (rand() % 8 != 0) {
        const char *piece = pieces[rand() % (int)(sizeof pieces / sizeof *pieces)];
        size_t len = strlen(piece);
        if (n + len > size)
            break;
        memcpy(buf + n, piece, len);
        n += len;
    }
    if (n > 0 && rand() % 3 == 0)
        buf[rand() % (int)n] = "\0\r\n :\tZ"[rand() % 7];
    return n;
}

/* Random heads built from the bytes the grammar cares about, cut into
 * random pieces, under small random limits, as responses and as requests
 * (with a method's limit): the scan that skips runs and takes whole
 * lines must give the reference's answer for every one. The bytes hold
 * control bytes the word tests stop at (HT, 0x01, 0x0c) and bytes next to
 * the judged ones. */
static void agrees_with_reference(int rounds)
{
    unsigned char buf[160];
    int disagreements = 0;
    srand(1);
    for (int k = 0; k < rounds; k++) {
        size_t n = rand() % 2 ? random_bytes(buf, sizeof buf) : random_lines(buf, sizeof buf);
        struct head_scan_limits l = {(size_t)(rand() % 24), (size_t)(rand() % 160),
                                     (size_t)(rand() % 5)};
        int request = rand() % 2;
        size_t max_method = request ? 1 + (size_t)(rand() % 24) : 0;
        struct head_scan hs;
        if (request)
            head_scan_init_request(&hs);
        else
            head_scan_init(&hs);
        hs.max_method = max_method;
        long got = 0;
        for (size_t at = 0; at < n && got == 0;) {
            size_t piece = rand() % 4 == 0 ? n : 1 + (size_t)(rand() % 16);
            piece = piece > n - at ? n - at : piece;
            got = head_scan_feed(&hs, (const char *)buf + at, piece, &l);
            at += piece;
        }
        long want = reference_scan(buf, n, &l, max_method);
        if (got != want && disagreements++ == 0)
            printf("# first disagreement in round %d: scan %ld, reference %ld\n", k, got, want);
    }
    is_int(disagreements, 0,
           "%d random heads in random pieces: the same answer as a byte-by-byte scan", rounds);
}

/* A request's method counts against WTP_MAX_METHOD (32 bytes here, with a
 * 64-byte start line): a long method is that, not a long request line. */
static void test_method_limit(void)
{
    char head[200];
    as_request = 1;
    snprintf(head, sizeof head, "%.*s / HTTP/1.1\r\n\r\n", WTP_MAX_METHOD,
             "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOP");
    expect("a method of exactly the limit passes", head, (long)strlen(head));
    snprintf(head, sizeof head, "%.*s / HTTP/1.1\r\n\r\n", WTP_MAX_METHOD + 1,
             "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOP");
    expect("one byte over the method limit", head, HS_METHOD_LONG);
    expect("a method over the limit that also overruns the line is a long method",
           "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZ",
           HS_METHOD_LONG);
    snprintf(head, sizeof head, "\r\n\r\n%.*s / HTTP/1.1\r\n\r\n", WTP_MAX_METHOD,
             "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOP");
    expect("empty lines before the request line do not count as method", head, (long)strlen(head));
    snprintf(head, sizeof head, "GET /%.*s HTTP/1.1\r\n\r\n", 40,
             "/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a");
    expect("the method ends at the first SP: a long target is no long method", head,
           (long)strlen(head));
    as_request = 0;
    snprintf(head, sizeof head, "%.*s 200 OK\r\n\r\n", WTP_MAX_METHOD + 8,
             "HTTP/1.1HTTP/1.1HTTP/1.1HTTP/1.1HTTP/1.1HTTP/1.1");
    expect("a response's first token has no method limit", head, (long)strlen(head));
}

/* Values are scanned eight bytes at a time (plain_run): a CR, LF or NUL
 * at any offset of a long value is still found, and bytes that only look
 * close to them (0x8d, 0x0b, 0x80, 0xff...) are not taken for them. */
static void test_value_words(void)
{
    static const char judged[] = {'\r', '\n', '\0'};
    const char *pre = "GET / HTTP/1.1\r\nX-Long: ";
    size_t plen = strlen(pre);
    int missed = 0, wrong = 0;
    for (size_t j = 0; j < sizeof judged; j++)
        for (size_t at = 0; at < 40; at++) {
            char head[128];
            memcpy(head, pre, plen);
            memset(head + plen, 'v', 40);
            head[plen + at] = judged[j];
            /* a CR followed by LF would end the line: make it a bare CR */
            if (judged[j] == '\r')
                head[plen + at + 1] = 'y';
            memcpy(head + plen + 40, "\r\n\r\n", 4);
            struct head_scan_limits big = {64, 4096, 4};
            struct head_scan hs;
            head_scan_init(&hs);
            long r = head_scan_feed(&hs, head, plen + 44, &big);
            missed += r != HS_MALFORMED;
        }
    is_int(missed, 0, "a CR, LF or NUL at each of 40 offsets of a value is refused");
    static const unsigned char near[] = {0x8d, 0x8a, 0x80, 0x0b, 0x0c,
                                         0x0e, 0x09, 0x7f, 0xff, 0x2d};
    for (size_t at = 0; at < 40; at++) {
        char head[128];
        memcpy(head, pre, plen);
        for (size_t k = 0; k < 40; k++)
            head[plen + k] = (char)near[(k + at) % sizeof near];
        memcpy(head + plen + 40, "\r\n\r\n", 4);
        struct head_scan_limits big = {64, 4096, 4};
        struct head_scan hs;
        head_scan_init(&hs);
        wrong += head_scan_feed(&hs, head, plen + 44, &big) != (long)(plen + 44);
    }
    is_int(wrong, 0, "bytes next to CR, LF and NUL in value (0x8d, 0x0b, 0xff...) pass");
}

int main(void)
{
    const char *get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    expect("a complete head ends after its blank line", get, (long)strlen(get));
    expect("bytes after the head are not looked at", "GET / HTTP/1.1\r\nHost: x\r\n\r\n\n\0garbage",
           (long)strlen(get));
    expect("an unfinished head needs more", "GET / HTTP/1.1\r\nHost: x\r\n", 0);
    expect("a CR at the very end needs more", "GET / HTTP/1.1\r\nHost: x\r\n\r", 0);
    expect("empty lines before the request line are skipped",
           "\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", (long)strlen(get) + 4);

    expect("bare LF in the request line", "GET / HTTP/1.1\nHost: x\r\n\r\n", HS_MALFORMED);
    expect("bare LF ending the head", "GET / HTTP/1.1\r\nHost: x\r\n\n", HS_MALFORMED);
    expect("bare CR inside a value", "GET / HTTP/1.1\r\nHost: x\ry\r\n\r\n", HS_MALFORMED);
    static const char nul[] = "GET / HTTP/1.1\r\nHost: x\0y\r\n\r\n";
    expect_n("NUL inside a value", nul, sizeof nul - 1, HS_MALFORMED);
    expect("obs-fold with a space", "GET / HTTP/1.1\r\nHost: x\r\n y\r\n\r\n", HS_MALFORMED);
    expect("obs-fold with a tab", "GET / HTTP/1.1\r\nHost: x\r\n\ty\r\n\r\n", HS_MALFORMED);
    expect("space before the colon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n", HS_MALFORMED);
    expect("tab before the colon", "GET / HTTP/1.1\r\nHost\t: x\r\n\r\n", HS_MALFORMED);
    expect("an empty field name", "GET / HTTP/1.1\r\n: x\r\n\r\n", HS_MALFORMED);
    expect("a field line without a colon", "GET / HTTP/1.1\r\nHost x\r\n\r\n", HS_MALFORMED);
    const char *colon = "GET / HTTP/1.1\r\nHost: x:80\r\n\r\n";
    expect("a colon in a value is fine", colon, (long)strlen(colon));

    char line[128];
    snprintf(line, sizeof line, "GET /%.*s HTTP/1.1\r\n\r\n", 64 - 14,
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    expect("a request line of exactly the limit passes", line, (long)strlen(line));
    snprintf(line, sizeof line, "GET /%.*s HTTP/1.1\r\n\r\n", 64 - 13,
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    expect("one byte over the request-line limit", line, HS_START_LINE_LONG);

    const char *four = "GET / HTTP/1.1\r\na: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\n\r\n";
    expect("as many fields as the limit", four, (long)strlen(four));
    expect("one field over the limit",
           "GET / HTTP/1.1\r\na: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\ne: 5\r\n\r\n", HS_TOO_MANY_FIELDS);

    char big[400];
    memset(big, 'v', sizeof big);
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    big[sizeof big - 1] = '\0';
    expect("a head over the size limit, never terminated", big, HS_HEAD_LARGE);

    test_method_limit();
    test_value_words();
    agrees_with_reference(200000);
    return done_testing();
}
