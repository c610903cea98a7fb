/* head_scan.h - finds the end of an HTTP/1.x message head, and refuses what
 * llhttp would let through or what costs us memory.
 *
 * Grammar enforced (RFC 9112 §2.2, §5): every line ends in CRLF; no bare CR,
 * no bare LF, no NUL; no obs-fold (a field line starting with SP or HTAB);
 * no whitespace between a field name and its colon, and a name is not empty.
 * Limits: the start line, the whole head, and the number of field lines;
 * in a request, the method (the start line up to its first SP): RFC 9112 §3
 * lets a server answer a method longer than any it implements with 501.
 * The scan keeps state between calls so a head that arrives one byte at a
 * time costs O(n) in total. A line that has come whole and passes is
 * counted in one step (its ends found eight bytes at a time); in any other
 * only the bytes the grammar judges (CR, LF, NUL, and in a name the colon
 * and whitespace) take the per-byte path, and runs of the others are
 * counted in one step. */
#ifndef WTP_HEAD_SCAN_H
#define WTP_HEAD_SCAN_H

#include <stddef.h>

enum head_scan_error {
    HS_MALFORMED = -1,       /* a framing byte out of place: 400 / 502 */
    HS_START_LINE_LONG = -2, /* 414 */
    HS_HEAD_LARGE = -3,      /* 431 */
    HS_TOO_MANY_FIELDS = -4, /* 431 */
    HS_METHOD_LONG = -5,     /* 501 */
};

struct head_scan_limits {
    size_t max_start_line; /* bytes, without CRLF */
    size_t max_head;       /* bytes, the final CRLF included */
    size_t max_fields;     /* field lines */
};

struct head_scan {
    size_t total;      /* bytes scanned so far */
    size_t line_len;   /* bytes of the current line, without CR */
    size_t fields;     /* complete field lines */
    int lines;         /* complete lines, the start line included */
    int saw_cr;        /* previous byte was CR */
    int in_name;       /* still inside the current field's name */
    int in_method;     /* still inside the start line's first token */
    size_t max_method; /* a request's limit on it (WTP_MAX_METHOD); 0: none */
    int name_space;    /* whitespace seen inside the name */
    const char *error; /* what was wrong, for the error page */
};

void head_scan_init(struct head_scan *s);
/* The same for a request head: its method counts against WTP_MAX_METHOD. */
void head_scan_init_request(struct head_scan *s);

/* Scan n more bytes. Returns the length of the head (> 0, its final CRLF
 * included) once it is complete, 0 if it needs more bytes, or a negative
 * head_scan_error (s->error then says why). Bytes after the head are not
 * looked at. */
long head_scan_feed(struct head_scan *s, const char *p, size_t n,
                    const struct head_scan_limits *lim);

#endif
