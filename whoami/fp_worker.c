/* fp_worker.c - see fp_worker.h. One thread: two cores are common on the
 * machines this runs on, and the identification worker (proxy/identify.c)
 * has the other. The loop never waits for it: the queue's lock is held
 * only to move a pointer. */
#include "fp_worker.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

/* How much nicer than the loop the worker runs: on a busy machine a
 * fingerprint may take longer, but the loop's requests come first. */
#define WORKER_NICE 10

struct whoami_fp_worker {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    STAILQ_HEAD(, whoami_fp_job) queue;
    int stopping;
    int pipe_fd[2]; /* finished jobs' pointers, read by the loop */
    struct event *done_ev;
    whoami_fp_done_cb done;
    void *arg;
};

static void *worker(void *arg)
{
    struct whoami_fp_worker *w = arg;
    /* Linux: a thread's own priority (a failure only costs latency). */
    errno = 0;
    int prio = getpriority(PRIO_PROCESS, (id_t)gettid());
    if (errno == 0 && setpriority(PRIO_PROCESS, (id_t)gettid(), prio + WORKER_NICE) < 0)
        errno = 0;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->stopping && STAILQ_EMPTY(&w->queue))
            pthread_cond_wait(&w->wake, &w->lock);
        if (w->stopping)
            break;
        struct whoami_fp_job *j = STAILQ_FIRST(&w->queue);
        STAILQ_REMOVE_HEAD(&w->queue, link);
        pthread_mutex_unlock(&w->lock);
        if (j->before)
            j->before(j);
        j->rc = whoami_fp_compute(j->root, j->patterns, j->prev, &j->out, j->err, sizeof j->err);
        j->finished = 1;
        /* A pointer is written whole (PIPE_BUF): the loop reads whole ones. */
        while (write(w->pipe_fd[1], &j, sizeof j) < 0 && errno == EINTR)
            ;
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static void done_cb(evutil_socket_t fd, short what, void *arg)
{
    struct whoami_fp_worker *w = arg;
    struct whoami_fp_job *j;
    (void)what;
    while (read(fd, &j, sizeof j) == (ssize_t)sizeof j)
        w->done(w->arg, j);
}

struct whoami_fp_worker *whoami_fp_worker_new(struct event_base *base, whoami_fp_done_cb done,
                                              void *arg)
{
    struct whoami_fp_worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->done = done;
    w->arg = arg;
    w->pipe_fd[0] = w->pipe_fd[1] = -1;
    STAILQ_INIT(&w->queue);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    /* The write end blocks: a full pipe makes the worker wait, never drop
     * a job (it holds at most one pointer per tree anyway). */
    if (pipe2(w->pipe_fd, O_CLOEXEC) < 0 || fcntl(w->pipe_fd[0], F_SETFL, O_NONBLOCK) < 0 ||
        !(w->done_ev = event_new(base, w->pipe_fd[0], EV_READ | EV_PERSIST, done_cb, w)) ||
        event_add(w->done_ev, NULL) < 0 || (errno = pthread_create(&w->thread, NULL, worker, w))) {
        int e = errno;
        if (w->done_ev)
            event_free(w->done_ev);
        for (int i = 0; i < 2; i++)
            if (w->pipe_fd[i] >= 0)
                close(w->pipe_fd[i]);
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->wake);
        free(w);
        errno = e;
        return NULL;
    }
    return w;
}

void whoami_fp_worker_submit(struct whoami_fp_worker *w, struct whoami_fp_job *j)
{
    j->finished = 0;
    pthread_mutex_lock(&w->lock);
    STAILQ_INSERT_TAIL(&w->queue, j, link);
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

void whoami_fp_worker_free(struct whoami_fp_worker *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stopping = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    event_free(w->done_ev);
    close(w->pipe_fd[0]);
    close(w->pipe_fd[1]);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->wake);
    free(w);
}
