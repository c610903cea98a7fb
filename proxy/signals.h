/* signals.h - the daemon's SIGTERM, SIGINT and SIGHUP, with their sender. */
#ifndef WTP_SIGNALS_H
#define WTP_SIGNALS_H

#include <event2/event.h>

/* Called on the loop for each signal: sig, and who sent it, for the log
 * ("SIGTERM from pid 812 (kill 4012), uid 1000"). */
typedef void (*proxy_signal_fn)(int sig, const char *from, void *arg);

/* Catch SIGTERM, SIGINT and SIGHUP for fn. One per process. NULL when it
 * cannot (out of memory or fds, or one exists). */
struct proxy_signals *proxy_signals_new(struct event_base *base, proxy_signal_fn fn, void *arg);

/* Default actions back, and everything freed. NULL is fine. */
void proxy_signals_free(struct proxy_signals *ps);

#endif
