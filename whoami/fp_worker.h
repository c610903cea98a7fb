/* fp_worker.h - the thread that fingerprints trees off the event loop
 * (a big tree takes seconds; the loop serves every connection). Jobs go
 * in through a queue; each finished job comes back to the loop through a
 * pipe the loop watches, and its callback runs there. Internal to whoami/
 * (tree.c). */
#ifndef WTP_WHOAMI_FP_WORKER_H
#define WTP_WHOAMI_FP_WORKER_H

#include <stddef.h>

#include "host.h"
#include "whoami.h"

struct event_base;

/* One fingerprint to compute (root NULL: before alone runs, rc -1). The
 * loop fills the inputs and leaves them alone (and alive) until the job
 * comes back. */
struct whoami_fp_job {
    const char *root;
    const struct whoami_patterns *patterns;
    const struct whoami_fp *prev;            /* an earlier result to reuse digests from, or NULL */
    void (*before)(struct whoami_fp_job *j); /* run on the worker first, or NULL */
    void *owner;                             /* the caller's, untouched */
    /* Filled by the worker: rc 0 with out (the owner frees it), or -1 with err. */
    int rc;
    struct whoami_fp out;
    char err[256];
    /* The top folder of root's worktree (host_worktree_of), "" when it is
     * in none: whether a folder inside a worktree is that worktree's or a
     * nested one's, which the gate asks of a server that fingerprints a
     * subfolder (decide.c). A few lstats, so the worker's too. */
    char worktree[PATH_MAX];
    int finished;       /* the worker is done with it */
    struct host_job hj; /* the worker's link */
};

typedef void (*whoami_fp_done_cb)(void *arg, struct whoami_fp_job *j);

struct whoami_fp_worker;

/* Start the thread (a host_worker). done runs on base's loop for each
 * finished job. NULL with errno when the thread, the pipe or the event
 * cannot be made. */
struct whoami_fp_worker *whoami_fp_worker_new(struct event_base *base, whoami_fp_done_cb done,
                                              void *arg);

/* Queue j (not yet finished, not queued). */
void whoami_fp_worker_submit(struct whoami_fp_worker *w, struct whoami_fp_job *j);

/* Stop the thread once its current job ends. Jobs still queued or not yet
 * handed back are dropped: their owners find them by j->finished (an out
 * to free when rc is 0). */
void whoami_fp_worker_free(struct whoami_fp_worker *w);

#endif
