/* holders.c - the processes holding the socket a server answered from,
 * for the kill a refusal prints. A prefork server (gunicorn's master and
 * workers, morbo's manager and worker, uvicorn --workers) answers
 * /__whoami from a worker: killing that pid alone has the master fork
 * another, or leaves the manager holding the port with nobody answering.
 * What stops the server is every process holding its listening socket
 * (as `wtproxy doctor` names a port's holders), and finding them reads
 * every process's fd table: a thread of its own, since a refusal is
 * rare and must not wait behind a big tree's fingerprint. Found once per
 * listening socket and answering pid (gate_impl.h). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "gate_impl.h"

struct whoami_holders_job {
    struct whoami_server *s; /* NULL once it went (whoami_holders_drop) */
    unsigned long inode;
    pid_t answered;
    pid_t pid[HOST_PORT_HOLDERS_MAX]; /* the worker's */
    size_t n;
    struct host_job hj;
};

struct whoami_holders_worker {
    struct host_worker *worker;
    struct event *done_ev;
};

#define JOB_OF(job)                                                                                \
    ((struct whoami_holders_job *)((char *)(job)-offsetof(struct whoami_holders_job, hj)))

/* On the worker. */
static void run_job(struct host_job *hj, void *ctx)
{
    struct whoami_holders_job *j = JOB_OF(hj);
    (void)ctx;
    j->n = host_socket_pids(&j->inode, 1, j->pid, HOST_PORT_HOLDERS_MAX);
}

/* A job back on the loop: kept by its server, whose waiters decide again. */
static void found(struct whoami_holders_job *j)
{
    struct whoami_server *s = j->s;
    if (s) {
        s->holders_job = NULL;
        s->holders_of = j->inode;
        s->holders_for = j->answered;
        s->nholders = j->n;
        for (size_t i = 0; i < j->n; i++)
            s->holders[i] = j->pid[i];
    }
    free(j);
    if (s)
        whoami_gate_settle(s);
}

static void done_cb(evutil_socket_t fd, short what, void *arg)
{
    struct whoami_holders_worker *w = arg;
    struct host_job_list done = STAILQ_HEAD_INITIALIZER(done);
    (void)fd;
    (void)what;
    host_worker_finished(w->worker, &done);
    while (!STAILQ_EMPTY(&done)) {
        struct host_job *hj = STAILQ_FIRST(&done);
        STAILQ_REMOVE_HEAD(&done, link);
        found(JOB_OF(hj));
    }
}

struct whoami_holders_worker *whoami_holders_worker_new(struct whoami_gate *g)
{
    char why[256];
    struct whoami_holders_worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    if (!(w->worker = host_worker_new(run_job, NULL, 0, why, sizeof why)) ||
        !(w->done_ev =
              event_new(g->base, host_worker_fd(w->worker), EV_READ | EV_PERSIST, done_cb, w)) ||
        event_add(w->done_ev, NULL) < 0) {
        whoami_holders_worker_free(w);
        return NULL;
    }
    return w;
}

/* Jobs the worker will not hand back: their servers find none. */
static void drop_all(struct host_job_list *jobs)
{
    while (!STAILQ_EMPTY(jobs)) {
        struct whoami_holders_job *j = JOB_OF(STAILQ_FIRST(jobs));
        STAILQ_REMOVE_HEAD(jobs, link);
        if (j->s)
            j->s->holders_job = NULL;
        free(j);
    }
}

void whoami_holders_worker_free(struct whoami_holders_worker *w)
{
    struct host_job_list finished = STAILQ_HEAD_INITIALIZER(finished),
                         unstarted = STAILQ_HEAD_INITIALIZER(unstarted);
    if (!w)
        return;
    if (w->worker)
        host_worker_free(w->worker, &finished, &unstarted);
    drop_all(&finished);
    drop_all(&unstarted);
    if (w->done_ev)
        event_free(w->done_ev);
    free(w);
}

int whoami_holders_get(struct whoami_server *s, struct whoami_holders *out)
{
    pid_t answered = s->have_ans ? s->ans.pid : 0;
    out->pid = s->holders;
    out->n = 0;
    if (s->listener && s->holders_of == s->listener && s->holders_for == answered) {
        out->n = s->nholders;
        return 1;
    }
    if (!s->g->holders || !s->listener)
        return -1;
    if (s->holders_job) /* for another socket or pid: found, then asked again */
        return 0;
    struct whoami_holders_job *j = calloc(1, sizeof *j);
    if (!j)
        return -1;
    j->s = s;
    j->inode = s->listener;
    j->answered = answered;
    s->holders_job = j;
    host_worker_submit(s->g->holders->worker, &j->hj);
    return 0;
}

void whoami_holders_drop(struct whoami_server *s)
{
    if (s->holders_job)
        s->holders_job->s = NULL;
    s->holders_job = NULL;
}
