/* worker.c - a thread that runs jobs off the event loop (host.h).
 *
 * The daemon has three (identification, fingerprints, PostgreSQL) and
 * they share this shape: jobs go in through a queue under a mutex; a
 * finished job goes on a second queue and one byte on a pipe wakes the
 * loop, which takes it from there. The lock is held only to move a
 * pointer, so the loop never waits for the thread. The pipe's write end
 * is non-blocking: a full pipe already holds a wake-up, so EAGAIN loses
 * nothing, and the finished queue, not the pipe, holds the jobs. This file
 * knows no event loop: the caller watches host_worker_fd with its own. */
#include "host.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct host_worker {
    host_job_fn run;
    host_batch_fn batch; /* instead of run: every queued job at once */
    void *ctx;
    int nice; /* added to the thread's priority: its work yields to the loop's */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct host_job_list queue, finished; /* both under lock */
    int stopping;
    int pipe_fd[2];
};

/* Lower the calling thread's priority by n (Linux: a thread has its own).
 * A failure only costs latency. */
static void lower_priority(int n)
{
    errno = 0;
    int prio = getpriority(PRIO_PROCESS, (id_t)gettid());
    if (n && errno == 0)
        (void)setpriority(PRIO_PROCESS, (id_t)gettid(), prio + n);
}

static void *thread_main(void *arg)
{
    struct host_worker *w = arg;
    lower_priority(w->nice);
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->stopping && STAILQ_EMPTY(&w->queue))
            pthread_cond_wait(&w->wake, &w->lock);
        if (w->stopping)
            break;
        struct host_job_list jobs = STAILQ_HEAD_INITIALIZER(jobs);
        if (w->batch) {
            STAILQ_CONCAT(&jobs, &w->queue);
        } else {
            struct host_job *j = STAILQ_FIRST(&w->queue);
            STAILQ_REMOVE_HEAD(&w->queue, link);
            STAILQ_INSERT_TAIL(&jobs, j, link);
        }
        pthread_mutex_unlock(&w->lock);
        if (w->batch)
            w->batch(&jobs, w->ctx);
        else
            w->run(STAILQ_FIRST(&jobs), w->ctx);
        pthread_mutex_lock(&w->lock);
        STAILQ_CONCAT(&w->finished, &jobs);
        while (write(w->pipe_fd[1], "", 1) < 0 && errno == EINTR)
            ;
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static struct host_worker *worker_start(host_job_fn run, host_batch_fn batch, void *ctx, int nice,
                                        char *err, size_t errlen)
{
    struct host_worker *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *w = (struct host_worker){
        .run = run, .batch = batch, .ctx = ctx, .nice = nice, .pipe_fd = {-1, -1}};
    STAILQ_INIT(&w->queue);
    STAILQ_INIT(&w->finished);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    int rc = pipe2(w->pipe_fd, O_CLOEXEC | O_NONBLOCK) < 0 ? errno : 0;
    if (!rc)
        rc = pthread_create(&w->thread, NULL, thread_main, w);
    if (rc) {
        snprintf(err, errlen, "%s", strerror(rc));
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

struct host_worker *host_worker_new(host_job_fn run, void *ctx, int nice, char *err, size_t errlen)
{
    return worker_start(run, NULL, ctx, nice, err, errlen);
}

struct host_worker *host_worker_new_batch(host_batch_fn batch, void *ctx, int nice, char *err,
                                          size_t errlen)
{
    return worker_start(NULL, batch, ctx, nice, err, errlen);
}

int host_worker_fd(const struct host_worker *w)
{
    return w->pipe_fd[0];
}

void host_worker_submit(struct host_worker *w, struct host_job *j)
{
    pthread_mutex_lock(&w->lock);
    STAILQ_INSERT_TAIL(&w->queue, j, link);
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

void host_worker_finished(struct host_worker *w, struct host_job_list *out)
{
    char buf[64];
    while (read(w->pipe_fd[0], buf, sizeof buf) > 0)
        ;
    pthread_mutex_lock(&w->lock);
    STAILQ_CONCAT(out, &w->finished);
    pthread_mutex_unlock(&w->lock);
}

void host_worker_free(struct host_worker *w, struct host_job_list *finished,
                      struct host_job_list *unstarted)
{
    pthread_mutex_lock(&w->lock);
    w->stopping = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    STAILQ_CONCAT(finished, &w->finished);
    STAILQ_CONCAT(unstarted, &w->queue);
    close(w->pipe_fd[0]);
    close(w->pipe_fd[1]);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->wake);
    free(w);
}
