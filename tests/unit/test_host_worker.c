/* test_host_worker.c - host/worker.c, the thread under every worker of the
 * daemon (identification, fingerprints, PostgreSQL): jobs run off the
 * submitting thread, one at a time, in submission order; the fd becomes
 * readable when jobs finish and host_worker_finished hands them back in
 * order without blocking; a job running at shutdown is waited for and
 * handed back as finished, the queued ones as unstarted. */
#include "../../host/worker.c"

#include <poll.h>
#include <stdatomic.h>

#include "tap.h"

struct job {
    struct host_job hj;
    int n;
    int block; /* wait until release is set */
    pthread_t ran_on;
};

static atomic_int release, running;
static int order[16], norder;

static void run(struct host_job *hj, void *ctx)
{
    struct job *j = (struct job *)hj;
    (void)ctx;
    j->ran_on = pthread_self();
    atomic_fetch_add(&running, 1);
    while (j->block && !atomic_load(&release))
        usleep(1000);
    order[norder++] = j->n; /* the worker's alone: jobs run one at a time */
    atomic_fetch_sub(&running, 1);
}

/* Wait up to ms for fd to be readable. */
static int readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

static int take_all(struct host_worker *w, int *got, int max)
{
    struct host_job_list done = STAILQ_HEAD_INITIALIZER(done);
    int n = 0;
    host_worker_finished(w, &done);
    while (!STAILQ_EMPTY(&done)) {
        struct host_job *hj = STAILQ_FIRST(&done);
        STAILQ_REMOVE_HEAD(&done, link);
        if (n < max)
            got[n] = ((struct job *)hj)->n;
        n++;
    }
    return n;
}

static void test_order(void)
{
    char err[256];
    struct job jobs[5];
    int got[8], n = 0;
    struct host_worker *w = host_worker_new(run, NULL, 0, err, sizeof err);
    ok(w != NULL, "a worker starts (%s)", w ? "" : err);
    if (!w)
        return;
    ok(!readable(host_worker_fd(w), 0), "its fd is not readable before any job finished");
    for (int i = 0; i < 5; i++) {
        jobs[i] = (struct job){.n = i + 1};
        host_worker_submit(w, &jobs[i].hj);
    }
    for (int tries = 0; n < 5 && tries < 200; tries++)
        if (readable(host_worker_fd(w), 50))
            n += take_all(w, got + n, 8 - n);
    is_int(n, 5, "every job comes back");
    ok(got[0] == 1 && got[1] == 2 && got[2] == 3 && got[3] == 4 && got[4] == 5,
       "in submission order");
    ok(!pthread_equal(jobs[0].ran_on, pthread_self()), "run off the submitting thread");
    is_int(take_all(w, got, 8), 0, "taking again finds nothing and does not block");
    struct host_job_list fin = STAILQ_HEAD_INITIALIZER(fin),
                         queued = STAILQ_HEAD_INITIALIZER(queued);
    host_worker_free(w, &fin, &queued);
    ok(STAILQ_EMPTY(&fin) && STAILQ_EMPTY(&queued), "an idle worker stops with nothing left");
}

/* Lets the blocked job end once free has marked the worker stopping
 * (free then waits for the job): the queued jobs must not start. */
static void *release_when_stopping(void *arg)
{
    struct host_worker *w = arg;
    for (int stopping = 0; !stopping; usleep(1000)) {
        pthread_mutex_lock(&w->lock);
        stopping = w->stopping;
        pthread_mutex_unlock(&w->lock);
    }
    atomic_store(&release, 1);
    return NULL;
}

static void test_shutdown(void)
{
    char err[256];
    struct job jobs[3] = {{.n = 10, .block = 1}, {.n = 11}, {.n = 12}};
    struct host_worker *w = host_worker_new(run, NULL, 5, err, sizeof err);
    if (!ok(w != NULL, "a niced worker starts (%s)", w ? "" : err))
        return;
    norder = 0;
    atomic_store(&release, 0);
    for (int i = 0; i < 3; i++)
        host_worker_submit(w, &jobs[i].hj);
    while (!atomic_load(&running))
        usleep(1000);
    struct host_job_list fin = STAILQ_HEAD_INITIALIZER(fin),
                         queued = STAILQ_HEAD_INITIALIZER(queued);
    pthread_t t;
    pthread_create(&t, NULL, release_when_stopping, w);
    host_worker_free(w, &fin, &queued);
    pthread_join(t, NULL);
    ok(!STAILQ_EMPTY(&fin) && ((struct job *)STAILQ_FIRST(&fin))->n == 10 &&
           !STAILQ_NEXT(STAILQ_FIRST(&fin), link),
       "the job running at shutdown is waited for and handed back finished");
    int q = 0;
    struct host_job *hj;
    STAILQ_FOREACH(hj, &queued, link)
        q = q * 100 + ((struct job *)hj)->n;
    is_int(q, 1112, "the queued ones are handed back unstarted, in order");
    is_int(norder, 1, "and never ran");
}

int main(void)
{
    test_order();
    test_shutdown();
    return done_testing();
}
