/* head_scan.c - see head_scan.h for the grammar. */
#include "head_scan.h"

#include <stdint.h>
#include <string.h>

#include "proxy_limits.h"

void head_scan_init(struct head_scan *s)
{
    memset(s, 0, sizeof *s);
    s->in_name = 1;
    s->in_method = 1;
}

void head_scan_init_request(struct head_scan *s)
{
    head_scan_init(s);
    s->max_method = WTP_MAX_METHOD;
}

static long fail(struct head_scan *s, enum head_scan_error e, const char *why)
{
    s->error = why;
    return e;
}

/* A line just ended (CRLF seen). Returns 1 if it was the blank line that
 * ends the head, 0 to go on, or a negative head_scan_error. */
static int end_line(struct head_scan *s, const struct head_scan_limits *lim)
{
    if (s->lines > 0 && s->line_len == 0)
        return 1;
    if (s->lines == 0 && s->line_len == 0)
        return 0; /* RFC 9112 §2.2: empty lines before the start line are ignored */
    if (s->lines > 0) {
        if (s->in_name)
            return (int)fail(s, HS_MALFORMED, "a header line has no colon");
        if (++s->fields > lim->max_fields)
            return (int)fail(s, HS_TOO_MANY_FIELDS, "too many header lines");
    }
    s->lines++;
    s->line_len = 0;
    s->in_name = 1;
    s->name_space = 0;
    return 0;
}

/* One byte of a field line's name part (before the colon). */
static int name_byte(struct head_scan *s, char c)
{
    if (c == ':') {
        if (s->line_len == 1)
            return (int)fail(s, HS_MALFORMED, "a header has an empty name");
        if (s->name_space)
            return (int)fail(s, HS_MALFORMED, "whitespace before a header's colon");
        s->in_name = 0;
    } else if (c == ' ' || c == '\t') {
        if (s->line_len == 1)
            return (int)fail(s, HS_MALFORMED, "a line folded onto the previous header (obs-fold)");
        s->name_space = 1;
    }
    return 0;
}

/* The bytes the per-byte grammar has to judge; any other byte only counts
 * against the limits. In a field's name the colon and whitespace are judged
 * too. Skipping runs of the others with one table load a byte is what makes
 * the scan cheap: it is on every request and every response. */
static const unsigned char judged_in_value[256] = {['\r'] = 1, ['\n'] = 1, ['\0'] = 1};
static const unsigned char judged_in_name[256] = {
    ['\r'] = 1, ['\n'] = 1, ['\0'] = 1, [':'] = 1, [' '] = 1, ['\t'] = 1,
};
/* A request's method ends at the start line's first SP. */
static const unsigned char judged_in_method[256] = {
    ['\r'] = 1,
    ['\n'] = 1,
    ['\0'] = 1,
    [' '] = 1,
};

static int counting_method(const struct head_scan *s)
{
    return s->lines == 0 && s->in_method && s->max_method;
}

/* The high bit set in each byte of x below c (c <= 0x80; the classic bit
 * trick), and maybe in bytes above the first such: a borrow runs only
 * upwards, so "none" and the lowest one are exact. On a little-endian
 * machine the lowest is the first in memory. */
#define BYTES_BELOW(x, c) (((x)-0x0101010101010101ULL * (c)) & ~(x)&0x8080808080808080ULL)

/* Index of the first CR, LF or NUL in p[0, n), n when none. Eight bytes at
 * a time: one test finds the first byte below 0x0e, the three among them,
 * and any other (a HT in a value) costs a step past it. The tail byte by
 * byte. */
static size_t to_judged_in_value(const char *p, size_t n)
{
    size_t m = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (m + 8 <= n) {
        uint64_t x;
        memcpy(&x, p + m, sizeof x);
        uint64_t hit = BYTES_BELOW(x, 0x0e);
        if (!hit) {
            m += 8;
            continue;
        }
        m += (size_t)__builtin_ctzll(hit) / 8;
        if (judged_in_value[(unsigned char)p[m]])
            return m;
        m++;
    }
#endif
    while (m < n && !judged_in_value[(unsigned char)p[m]])
        m++;
    return m;
}

/* Index of the first byte in p[0, n) that may end a field's name: a colon
 * or a byte up to SP. Those are all the name's judged bytes, and control
 * bytes besides, which whole_lines then leaves to the per-byte path. Eight
 * bytes at a time. */
static size_t to_name_end(const char *p, size_t n)
{
    size_t m = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; m + 8 <= n; m += 8) {
        uint64_t x;
        memcpy(&x, p + m, sizeof x);
        uint64_t colon = x ^ 0x3a3a3a3a3a3a3a3aULL;
        uint64_t hit = BYTES_BELOW(x, 0x21) | BYTES_BELOW(colon, 1);
        if (hit)
            return m + (size_t)__builtin_ctzll(hit) / 8;
    }
#endif
    while (m < n && (unsigned char)p[m] > ' ' && p[m] != ':')
        m++;
    return m;
}

static size_t plain_run(const struct head_scan *s, const char *p, size_t n)
{
    const unsigned char *judged = s->lines > 0 && s->in_name ? judged_in_name
                                  : counting_method(s)       ? judged_in_method
                                                             : judged_in_value;
    /* Values and the rest of a start line are most of a head's bytes. */
    if (judged == judged_in_value)
        return to_judged_in_value(p, n);
    size_t m = 0;
    while (m < n && !judged[(unsigned char)p[m]])
        m++;
    return m;
}

/* Counts a run of m plain bytes against the limits, failing as the per-byte
 * scan would at the run's first byte over a limit (the head's limit first
 * when one byte crosses several, then the method's). Invariants: total <=
 * max_head; on the start line line_len <= max_start_line, and while in the
 * method line_len <= max_method. */
static long take_run(struct head_scan *s, size_t m, const struct head_scan_limits *lim)
{
    size_t head_room = lim->max_head - s->total;
    size_t line_room = s->lines == 0 ? lim->max_start_line - s->line_len : (size_t)-1;
    size_t method_room = counting_method(s) ? s->max_method - s->line_len : (size_t)-1;
    if (m > head_room && head_room <= line_room && head_room <= method_room)
        return fail(s, HS_HEAD_LARGE, "the head is larger than the limit");
    if (m > method_room && method_room <= line_room)
        return fail(s, HS_METHOD_LONG, "the method is longer than the limit");
    if (m > line_room)
        return fail(s, HS_START_LINE_LONG, "the first line is longer than the limit");
    s->total += m;
    s->line_len += m;
    return 0;
}

/* Whether a start line of len bytes at p is within the limits on it. */
static int start_line_fits(const struct head_scan *s, const char *p, size_t len,
                           const struct head_scan_limits *lim)
{
    if (len == 0 || len > lim->max_start_line)
        return 0;
    if (!counting_method(s))
        return 1;
    const char *sp = memchr(p, ' ', len);
    return (size_t)(sp ? sp - p : (long)len) <= s->max_method;
}

/* The common case in one step: whole lines from a line's first byte at p,
 * as many as come, each with nothing in it that the grammar refuses and no
 * limit it crosses, and the blank line that ends the head. Returns the
 * bytes taken, every line of them counted, and sets *done when the head
 * ended among them. It stops, having counted nothing of it, at any other
 * line (unfinished, refused, over a limit, an empty line before the start
 * line), which the byte-by-byte path then judges from the same state, with
 * the same answer and reason. A field line costs a few word tests, instead
 * of four trips through that path and a table load per byte of its name. */
static size_t whole_lines(struct head_scan *s, const char *p, size_t n,
                          const struct head_scan_limits *lim, int *done)
{
    size_t at = 0;
    if (s->lines == 0) { /* the start line, when it comes whole */
        size_t len = to_judged_in_value(p, n);
        if (len + 1 >= n || p[len] != '\r' || p[len + 1] != '\n' ||
            len + 2 > lim->max_head - s->total || !start_line_fits(s, p, len, lim))
            return 0;
        at = len + 2;
        s->total += at;
        s->lines = 1;
    }
    /* field lines: room left in the head and for fields, counted down */
    size_t room = lim->max_head - s->total;
    size_t fields_room = s->fields < lim->max_fields ? lim->max_fields - s->fields : 0, taken = 0;
    while (at < n) {
        const char *q = p + at;
        size_t left = n - at;
        if (q[0] == '\r') {
            if (left >= 2 && q[1] == '\n' && room >= 2) {
                at += 2, room -= 2;
                *done = 1;
            }
            break;
        }
        size_t colon = to_name_end(q, left);
        if (colon == 0 || colon == left || q[colon] != ':')
            break;
        size_t len = colon + 1 + to_judged_in_value(q + colon + 1, left - colon - 1);
        if (len + 1 >= left || q[len] != '\r' || q[len + 1] != '\n' || len + 2 > room ||
            taken == fields_room)
            break;
        at += len + 2, room -= len + 2;
        taken++;
    }
    s->total = lim->max_head - room;
    s->fields += taken;
    s->lines += (int)taken;
    return at;
}

long head_scan_feed(struct head_scan *s, const char *p, size_t n,
                    const struct head_scan_limits *lim)
{
    for (size_t i = 0; i < n; i++) {
        if (!s->saw_cr && s->line_len == 0) { /* at the start of a line */
            int done = 0;
            i += whole_lines(s, p + i, n - i, lim, &done);
            if (done)
                return (long)s->total;
            if (i == n)
                break;
        }
        if (!s->saw_cr) {
            size_t m = plain_run(s, p + i, n - i);
            long r = m > 0 ? take_run(s, m, lim) : 0;
            if (r < 0)
                return r;
            i += m;
            if (i == n)
                break;
        }
        char c = p[i];
        if (++s->total > lim->max_head)
            return fail(s, HS_HEAD_LARGE, "the head is larger than the limit");
        if (s->saw_cr) {
            if (c != '\n')
                return fail(s, HS_MALFORMED, "a CR not followed by LF");
            s->saw_cr = 0;
            int r = end_line(s, lim);
            if (r < 0)
                return r;
            if (r == 1)
                return (long)s->total;
            continue;
        }
        if (c == '\r') {
            s->saw_cr = 1;
            continue;
        }
        if (c == '\n')
            return fail(s, HS_MALFORMED, "a line ends in a bare LF, not CRLF");
        if (c == '\0')
            return fail(s, HS_MALFORMED, "a NUL byte in the head");
        s->line_len++;
        if (s->lines == 0 && s->line_len > lim->max_start_line)
            return fail(s, HS_START_LINE_LONG, "the first line is longer than the limit");
        if (s->lines == 0 && c == ' ')
            s->in_method = 0;
        if (s->lines > 0 && s->in_name) {
            int r = name_byte(s, c);
            if (r < 0)
                return r;
        }
    }
    return 0;
}
