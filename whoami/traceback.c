/* traceback.c - a server's error answer that is a Python traceback: an
 * app that fails to load. gunicorn --reload serves a worker's failed load
 * of the app (a SyntaxError in a models.py Django imports at setup) as a
 * 500 to every request, /__whoami too, whose body is the traceback's
 * frames (measured, gunicorn 20.1: print_tb's, without the error line);
 * Django's technical 500 in text ends its traceback with "Exception
 * Value:". The gate said "the whoami middleware is missing" and doctor
 * "wtproxy init --apply", which had nothing to change: the server has the
 * middleware, its app does not load. */
#include <stdio.h>
#include <string.h>

#include "whoami.h"

#define TRACEBACK_LINES 6 /* the last frames: the file and line, the code, the error */

/* Whether the line at p (to end) is a Python frame's, `  File "...", line N`. */
static int frame_line(const char *p, const char *end)
{
    static const char file[] = "  File \"";
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    eol = eol ? eol : end;
    return (size_t)(eol - p) > sizeof file && memcmp(p, file, sizeof file - 1) == 0 &&
           memmem(p, (size_t)(eol - p), "\", line ", 8);
}

int whoami_traceback_tail(const char *body, size_t len, char *out, size_t outlen)
{
    if (!body || outlen == 0) /* an empty body may come as NULL */
        return 0;
    size_t first = 0, end = len;
    while (first < len &&
           !((first == 0 || body[first - 1] == '\n') && frame_line(body + first, body + len)))
        first++;
    if (first == len)
        return 0;
    while (end > first && strchr("\r\n \t", body[end - 1]))
        end--;
    /* Django's text page goes on after the traceback: its request's facts */
    const char *value = memmem(body + first, end - first, "\nException Value: ", 18);
    const char *value_end =
        value ? memchr(value + 1, '\n', end - (size_t)(value + 1 - body)) : NULL;
    if (value_end)
        end = (size_t)(value_end - body);
    size_t at = end;
    for (int lines = 0; at > first; at--)
        if (body[at - 1] == '\n' && ++lines == TRACEBACK_LINES)
            break;
    snprintf(out, outlen, "%.*s", (int)(end - at), body + at);
    return 1;
}
