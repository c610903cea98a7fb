/* identify.c - see identify.h. */
#include "identify.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>

#include "registry.h"

/* Processes that held a caller's socket lately: scanned first, most recent
 * first, since a browser or test runner opens many connections in a row. */
#define RECENT_MAX 32

struct recent {
    pid_t pid;
    unsigned long long start;
    int placed;
    struct caller_place place; /* valid while (pid, start) holds */
};

struct job {
    struct identify *id;
    unsigned long inode;
    uid_t uid;
    pid_t pid; /* the worker's answer */
    int cancelled;
    identify_cb cb;
    void *arg;
    STAILQ_ENTRY(job) link;
};

struct identify {
    struct caller_diag *diag;
    caller_known_fn known;
    void *known_arg;
    struct recent recent[RECENT_MAX];
    int nrecent;
    /* The worker: jobs in through the queue, answers back through a pipe
     * the loop watches (no libevent locking on the hot path). */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    STAILQ_HEAD(, job) queue;
    int stopping;
    int pipe_fd[2];
    struct event *answers;
};

static void *worker(void *arg)
{
    struct identify *id = arg;
    pthread_mutex_lock(&id->lock);
    for (;;) {
        while (!id->stopping && STAILQ_EMPTY(&id->queue))
            pthread_cond_wait(&id->wake, &id->lock);
        if (id->stopping)
            break;
        struct job *j = STAILQ_FIRST(&id->queue);
        STAILQ_REMOVE_HEAD(&id->queue, link);
        pthread_mutex_unlock(&id->lock);
        j->pid = caller_scan_all(j->inode, j->uid);
        while (write(id->pipe_fd[1], &j, sizeof j) < 0 && errno == EINTR)
            ;
        pthread_mutex_lock(&id->lock);
    }
    pthread_mutex_unlock(&id->lock);
    return NULL;
}

/* Remember pid at the front of the recent list, with its placing. */
static void remember(struct identify *id, pid_t pid, int placed, const struct caller_place *p)
{
    int i;
    for (i = 0; i < id->nrecent && id->recent[i].pid != pid; i++)
        ;
    if (i == id->nrecent)
        i = id->nrecent < RECENT_MAX ? id->nrecent++ : RECENT_MAX - 1;
    memmove(&id->recent[1], &id->recent[0], (size_t)i * sizeof id->recent[0]);
    id->recent[0] = (struct recent){pid, reg_pid_start(pid), placed, *p};
}

/* Place pid (cached while its start time holds) into r. */
static void place_pid(struct identify *id, pid_t pid, struct identify_result *r)
{
    for (int i = 0; i < id->nrecent; i++) {
        struct recent *e = &id->recent[i];
        if (e->pid == pid && e->placed && e->start == reg_pid_start(pid)) {
            r->placed = 1;
            r->place = e->place;
            return;
        }
    }
    r->placed = caller_place(pid, r->uid, id->known, id->known_arg, &r->place) == 0;
    remember(id, pid, r->placed, &r->place);
}

static void answers_cb(evutil_socket_t fd, short what, void *arg)
{
    struct job *j;
    (void)what;
    (void)arg;
    while (read(fd, &j, sizeof j) == (ssize_t)sizeof j) {
        struct identify_result r = {.uid = j->uid};
        if (!j->cancelled) {
            if (j->pid > 0)
                place_pid(j->id, j->pid, &r);
            j->cb(j->arg, &r);
        }
        free(j);
    }
}

struct identify *identify_new(struct event_base *base, caller_known_fn known, void *known_arg,
                              char *err, size_t errlen)
{
    struct identify *id = calloc(1, sizeof *id);
    err[0] = '\0';
    if (!id) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    id->known = known;
    id->known_arg = known_arg;
    id->pipe_fd[0] = id->pipe_fd[1] = -1;
    STAILQ_INIT(&id->queue);
    pthread_mutex_init(&id->lock, NULL);
    pthread_cond_init(&id->wake, NULL);
    if (!(id->diag = caller_diag_open(err, errlen)) ||
        pipe2(id->pipe_fd, O_CLOEXEC | O_NONBLOCK) < 0 ||
        !(id->answers = event_new(base, id->pipe_fd[0], EV_READ | EV_PERSIST, answers_cb, id)) ||
        event_add(id->answers, NULL) < 0 || pthread_create(&id->thread, NULL, worker, id) != 0) {
        if (!err[0])
            snprintf(err, errlen, "cannot start the identification worker: %s", strerror(errno));
        if (id->answers)
            event_free(id->answers);
        caller_diag_close(id->diag);
        for (int i = 0; i < 2; i++)
            if (id->pipe_fd[i] >= 0)
                close(id->pipe_fd[i]);
        free(id);
        return NULL;
    }
    return id;
}

void identify_free(struct identify *id)
{
    if (!id)
        return;
    pthread_mutex_lock(&id->lock);
    id->stopping = 1;
    pthread_cond_signal(&id->wake);
    pthread_mutex_unlock(&id->lock);
    pthread_join(id->thread, NULL);
    while (!STAILQ_EMPTY(&id->queue)) {
        struct job *j = STAILQ_FIRST(&id->queue);
        STAILQ_REMOVE_HEAD(&id->queue, link);
        free(j);
    }
    struct job *j;
    while (read(id->pipe_fd[0], &j, sizeof j) == (ssize_t)sizeof j)
        free(j);
    event_free(id->answers);
    close(id->pipe_fd[0]);
    close(id->pipe_fd[1]);
    caller_diag_close(id->diag);
    free(id);
}

int identify_start(struct identify *id, int fd, identify_cb cb, void *arg,
                   struct identify_result *r, void **ticket)
{
    struct sockaddr_storage local, peer;
    socklen_t llen = sizeof local, plen = sizeof peer;
    unsigned long inode;
    memset(r, 0, sizeof *r);
    r->uid = (uid_t)-1;
    *ticket = NULL;
    if (getsockname(fd, (struct sockaddr *)&local, &llen) < 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &plen) < 0 ||
        caller_socket(id->diag, (struct sockaddr *)&peer, (struct sockaddr *)&local, &inode,
                      &r->uid) < 0)
        return -1;
    for (int i = 0; i < id->nrecent; i++)
        if (caller_pid_has_socket(id->recent[i].pid, inode)) {
            place_pid(id, id->recent[i].pid, r);
            return 1;
        }
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return -1;
    *j = (struct job){.id = id, .inode = inode, .uid = r->uid, .cb = cb, .arg = arg};
    pthread_mutex_lock(&id->lock);
    STAILQ_INSERT_TAIL(&id->queue, j, link);
    pthread_cond_signal(&id->wake);
    pthread_mutex_unlock(&id->lock);
    *ticket = j;
    return 0;
}

void identify_cancel(void *ticket)
{
    if (ticket)
        ((struct job *)ticket)->cancelled = 1;
}
