/* reg_store_worker.c - the state file written off the event loop (and,
 * with a second saver, the embedded lease store's leases.json).
 *
 * A save is a write, an fsync of the file, a rename and an fsync of its
 * folder (reg_store_replace_file): on a busy disk tens of milliseconds,
 * which on the loop every request of every worktree would wait for. So the
 * loop hands a snapshot (the file's whole text) to a worker thread
 * (host/worker.c) and goes on.
 *
 * Writes coalesce: at most one is in flight and one pending. A snapshot
 * handed while one is in flight becomes the pending one, replacing an
 * older pending one (the latest state wins: each snapshot is the whole
 * table, so the older one is in it). Who must know when a change is on
 * disk (a control reply, PROTOCOL.md: "saved before the reply is sent")
 * waits for the latest snapshot handed so far: the pending one if any,
 * else the one in flight. At exit the write in flight is finished and the
 * pending one written, on the calling thread. */
#include "registry.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

struct waiter {
    reg_saver_done done;
    void *arg;
    struct waiter *next;
};

struct write_job {
    struct host_job hj; /* first: the worker hands it back as this */
    struct reg_saver *sv;
    char *data;               /* the snapshot; the job owns it */
    struct waiter *waiters;   /* who waits for this snapshot, newest first */
    char err[PATH_MAX + 256]; /* "" once on disk */
};

struct reg_saver {
    char path[PATH_MAX];
    struct host_worker *worker;
    struct event *finished;
    struct write_job *inflight, *pending; /* each NULL or one job */
    reg_saver_done on_write;              /* after every write, before its waiters */
    void *arg;
};

/* On the worker: the atomic replace, the slow part. */
static void run_write(struct host_job *hj, void *ctx)
{
    struct write_job *j = (struct write_job *)hj;
    (void)ctx;
    if (reg_store_replace_file(j->sv->path, j->data, strlen(j->data), j->err, sizeof j->err) == 0)
        j->err[0] = '\0';
}

/* On the loop (or at exit): tell everyone j's outcome, then free it. The
 * waiters were added newest first; they are told oldest first. */
static void job_done(struct reg_saver *sv, struct write_job *j)
{
    struct waiter *w = j->waiters, *rev = NULL, *next;
    sv->on_write(sv->arg, j->err);
    for (; w; w = next) {
        next = w->next;
        w->next = rev;
        rev = w;
    }
    for (w = rev; w; w = next) {
        next = w->next;
        w->done(w->arg, j->err);
        free(w);
    }
    free(j->data);
    free(j);
}

/* The write in flight is over: report it, start the pending one. */
static void finished_cb(evutil_socket_t fd, short what, void *arg)
{
    struct reg_saver *sv = arg;
    struct host_job_list done = STAILQ_HEAD_INITIALIZER(done);
    (void)fd;
    (void)what;
    host_worker_finished(sv->worker, &done);
    while (!STAILQ_EMPTY(&done)) {
        struct write_job *j = (struct write_job *)STAILQ_FIRST(&done);
        STAILQ_REMOVE_HEAD(&done, link);
        sv->inflight = NULL;
        job_done(sv, j);
    }
    if (!sv->inflight && sv->pending) {
        sv->inflight = sv->pending;
        sv->pending = NULL;
        host_worker_submit(sv->worker, &sv->inflight->hj);
    }
}

struct reg_saver *reg_saver_new(struct event_base *base, const char *path, reg_saver_done on_write,
                                void *arg, char *err, size_t errlen)
{
    char why[256];
    struct reg_saver *sv = calloc(1, sizeof *sv);
    if (!sv) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(sv->path, sizeof sv->path, "%s", path);
    sv->on_write = on_write;
    sv->arg = arg;
    /* Not niced: a change's reply waits for it. */
    if (!(sv->worker = host_worker_new(run_write, sv, 0, why, sizeof why)) ||
        !(sv->finished =
              event_new(base, host_worker_fd(sv->worker), EV_READ | EV_PERSIST, finished_cb, sv)) ||
        event_add(sv->finished, NULL) < 0) {
        snprintf(err, errlen, "cannot start the writer thread of %s: %s", path,
                 sv->worker ? "no event for its answers" : why);
        reg_saver_free(sv);
        return NULL;
    }
    return sv;
}

void reg_saver_put(struct reg_saver *sv, char *data)
{
    struct write_job *j;
    if (sv->pending) { /* replaced: its waiters wait for this newer state */
        free(sv->pending->data);
        sv->pending->data = data;
        return;
    }
    if (!(j = calloc(1, sizeof *j))) {
        free(data);
        sv->on_write(sv->arg, "out of memory: the change is not saved");
        return;
    }
    j->sv = sv;
    j->data = data;
    if (sv->inflight) {
        sv->pending = j;
    } else {
        sv->inflight = j;
        host_worker_submit(sv->worker, &j->hj);
    }
}

int reg_saver_wait(struct reg_saver *sv, reg_saver_done done, void *arg)
{
    struct write_job *j = sv->pending ? sv->pending : sv->inflight;
    struct waiter *w = j ? calloc(1, sizeof *w) : NULL;
    if (!w)
        return 0;
    *w = (struct waiter){done, arg, j->waiters};
    j->waiters = w;
    return 1;
}

/* At exit: report the jobs in list, writing each first when write. */
static void drain(struct reg_saver *sv, struct host_job_list *list, int write)
{
    while (!STAILQ_EMPTY(list)) {
        struct write_job *j = (struct write_job *)STAILQ_FIRST(list);
        STAILQ_REMOVE_HEAD(list, link);
        if (write)
            run_write(&j->hj, NULL);
        job_done(sv, j);
    }
}

void reg_saver_free(struct reg_saver *sv)
{
    struct host_job_list finished = STAILQ_HEAD_INITIALIZER(finished),
                         unstarted = STAILQ_HEAD_INITIALIZER(unstarted);
    if (!sv)
        return;
    if (sv->worker) /* finishes the write it is doing, begins no other */
        host_worker_free(sv->worker, &finished, &unstarted);
    /* The write in flight is in one of the lists, finished or not begun;
     * the pending one comes after it. */
    if (sv->pending)
        STAILQ_INSERT_TAIL(&unstarted, &sv->pending->hj, link);
    drain(sv, &finished, 0);
    drain(sv, &unstarted, 1);
    if (sv->finished)
        event_free(sv->finished);
    free(sv);
}
