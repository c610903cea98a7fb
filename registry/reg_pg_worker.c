/* reg_pg_worker.c - the daemon's PostgreSQL thread (see reg_pg.h): a
 * host_worker (host/worker.c) whose finished jobs' callbacks run on the
 * loop. libevent is touched from the loop only (no evthread locking). */
#include "reg_pg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

struct job {
    struct host_job hj; /* first: the worker hands it back as this */
    reg_pgw_fn fn;
    json_t *in, *answer;
    reg_pgw_done done;
    void *arg;
    long long queued_ms;
    int cancelled;                     /* set and read on the loop only */
    int reconnected;                   /* the job found the store again */
    char error[REG_PG_URI_MAX + 1024]; /* the store's failure after the job, "" none */
};

struct reg_pgw {
    struct reg_mirror *m;
    struct host_worker *worker;
    struct event *answers;
    void (*on_reconnect)(void *arg);
    void *arg;
};

static void job_free(struct job *j)
{
    json_decref(j->in);
    json_decref(j->answer);
    free(j);
}

/* On the worker: one job against the store. */
static void run_job(struct host_job *hj, void *ctx)
{
    struct reg_pgw *w = ctx;
    struct job *j = (struct job *)hj;
    reg_pg_set_query_timeout(REG_PG_QUERY_TIMEOUT_MS);
    reg_mirror_job_begin(w->m, j->queued_ms);
    j->answer = j->fn(w->m, j->in);
    j->reconnected = reg_mirror_job_end(w->m, j->error, sizeof j->error);
}

/* On the loop: each job's callback, in order (answer NULL: never run),
 * unless it was cancelled. Returns whether one reconnected. */
static int answer_all(struct reg_pgw *w, struct host_job_list *jobs, int ran)
{
    int reconnected = 0;
    while (!STAILQ_EMPTY(jobs)) {
        struct job *j = (struct job *)STAILQ_FIRST(jobs);
        STAILQ_REMOVE_HEAD(jobs, link);
        reconnected |= j->reconnected;
        if (ran)
            reg_mirror_show(w->m, j->error);
        if (!j->cancelled && j->done) {
            j->done(j->arg, j->answer);
            j->answer = NULL;
        }
        job_free(j);
    }
    return reconnected;
}

static void answers_cb(evutil_socket_t fd, short what, void *arg)
{
    struct reg_pgw *w = arg;
    struct host_job_list done = STAILQ_HEAD_INITIALIZER(done);
    (void)fd;
    (void)what;
    host_worker_finished(w->worker, &done);
    if (answer_all(w, &done, 1) && w->on_reconnect)
        w->on_reconnect(w->arg);
}

struct reg_pgw *reg_pgw_new(struct event_base *base, struct reg_mirror *m, char *err, size_t errlen)
{
    char why[256];
    struct reg_pgw *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    w->m = m;
    if (!(w->worker = host_worker_new(run_job, w, 0, why, sizeof why)) ||
        !(w->answers =
              event_new(base, host_worker_fd(w->worker), EV_READ | EV_PERSIST, answers_cb, w)) ||
        event_add(w->answers, NULL) < 0) {
        snprintf(err, errlen, "cannot start the PostgreSQL thread: %s",
                 w->worker ? "no event for its answers" : why);
        reg_pgw_free(w);
        return NULL;
    }
    return w;
}

void reg_pgw_free(struct reg_pgw *w)
{
    struct host_job_list finished = STAILQ_HEAD_INITIALIZER(finished),
                         unstarted = STAILQ_HEAD_INITIALIZER(unstarted);
    if (!w)
        return;
    if (w->worker)
        host_worker_free(w->worker, &finished, &unstarted);
    answer_all(w, &finished, 1);  /* the finished jobs, with their answers */
    answer_all(w, &unstarted, 0); /* the others, with none */
    if (w->answers)
        event_free(w->answers);
    free(w);
}

void *reg_pgw_submit(struct reg_pgw *w, reg_pgw_fn fn, json_t *in, reg_pgw_done done, void *arg)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j) {
        json_decref(in);
        return NULL;
    }
    *j = (struct job){.fn = fn, .in = in, .done = done, .arg = arg, .queued_ms = host_mono_ms()};
    host_worker_submit(w->worker, &j->hj);
    return j;
}

void reg_pgw_on_reconnect(struct reg_pgw *w, void (*fn)(void *arg), void *arg)
{
    w->on_reconnect = fn;
    w->arg = arg;
}

void reg_pgw_cancel(void *job)
{
    if (job)
        ((struct job *)job)->cancelled = 1;
}
