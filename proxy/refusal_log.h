/* refusal_log.h - the daemon's memory of what it refused: a ring of the
 * last WTP_REFUSAL_LOG_SIZE answers wtproxy wrote itself instead of a
 * backend's (routing refusals, whoami-gate refusals, malformed requests,
 * gateway errors), for the dashboard (DASHBOARD.md) and its JSON API.
 *
 * Each record gets the next sequence number; past the ring's size the
 * oldest is overwritten. The ring knows no connection: the connection
 * (client.c's conn_fail, which answers every proxy_error) fills a
 * refusal_info and adds it, and whoever shows refusals live (the
 * dashboard's event stream) subscribes to be told of each new one. */
#ifndef WTP_REFUSAL_LOG_H
#define WTP_REFUSAL_LOG_H

#include <jansson.h>
#include <sys/types.h>

#define WTP_REFUSAL_LOG_SIZE 200      /* entries kept; the oldest goes first */
#define WTP_REFUSAL_LOG_SUBSCRIBERS 4 /* callbacks told of each new entry */

struct refusal_log;

/* What one refusal says; every string is copied (NULL reads as ""). */
struct refusal_info {
    int status;                   /* the HTTP status answered */
    const char *reason;           /* the X-Wtproxy-Refused / X-Wtproxy-Error reason: "no-backend" */
    const char *detail;           /* the sentence the caller was given */
    const char *fix;              /* the page's Fix line: the command that cures it */
    const char *request;          /* "GET /path" (no query) */
    const char *peer;             /* the client's address */
    int front;                    /* the front port it came to */
    pid_t caller_pid;             /* the process holding the socket, 0 unknown */
    int test_worker;              /* its Playwright worker (TEST_WORKER_INDEX), -1 none */
    const char *caller_process;   /* its command line */
    const char *caller_worktree;  /* where it was placed, "" not placed */
    const char *named;            /* the worktree the request named itself */
    const char *backend_worktree; /* the backend it was for, "" none */
    const char *backend;          /* that backend's HOST:PORT */
};

/* NULL when out of memory. */
struct refusal_log *refusal_log_new(void);
void refusal_log_free(struct refusal_log *log);

/* Append one refusal at time_ms (unix ms); past WTP_REFUSAL_LOG_SIZE the
 * oldest is forgotten. Never fails: out of memory, strings are left out.
 * Then the subscribers are told, oldest subscription first. */
void refusal_log_add(struct refusal_log *log, const struct refusal_info *r, long long time_ms);

/* Told of each new entry, after it is added: seq is its sequence number. */
typedef void (*refusal_log_notify)(void *arg, unsigned long long seq);

/* Call fn(arg, seq) after each refusal_log_add. Returns 0, or -1 when
 * WTP_REFUSAL_LOG_SUBSCRIBERS are subscribed already. */
int refusal_log_subscribe(struct refusal_log *log, refusal_log_notify fn, void *arg);

/* Forget the subscription of (fn, arg); nothing when there is none. */
void refusal_log_unsubscribe(struct refusal_log *log, refusal_log_notify fn, void *arg);

/* The sequence number of the newest entry (1, 2, ...), 0 when none yet:
 * a change of it means new entries. */
unsigned long long refusal_log_seq(const struct refusal_log *log);

/* The entries with seq > after, oldest first, as a JSON array (new
 * reference, NULL when out of memory); DASHBOARD.md has the fields. */
json_t *refusal_log_json(const struct refusal_log *log, unsigned long long after);

/* The newest refusal for the backend of (front, worktree) as a JSON
 * object, NULL when none is kept. */
json_t *refusal_log_last_for(const struct refusal_log *log, int front, const char *worktree);

#endif
