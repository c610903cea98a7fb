/* fp_worker.c - see fp_worker.h. One thread: two cores are common on the
 * machines this runs on, and the identification worker (proxy/identify.c)
 * has the other. The loop never waits for it: the queue's lock is held
 * only to move a pointer. */
#include "fp_worker.h"

#include <errno.h>
#include <event2/event.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* How much nicer than the loop the worker runs: on a busy machine a
 * fingerprint may take longer, but the loop's requests come first. */
#define WORKER_NICE 10

struct whoami_fp_worker {
    struct host_worker *worker;
    struct event *done_ev;
    whoami_fp_done_cb done;
    void *arg;
};

#define JOB_OF(hj) ((struct whoami_fp_job *)((char *)(hj)-offsetof(struct whoami_fp_job, hj)))

/* The top folder of root's worktree into out, "" when root is in none. */
static void worktree_of(const char *root, char *out, size_t len)
{
    struct host_worktree wt;
    if (host_worktree_of(root, &wt, NULL, 0) == 0)
        snprintf(out, len, "%s", wt.root);
    else
        out[0] = '\0';
}

/* On the worker. */
static void run_job(struct host_job *hj, void *ctx)
{
    struct whoami_fp_job *j = JOB_OF(hj);
    (void)ctx;
    if (j->before)
        j->before(j);
    if (j->root) {
        j->rc = whoami_fp_compute(j->root, j->patterns, j->prev, &j->out, j->err, sizeof j->err);
        worktree_of(j->root, j->worktree, sizeof j->worktree);
    } else {
        j->rc = -1; /* before alone: no out */
    }
    j->finished = 1;
}

static void done_cb(evutil_socket_t fd, short what, void *arg)
{
    struct whoami_fp_worker *w = arg;
    struct host_job_list done = STAILQ_HEAD_INITIALIZER(done);
    (void)fd;
    (void)what;
    host_worker_finished(w->worker, &done);
    while (!STAILQ_EMPTY(&done)) {
        struct host_job *hj = STAILQ_FIRST(&done);
        STAILQ_REMOVE_HEAD(&done, link);
        w->done(w->arg, JOB_OF(hj));
    }
}

struct whoami_fp_worker *whoami_fp_worker_new(struct event_base *base, whoami_fp_done_cb done,
                                              void *arg)
{
    char why[256];
    struct whoami_fp_worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->done = done;
    w->arg = arg;
    if (!(w->worker = host_worker_new(run_job, w, WORKER_NICE, why, sizeof why)) ||
        !(w->done_ev =
              event_new(base, host_worker_fd(w->worker), EV_READ | EV_PERSIST, done_cb, w)) ||
        event_add(w->done_ev, NULL) < 0) {
        int e = errno ? errno : ENOMEM;
        whoami_fp_worker_free(w);
        errno = e;
        return NULL;
    }
    return w;
}

void whoami_fp_worker_submit(struct whoami_fp_worker *w, struct whoami_fp_job *j)
{
    j->finished = 0;
    host_worker_submit(w->worker, &j->hj);
}

void whoami_fp_worker_free(struct whoami_fp_worker *w)
{
    struct host_job_list finished = STAILQ_HEAD_INITIALIZER(finished),
                         unstarted = STAILQ_HEAD_INITIALIZER(unstarted);
    if (!w)
        return;
    /* The jobs belong to their trees, which find them by j->finished. */
    if (w->worker)
        host_worker_free(w->worker, &finished, &unstarted);
    if (w->done_ev)
        event_free(w->done_ev);
    free(w);
}
