/* reg_pg_worker.c - the daemon's PostgreSQL thread (see reg_pg.h). The
 * same shape as caller identification's worker (proxy/identify.c): jobs
 * go in through a queue under a mutex; finished jobs go on a second queue
 * and one byte on a pipe wakes the loop, which runs their callbacks. The
 * loop never takes the lock for longer than a list operation, and libevent
 * is touched from the loop only (no evthread locking needed). */
#include "reg_pg.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>
#include <unistd.h>

struct job {
    reg_pgw_fn fn;
    json_t *in, *answer;
    reg_pgw_done done;
    void *arg;
    long long queued_ms;
    int cancelled;                     /* set and read on the loop only */
    char error[REG_PG_URI_MAX + 1024]; /* the store's failure after the job, "" none */
    STAILQ_ENTRY(job) link;
};

STAILQ_HEAD(job_list, job);

struct reg_pgw {
    struct reg_mirror *m;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct job_list queue, finished; /* both under lock */
    int stopping;
    int pipe_fd[2]; /* a byte: finished jobs wait */
    struct event *answers;
};

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void job_free(struct job *j)
{
    json_decref(j->in);
    json_decref(j->answer);
    free(j);
}

static void *worker(void *arg)
{
    struct reg_pgw *w = arg;
    reg_pg_set_query_timeout(REG_PG_QUERY_TIMEOUT_MS);
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->stopping && STAILQ_EMPTY(&w->queue))
            pthread_cond_wait(&w->wake, &w->lock);
        if (w->stopping)
            break;
        struct job *j = STAILQ_FIRST(&w->queue);
        STAILQ_REMOVE_HEAD(&w->queue, link);
        pthread_mutex_unlock(&w->lock);
        reg_mirror_job_begin(w->m, j->queued_ms);
        j->answer = j->fn(w->m, j->in);
        reg_mirror_job_end(w->m, j->error, sizeof j->error);
        pthread_mutex_lock(&w->lock);
        STAILQ_INSERT_TAIL(&w->finished, j, link);
        /* A full pipe already holds a wake-up: EAGAIN loses nothing. */
        while (write(w->pipe_fd[1], "", 1) < 0 && errno == EINTR)
            ;
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* On the loop: run the callbacks of the finished jobs, in order. */
static void answers_cb(evutil_socket_t fd, short what, void *arg)
{
    struct reg_pgw *w = arg;
    struct job_list done = STAILQ_HEAD_INITIALIZER(done);
    char buf[64];
    (void)what;
    while (read(fd, buf, sizeof buf) > 0)
        ;
    pthread_mutex_lock(&w->lock);
    STAILQ_CONCAT(&done, &w->finished);
    pthread_mutex_unlock(&w->lock);
    while (!STAILQ_EMPTY(&done)) {
        struct job *j = STAILQ_FIRST(&done);
        STAILQ_REMOVE_HEAD(&done, link);
        reg_mirror_show(w->m, j->error);
        if (!j->cancelled && j->done) {
            j->done(j->arg, j->answer);
            j->answer = NULL;
        }
        job_free(j);
    }
}

struct reg_pgw *reg_pgw_new(struct event_base *base, struct reg_mirror *m, char *err,
                            size_t errlen)
{
    struct reg_pgw *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    w->m = m;
    w->pipe_fd[0] = w->pipe_fd[1] = -1;
    STAILQ_INIT(&w->queue);
    STAILQ_INIT(&w->finished);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    if (pipe2(w->pipe_fd, O_CLOEXEC | O_NONBLOCK) < 0 ||
        !(w->answers = event_new(base, w->pipe_fd[0], EV_READ | EV_PERSIST, answers_cb, w)) ||
        event_add(w->answers, NULL) < 0 || pthread_create(&w->thread, NULL, worker, w) != 0) {
        snprintf(err, errlen, "cannot start the PostgreSQL thread: %s", strerror(errno));
        if (w->answers)
            event_free(w->answers);
        for (int i = 0; i < 2; i++)
            if (w->pipe_fd[i] >= 0)
                close(w->pipe_fd[i]);
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->wake);
        free(w);
        return NULL;
    }
    return w;
}

void reg_pgw_free(struct reg_pgw *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stopping = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    answers_cb(w->pipe_fd[0], EV_READ, w); /* the finished jobs, with their answers */
    while (!STAILQ_EMPTY(&w->queue)) {     /* the others, with none */
        struct job *j = STAILQ_FIRST(&w->queue);
        STAILQ_REMOVE_HEAD(&w->queue, link);
        if (!j->cancelled && j->done)
            j->done(j->arg, NULL);
        job_free(j);
    }
    event_free(w->answers);
    close(w->pipe_fd[0]);
    close(w->pipe_fd[1]);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->wake);
    free(w);
}

void *reg_pgw_submit(struct reg_pgw *w, reg_pgw_fn fn, json_t *in, reg_pgw_done done,
                     void *arg)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j) {
        json_decref(in);
        return NULL;
    }
    *j = (struct job){.fn = fn, .in = in, .done = done, .arg = arg, .queued_ms = mono_ms()};
    pthread_mutex_lock(&w->lock);
    STAILQ_INSERT_TAIL(&w->queue, j, link);
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    return j;
}

void reg_pgw_cancel(void *job)
{
    if (job)
        ((struct job *)job)->cancelled = 1;
}
