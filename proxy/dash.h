/* dash.h - the dashboard (DASHBOARD.md): requests whose path starts with
 * /__wtproxy/ are answered by the daemon itself, on every front port,
 * before routing and before the caller is looked for: the page, its JSON
 * API and its live event stream. Read-only, loopback peers only.
 *
 * The connection knows the dashboard only as a handler (handler.h):
 * dash_start() installs it. An event stream, and a leases request waiting
 * for the PostgreSQL thread, keep their connection in CS_HANDLER. */
#ifndef WTP_DASH_H
#define WTP_DASH_H

#include "http_msg.h"

#define WTP_DASH_PREFIX "/__wtproxy"
#define WTP_DASH_MAX_STREAMS 32          /* event streams open at once; more get 503 */
#define WTP_DASH_POLL_MS 250             /* how often a change is looked for (streams open) */
#define WTP_DASH_HEARTBEAT_MS 15000      /* a comment line on an idle stream */
#define WTP_DASH_STREAM_BUFFER (1 << 20) /* unread bytes that make a stream close */
#define WTP_DASH_LEASES_PG_MS 1000       /* a PostgreSQL lease store is read at most this often */
#define WTP_DASH_LEASES_RETRY_MS 5000    /* ... and, after a failed read, this often */

struct proxy_server;
struct proxy_client;
struct dash;

/* Set up the refusal log and the event streams, install the dashboard's
 * handler, and tell the registry the listen addresses (the ping reply's
 * "listen", for `wtproxy dashboard`). Call once the listeners are open.
 * Returns 0, or -1 (out of memory: the daemon runs without a dashboard). */
int dash_start(struct proxy_server *s);

/* Close the event streams' timer and free what dash_start made (the
 * streams themselves are connections, closed with the others first). */
void dash_stop(struct proxy_server *s);

/* --- dash.c --- */

/* The 503 for a stream that cannot start (too many open, out of memory). */
void dash_events_refuse(struct proxy_client *c);

/* --- dash_events.c: the live stream at /__wtproxy/events --- */

struct dash *dash_events_new(struct proxy_server *s); /* NULL: out of memory */
void dash_events_free(struct dash *d);

/* Turn c into an event stream (CS_HANDLER): headers, then the daemon, the
 * backends and the refusals kept, then every change within
 * WTP_DASH_POLL_MS (a refusal at once). Past WTP_DASH_MAX_STREAMS, c gets
 * a 503. */
void dash_events_serve(struct proxy_client *c);

/* Whether c is one of the event streams; dash_events_gone forgets it. */
int dash_events_has(const struct proxy_client *c);
void dash_events_gone(struct proxy_client *c);

/* c's timer fired: a heartbeat keeps proxies and the browser from taking
 * the quiet stream for a dead one. */
void dash_events_heartbeat(struct proxy_client *c);

/* --- dash_api.c: the JSON --- */

struct json_t;
/* Every registration as `wtproxy ls --json` has it, plus the display
 * fields of DASHBOARD.md (name, branch, status, ...). New reference. */
struct json_t *dash_api_backends(struct proxy_server *s);
/* The daemon: version, pid, machine, listen addresses, default backend. */
struct json_t *dash_api_daemon(struct proxy_server *s);

/* The leases, as `wtproxy leases --json` lists them: {"store", "leases"},
 * or {"store", "error"} when the store cannot be read (PostgreSQL down).
 * The embedded store answers at once: the object is returned (new
 * reference). A PostgreSQL store is read on its thread: NULL is returned,
 * *job set, and cb(arg, object) runs on the loop later, unless
 * dash_api_leases_cancel(s, *job) is called first. */
typedef void (*dash_leases_cb)(void *arg, struct json_t *leases);
struct json_t *dash_api_leases(struct proxy_server *s, dash_leases_cb cb, void *arg, void **job);
void dash_api_leases_cancel(struct proxy_server *s, void *job);

#endif
