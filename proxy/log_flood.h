/* log_flood.h - repeated lines of the daemon's log collapsed into one and
 * a count. A test loop polling a refused route, Playwright's webServer
 * probing every 100 ms, a load test against a server that is down, a
 * client sending a dropped header, a backend cutting every response
 * short: each request is one line's worth, and the log must not grow by a
 * line for each (tens of thousands a second) for weeks. Every line a
 * request or a connection can cause goes through here (conn_log for a
 * request's); the daemon's own events (start, reload, stop) do not.
 *
 * The first line of a kind is written at once (an agent reading the log
 * sees it then); more of that kind within WTP_LOG_FLOOD_WINDOW_MS are
 * counted, and at the window's end one line says how many: "... and 1,234
 * more like it in the last 10 s (KIND)". A kind still repeating keeps
 * being counted, one summary a window; a window without one ends the kind,
 * and its next line is written at once again. The dashboard's refusal log
 * (refusal_log.c) keeps each refusal's details. */
#ifndef WTP_LOG_FLOOD_H
#define WTP_LOG_FLOOD_H

#include <event2/event.h>
#include <stdarg.h>

#define WTP_LOG_FLOOD_WINDOW_MS 10000 /* lines of one kind in it: one, and a count */
#define WTP_LOG_FLOOD_KINDS 64        /* kinds counted at once; the rest in one count */
#define WTP_LOG_FLOOD_KIND_LEN 384    /* a kind's text, cut to this */

struct log_flood;

/* NULL when out of memory. */
struct log_flood *log_flood_new(struct event_base *base);

/* The counts still open are written first (a stop says what it held). */
void log_flood_free(struct log_flood *f);

/* Write the line (proxy_log's way) unless a line of kind was written
 * within the window: then only count it. f NULL (out of memory): every
 * line is written. */
void log_flood_line(struct log_flood *f, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* log_flood_line with the arguments as a va_list (conn_log's). */
void log_flood_vline(struct log_flood *f, const char *kind, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
