/* identify.h - caller identification for the daemon's connections: once
 * per connection, answered on the loop from a per-pid cache, an index of
 * the sockets of recently seen processes, or a guess among the processes
 * just started (tens to hundreds of µs), else on a worker thread (a /proc
 * scan, or the walk of a process not placed yet: /proc files and .git
 * entries, slow on a cold or remote filesystem) while the connection waits
 * and every other one proceeds. */
#ifndef WTP_IDENTIFY_H
#define WTP_IDENTIFY_H

#include <event2/event.h>
#include <jansson.h>

#include "caller.h"

struct identify;

struct identify_result {
    int placed; /* worktree is the caller's */
    uid_t uid;  /* the socket's owner; (uid_t)-1 when unknown */
    int fd;     /* the socket's fd number in place.pid, -1 unknown */
    struct caller_place place;
};

/* What a connection keeps of its caller while it lasts: the fields routing
 * and refusal messages read, with the strings sized to fit. A struct
 * identify_result is 12 KiB (three PATH_MAX buffers); kept per connection
 * it was most of an idle connection's memory. */
struct identify_kept {
    int placed;
    uid_t uid;
    int fd;    /* as in identify_result */
    pid_t pid; /* place.pid */
    pid_t decided_by;
    char how[8];
    const char *worktree; /* "" when not placed; these point into text */
    const char *comm;
    const char *cwd;
    char text[];
};

/* A malloc'd copy of what a connection keeps of r (free() it); NULL when
 * out of memory. */
struct identify_kept *identify_keep(const struct identify_result *r);

typedef void (*identify_cb)(void *arg, const struct identify_result *r);

/* Whether a repository is known, asked by the walk (caller_place) on the
 * worker: snap, on the loop, copies what known will read of arg (the
 * registrations) when a placement is handed to the worker (NULL: out of
 * memory, the placement fails); known reads that copy on the worker; drop
 * frees it (any thread); version, on the loop, changes whenever a snap
 * would copy something else (a process placed nowhere is walked again). */
struct identify_known {
    void *(*snap)(void *arg);
    caller_known_fn known;
    void (*drop)(void *copy);
    unsigned long (*version)(void *arg);
    void *arg;
};

/* NULL with err when identification cannot work here (no sock_diag). */
struct identify *identify_new(struct event_base *base, const struct identify_known *known,
                              char *err, size_t errlen);
void identify_free(struct identify *id);

/* Identify the caller on our accepted socket fd. Returns 1 with *r filled
 * when the answer is known at once, 0 when cb will get it later (then
 * *ticket identifies the request for identify_cancel), -1 when the socket
 * cannot be traced (r->uid may be known). */
int identify_start(struct identify *id, int fd, identify_cb cb, void *arg,
                   struct identify_result *r, void **ticket);

/* The connection went away: its pending answer is dropped. */
void identify_cancel(void *ticket);

/* How identification has gone: {"all": LAT, "worker": LAT, "worker_passes",
 * "proc_scans", "untraced"}, LAT being {"count", "p50_us", "p99_us",
 * "max_us"} over the last 4096 (from accept's lookup to the answer; "worker"
 * those that waited for the worker thread). A new reference, or NULL. */
json_t *identify_stats_json(const struct identify *id);

/* A connection identified as held by pid on its fd ended: that fd number
 * in the caller is likely to hold the caller's next socket, so it is tried
 * first then. */
void identify_forget(struct identify *id, pid_t pid, int fd);

#endif
