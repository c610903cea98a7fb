/* dash.h - the dashboard (DASHBOARD.md): requests whose path starts with
 * /__wtproxy/ are answered by the daemon itself, on every front port,
 * before routing and before the caller is looked for: the page, its JSON
 * API, its live event stream, log tails and the actions (POST, behind the
 * checks of dash_actions.c). Loopback peers only, and of those only the
 * processes of the daemon's own user or root: another user of the
 * machine gets a 403 saying whose dashboard this is.
 *
 * The connection knows the dashboard only as a handler (handler.h):
 * dash_start() installs it. An event stream, and a leases request waiting
 * for the PostgreSQL thread, keep their connection in CS_HANDLER. */
#ifndef WTP_DASH_H
#define WTP_DASH_H

#include <sys/types.h>

#include "http_msg.h"

#define WTP_DASH_PREFIX "/__wtproxy"
#define WTP_DASH_MAX_STREAMS 32          /* event streams open at once; more get 503 */
#define WTP_DASH_POLL_MS 250             /* how often a change is looked for (streams open) */
#define WTP_DASH_HEARTBEAT_MS 15000      /* a comment line on an idle stream */
#define WTP_DASH_STREAM_BUFFER (1 << 20) /* unread bytes that make a stream close */
#define WTP_DASH_LEASES_PG_MS 1000       /* a PostgreSQL lease store is read at most this often */
#define WTP_DASH_LEASES_RETRY_MS 5000    /* ... and, after a failed read, this often */
#define WTP_DASH_ACTION_BODY_MAX 4096    /* an action's JSON body, bytes */
#define WTP_DASH_ACTION_BODY_MS 10000    /* for an action's body to arrive */
#define WTP_DASH_LOG_CHUNK 8192          /* a log tail reads at most this per poll */
#define WTP_DASH_LOG_POLL_MS 250         /* ... this often */
#define WTP_DASH_LOG_TAIL 16384          /* a log tail starts this far from the end */
#define WTP_DASH_MAX_LOGS 16             /* log tails open at once; more get 503 */

struct proxy_server;
struct proxy_client;
struct dash;

/* Set up the refusal log, the event streams, the actions' secret and the
 * sock_diag socket that tells a client's user (without one the dashboard
 * refuses everyone, said in the log), and install the dashboard's
 * handler: before the listeners open, since a request may arrive at once.
 * Returns 0, or -1 (out of memory). */
int dash_start(struct proxy_server *s);

/* Tell the registry the listen addresses (the ping reply's "listen", for
 * `wtproxy dashboard`), once the listeners are open. */
void dash_listening(struct proxy_server *s);

/* Close the event streams' timer and free what dash_start made (the
 * streams themselves are connections, closed with the others first). */
void dash_stop(struct proxy_server *s);

/* --- dash.c --- */

/* The uid of the process that holds c's client socket (one sock_diag
 * query, about 4 µs: fine on the loop). Returns 0, or -1 when unknown
 * (no such socket: the connection is closing; no sock_diag socket). */
int dash_client_uid(const struct proxy_client *c, uid_t *uid);

/* The 503 for a stream that cannot start (too many open, out of memory). */
void dash_events_refuse(struct proxy_client *c);

/* Write one whole answer with the dashboard's security headers; the
 * connection goes on to its next request when the request was read to
 * its end and the client keeps it. extra: more header lines, or NULL. */
void dash_respond(struct proxy_client *c, const char *status, const char *type, const char *extra,
                  const void *body, size_t len);

/* What c->handler_note holds once serve() took a request over: an
 * action waiting for its body (DASH_NOTE_BODY + the action), a log tail,
 * a start waiting for its .wtproxy read (c->handler_job its pending op). */
#define DASH_NOTE_BODY 0x1000
#define DASH_NOTE_LOG 0x2000
#define DASH_NOTE_START 0x3000

/* --- dash_actions.c: POST /api/restart, /api/stop, /api/start --- */

/* The checks an action must pass (the first that fails is noted). */
enum {
    DASH_CHECK_OK,
    DASH_CHECK_HOST,
    DASH_CHECK_ORIGIN,
    DASH_CHECK_FETCH_SITE,
    DASH_CHECK_TYPE,
    DASH_CHECK_TOKEN
};

/* Draw the daemon's secret (RAND_bytes). Returns 0, or -1: no action
 * will pass then. */
int dash_actions_init(void);

/* Forget the secret. */
void dash_actions_end(void);

/* The action at sub ("/api/stop"), or -1 when sub is none. */
int dash_action_index(const char *sub);

/* On the head, while its fields exist: the first check of the list in
 * dash_actions.c that m fails, DASH_CHECK_OK when none. */
int dash_action_check(const struct proxy_client *c, const struct http_msg *m);

/* Answer action which: 405 unless POST, 403 naming check unless it is
 * DASH_CHECK_OK, else read the body (CS_HANDLER while it comes) and run
 * the op as the daemon's user. */
void dash_action_serve(struct proxy_client *c, int which, int check);

/* Whether c waits for an action's body; more of it came; it timed out. */
int dash_action_waiting(const struct proxy_client *c);
void dash_action_read(struct proxy_client *c);
void dash_action_timeout(struct proxy_client *c);

/* c, whose start waits for its .wtproxy read (DASH_NOTE_START), is
 * closed: the start is cancelled, its reply never comes. */
void dash_action_gone(struct proxy_client *c);

/* GET /api/token: {"token", "header"}, the secret, for the page's
 * same-origin read; 403 naming the check when the request fails the
 * Host, Origin or Sec-Fetch-Site check of an action (the body and token
 * checks do not apply to it). */
void dash_action_token(struct proxy_client *c, int check);

/* --- dash_log.c: /log/<backend port>, a live tail of a server's log --- */

/* Turn c into the tail of the log of the live registration on that
 * backend port (CS_HANDLER), or answer 404/503. */
void dash_log_serve(struct proxy_client *c, const char *port);
void dash_log_tick(struct proxy_client *c); /* c's timer: the next piece */
void dash_log_gone(struct proxy_client *c); /* c closes */

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
