/* proxy_limits.h - every limit and timeout of the relay, with its default.
 *
 * Each one is a config key (conf/wtproxy.conf documents them all, with the
 * same defaults) and a `wtproxy serve` flag. Sizes are bytes, durations are
 * milliseconds. Keep this file, conf/wtproxy.conf and proxy/config.c's key
 * table in step. */
#ifndef WTP_LIMITS_H
#define WTP_LIMITS_H

#define WTP_DEFAULT_FRONT_PORT 8000

/* Not a limit: the words the daemon's log line begins with (after
 * "wtproxy: ") when it could not start, which the CLI's "no daemon
 * answers" quotes when it is the log's last line. */
#define WTP_NOT_STARTED "not started: "

/* Request head: whole head (request line + headers + blank line), number of
 * header lines, and the request line alone. */
#define WTP_MAX_HEAD_SIZE (64 * 1024)   /* over it: 431 */
#define WTP_MAX_HEADER_COUNT 100        /* over it: 431 */
#define WTP_MAX_REQUEST_LINE (8 * 1024) /* over it: 414 */
/* A request's method (a fixed constant, not a key): any token is forwarded
 * (RFC 9110 §9.1), the longest registered one has 17 bytes, and RFC 9112 §3
 * answers a longer method than a server implements with 501. */
#define WTP_MAX_METHOD 32 /* over it: 501 */
/* The most fields one parsed head can hold: max_header_count's ceiling. */
#define WTP_FIELDS_CAP 1024
#define WTP_MAX_RESPONSE_HEAD (64 * 1024) /* backend head over it: 502 */

/* Timeouts. */
#define WTP_HEAD_TIMEOUT_MS 10000      /* first byte to end of head: 408 */
#define WTP_KEEPALIVE_TIMEOUT_MS 75000 /* idle client connection: closed */
#define WTP_CONNECT_TIMEOUT_MS 5000    /* backend connect: 502 */
#define WTP_RESPONSE_TIMEOUT_MS 120000 /* request sent to response head: 504 */
#define WTP_BODY_TIMEOUT_MS 60000      /* no body byte either way: closed */
#define WTP_SHUTDOWN_TIMEOUT_MS 10000  /* SIGTERM: in-flight requests get this long */

/* After wtproxy answers and closes, it reads and discards what the client
 * still sends for this long, so the kernel does not reset the connection
 * before the client has read the answer (a fixed constant, not a key). */
#define WTP_LINGER_MS 2000

/* Buffering: each direction of a connection stops reading once this much
 * waits to be written to its peer, so one connection holds at most about
 * 2 * WTP_BUFFER_SIZE + WTP_MAX_HEAD_SIZE whatever the body size. */
#define WTP_BUFFER_SIZE (256 * 1024)

/* Backend keep-alive pool: idle connections kept per backend, and how long. */
#define WTP_POOL_SIZE 64
#define WTP_POOL_IDLE_MS 30000

/* A request for a backend whose server is still starting waits this long
 * for it to listen (then 503); a backend whose pid lives but refuses
 * connections (an autoreloading dev server) is retried this long (then 502). */
#define WTP_START_TIMEOUT_MS 60000
#define WTP_RELOAD_GRACE_MS 10000
/* One GET /__whoami: a dev server answers it from memory in a millisecond;
 * two seconds is a hung server, not a slow one. */
#define WTP_WHOAMI_TIMEOUT_MS 2000
/* Django's autoreloader polls once a second and takes about a second to
 * start again: a stale server gets this long to come back with the new
 * code before its request is refused. */
#define WTP_STALE_GRACE_MS 3000
#define WTP_WAIT_POLL_MS 50    /* how often a request for a starting one checks */
#define WTP_RELOAD_POLL_MS 100 /* how often a refused connect is retried */

/* A connection whose caller is being looked for on the worker thread (one
 * /proc scan shared by every caller waiting) waits this long at most, then
 * gets a 503 identify-timeout: never routed as if it had no worktree,
 * which would send it to the wrong server or refuse it for the wrong
 * reason. A scan takes milliseconds; this is for a machine that stalls. */
#define WTP_IDENTIFY_TIMEOUT_MS 30000

/* The loop's priority of the events that hand a worker's answer back (the
 * loop has two; every other event has the default, 1). */
#define WTP_PRIO_ANSWERS 0

/* Client connections served at once; further accepts wait. */
#define WTP_MAX_CONNECTIONS 8192

/* Most front ports (listen lines) one daemon serves. */
#define WTP_MAX_LISTEN 16

#endif
