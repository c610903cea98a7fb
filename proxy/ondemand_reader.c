/* ondemand_reader.c - see ondemand_reader.h. */
#include "ondemand_reader.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "wtfile.h"

#define READER_QUEUED_MAX 16 /* reads queued at once; more connections wait for their request */

struct read_job {
    struct host_job hj; /* first: the worker hands it back as this */
    unsigned long key;
    int front;
    int rc; /* wtfile_read's */
    char worktree[PATH_MAX];
    char err[1024];
    struct wtfile f;
};

struct ondemand_reader {
    struct ondemand *a;
    struct host_worker *worker;
    struct event *done;
    unsigned long queued[READER_QUEUED_MAX]; /* keys of the reads queued; 0 free */
};

/* (worktree, front) as one number, to see a read already queued. */
static unsigned long key_of(const char *worktree, int front)
{
    unsigned long h = 5381u + (unsigned long)front;
    for (const unsigned char *p = (const unsigned char *)worktree; *p; p++)
        h = h * 33u + *p;
    return h ? h : 1;
}

/* On the worker thread. */
static void read_one(struct host_job *hj, void *ctx)
{
    struct read_job *j = (struct read_job *)hj;
    (void)ctx;
    j->rc = wtfile_read(j->worktree, &j->f, j->err, sizeof j->err);
}

static void forget(struct ondemand_reader *r, unsigned long key)
{
    for (int i = 0; i < READER_QUEUED_MAX; i++)
        if (r->queued[i] == key) {
            r->queued[i] = 0;
            return;
        }
}

/* On the loop: the files read, each handed to ondemand.c. A bad file is
 * left for the request, which says what is wrong with it. */
static void finished(evutil_socket_t fd, short what, void *arg)
{
    struct ondemand_reader *r = arg;
    struct host_job_list done = STAILQ_HEAD_INITIALIZER(done);
    (void)fd;
    (void)what;
    host_worker_finished(r->worker, &done);
    while (!STAILQ_EMPTY(&done)) {
        struct read_job *j = (struct read_job *)STAILQ_FIRST(&done);
        STAILQ_REMOVE_HEAD(&done, link);
        forget(r, j->key);
        if (j->rc == 0)
            ondemand_file_read(r->a, j->worktree, j->front, &j->f);
        free(j);
    }
}

void ondemand_reader_submit(struct ondemand_reader *r, const char *worktree, int front)
{
    unsigned long key = key_of(worktree, front);
    int slot = -1;
    for (int i = 0; i < READER_QUEUED_MAX; i++) {
        if (r->queued[i] == key)
            return;
        if (!r->queued[i] && slot < 0)
            slot = i;
    }
    struct read_job *j = slot >= 0 ? malloc(sizeof *j) : NULL;
    if (!j)
        return;
    j->key = r->queued[slot] = key;
    j->front = front;
    snprintf(j->worktree, sizeof j->worktree, "%s", worktree);
    host_worker_submit(r->worker, &j->hj);
}

struct ondemand_reader *ondemand_reader_new(struct ondemand *a, struct event_base *base,
                                            char *err, size_t errlen)
{
    struct ondemand_reader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->a = a;
    r->worker = host_worker_new(read_one, r, 0, err, errlen);
    r->done = r->worker ? event_new(base, host_worker_fd(r->worker), EV_READ | EV_PERSIST,
                                    finished, r)
                        : NULL;
    if (!r->done || event_add(r->done, NULL) < 0) {
        if (r->worker)
            snprintf(err, errlen, "cannot watch the .wtproxy reader's thread");
        ondemand_reader_free(r);
        return NULL;
    }
    return r;
}

static void free_jobs(struct host_job_list *l)
{
    while (!STAILQ_EMPTY(l)) {
        struct host_job *hj = STAILQ_FIRST(l);
        STAILQ_REMOVE_HEAD(l, link);
        free(hj);
    }
}

void ondemand_reader_free(struct ondemand_reader *r)
{
    if (!r)
        return;
    if (r->done)
        event_free(r->done);
    if (r->worker) {
        struct host_job_list done = STAILQ_HEAD_INITIALIZER(done);
        struct host_job_list unstarted = STAILQ_HEAD_INITIALIZER(unstarted);
        host_worker_free(r->worker, &done, &unstarted);
        free_jobs(&done);
        free_jobs(&unstarted);
    }
    free(r);
}
