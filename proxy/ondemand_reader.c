/* ondemand_reader.c - see ondemand_reader.h. One worker thread; each job
 * reads one worktree's file for whoever asked while it was queued: a
 * caller that connected, requests waiting for it, the cache. */
#include "ondemand_reader.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"
#include "ondemand_cache.h"
#include "wtfile.h"

#define READER_CONNECT_MAX                                                                         \
    16                   /* connect-time reads at once; more connections wait for their            \
                          * request */
#define READ_UNCHANGED 2 /* a look found the file's key as the cache has it */

struct read_job;

/* A request waiting for the job's file, or an op waiting for the file
 * itself (file_cb, until expire fires); both NULL once cancelled or
 * expired. */
struct waiter {
    ondemand_ensured_cb cb;
    ondemand_file_cb file_cb;
    void *arg;
    int front;
    struct event *expire;
    struct read_job *job; /* outlives the waiter: answer() frees waiters first */
    struct waiter *next;
};

struct read_job {
    struct host_job hj; /* first: the worker hands it back as this */
    atomic_int begun;   /* the worker took it: a later caller needs a read of its own */
    int look;           /* for the cache only: skip the read when the key is still known */
    int resolve;        /* worktree is as an op was given it: the worker finds real */
    struct wtfile_key known;
    int front; /* a connected caller's front (ondemand_file_read); 0 none */
    struct waiter *waiters;
    struct read_job *next;   /* the reader's jobs in flight (loop only) */
    int rc;                  /* wtfile_read's, or READ_UNCHANGED */
    int gone;                /* no file, for the worktree was removed: its requests hear so */
    char worktree[PATH_MAX]; /* as asked; never written once queued */
    char real[PATH_MAX];     /* its real path: worktree unless resolve (the worker's) */
    char err[1024];
    struct wtfile f;
};

struct ondemand_reader {
    struct ondemand *a;
    struct event_base *base;
    struct host_worker *worker;
    struct event *done;
    struct read_job *jobs; /* in flight */
    struct ondemand_cache *cache;
};

#define BRING_HERE "Bring it here: "
#define OR_MERGE " (or merge the branch that added it)"

int ondemand_note_fix(const char *note, char *fix, size_t len)
{
    const char *from = strstr(note, BRING_HERE), *to = from ? strstr(from, OR_MERGE) : NULL;
    if (!to)
        return 0;
    from += strlen(BRING_HERE);
    snprintf(fix, len,
             "%.*s (the daemon then starts the server it declares at the next request)" OR_MERGE,
             (int)(to - from), from);
    return 1;
}

/* On the worker thread: a worktree without a .wtproxy in a repository
 * whose main checkout has one. Its callers are placed (route_known_repo),
 * yet it starts nothing: the daemon reads each worktree's own file, and
 * this branch lacks it (it predates the commit that added it, or the file
 * is not committed). The request's 503 says so, with the fix. */
static void note_main_file(const char *real, char *note, size_t len)
{
    struct host_worktree w;
    char main[PATH_MAX], path[PATH_MAX + 16], text[4 * PATH_MAX];
    size_t n;
    if (host_worktree_of(real, &w, NULL, 0) < 0 || (n = strlen(w.common)) < 5 ||
        strcmp(w.common + n - 5, "/.git") != 0)
        return;
    snprintf(main, sizeof main, "%.*s", (int)(n - 5), w.common);
    snprintf(path, sizeof path, "%s/.wtproxy", main);
    if (strcmp(main, real) == 0 || access(path, F_OK) < 0)
        return;
    snprintf(text, sizeof text,
             "%.500s (branch %s) has no .wtproxy, and the daemon starts a worktree's "
             "servers only from its own: %.500s is in the main checkout only. " BRING_HERE
             "cp %.500s %.500s/" OR_MERGE ".",
             real, w.branch[0] ? w.branch : "?", path, path, real);
    size_t cut = strnlen(text, len - 1); /* a long path is cut; the 503 says the rest */
    memcpy(note, text, cut);
    note[cut] = '\0';
}

/* On the worker thread. */
static void read_one(struct host_job *hj, void *ctx)
{
    struct read_job *j = (struct read_job *)hj;
    struct wtfile_key now;
    (void)ctx;
    atomic_store(&j->begun, 1);
    if (j->resolve && !realpath(j->worktree, j->real)) {
        snprintf(j->real, sizeof j->real, "%s", j->worktree);
        /* A path too long for err is cut: the message still says what failed. */
        snprintf(j->err, sizeof j->err,
                 "the folder %.900s does not exist: check the worktree "
                 "path asked for",
                 j->worktree);
        j->rc = ONDEMAND_NO_FOLDER;
        return;
    }
    if (j->look) {
        wtfile_key(j->real, &now);
        if (wtfile_key_same(&now, &j->known)) {
            j->rc = READ_UNCHANGED;
            return;
        }
    }
    j->rc = wtfile_read(j->real, &j->f, j->err, sizeof j->err);
    /* A caller placed there before, on a connection it keeps, or one
     * naming it: "start yours from its worktree" would send it to a
     * folder that is gone. */
    j->gone = j->rc == 1 && !j->look && host_worktree_removed(j->real);
    if (j->rc == 1 && !j->look && !j->gone)
        note_main_file(j->real, j->err, sizeof j->err);
}

/* A job for worktree (resolved or not, as resolve) not yet begun that a
 * caller may join; NULL none. */
static struct read_job *joinable(struct ondemand_reader *r, const char *worktree, int resolve)
{
    for (struct read_job *j = r->jobs; j; j = j->next)
        if (!j->look && j->resolve == resolve && !atomic_load(&j->begun) &&
            strcmp(j->worktree, worktree) == 0)
            return j;
    return NULL;
}

/* Queue a read of worktree's file, worktree resolved first when resolve;
 * with known, only a look: read when its key is not known's. */
static struct read_job *submit(struct ondemand_reader *r, const char *worktree,
                               const struct wtfile_key *known, int resolve)
{
    struct read_job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    snprintf(j->worktree, sizeof j->worktree, "%s", worktree);
    if (!(j->resolve = resolve))
        snprintf(j->real, sizeof j->real, "%s", worktree);
    if (known) {
        j->look = 1;
        j->known = *known;
    }
    j->next = r->jobs;
    r->jobs = j;
    host_worker_submit(r->worker, &j->hj);
    return j;
}

static void unlink_job(struct ondemand_reader *r, struct read_job *j)
{
    for (struct read_job **p = &r->jobs; *p; p = &(*p)->next)
        if (*p == j) {
            *p = j->next;
            return;
        }
}

static void waiter_free(struct waiter *w)
{
    if (w->expire)
        event_free(w->expire);
    free(w);
}

/* On the loop: j's file to the cache, the connected caller and the
 * waiting requests. A bad file is left for the request, which says what
 * is wrong with it. */
static void answer(struct ondemand_reader *r, struct read_job *j)
{
    unsigned long long now = ondemand_now_ms(r->a);
    struct ondemand_cached *e = ondemand_cache_get(r->cache, j->real);
    if (j->rc == READ_UNCHANGED && e)
        e->checked_ms = now;
    else if (j->rc != READ_UNCHANGED && j->rc != ONDEMAND_NO_FOLDER)
        ondemand_cache_put(r->cache, j->real, j->rc, &j->f, j->err, now);
    if (j->front && j->rc == 0)
        ondemand_file_read(r->a, j->real, j->front, &j->f);
    while (j->waiters) {
        struct waiter *w = j->waiters;
        j->waiters = w->next;
        if (w->file_cb)
            w->file_cb(w->arg, j->real, j->rc, &j->f, j->err);
        else if (w->cb && j->gone)
            w->cb(w->arg, ONDEMAND_GONE, "");
        else if (w->cb)
            ondemand_file_answer(r->a, j->real, w->front, j->rc, &j->f, j->err, w->cb, w->arg);
        waiter_free(w);
    }
}

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
        unlink_job(r, j);
        answer(r, j);
        free(j);
    }
}

void ondemand_reader_submit(struct ondemand_reader *r, const char *worktree, int front)
{
    int n = 0;
    for (struct read_job *j = r->jobs; j; j = j->next)
        n += j->front != 0;
    struct read_job *j = joinable(r, worktree, 0);
    if (j && (!j->front || j->front == front)) {
        j->front = front;
        return;
    }
    if (n < READER_CONNECT_MAX && (j = submit(r, worktree, NULL, 0)))
        j->front = front;
}

/* A waiter on a read of worktree begun after now (resolved first when
 * resolve); NULL out of memory. */
static struct waiter *wait_read(struct ondemand_reader *r, const char *worktree, int resolve)
{
    struct waiter *w = calloc(1, sizeof *w);
    struct read_job *j = w ? joinable(r, worktree, resolve) : NULL;
    if (w && !j)
        j = submit(r, worktree, NULL, resolve);
    if (!j) {
        free(w);
        return NULL;
    }
    w->job = j;
    w->next = j->waiters;
    j->waiters = w;
    return w;
}

void *ondemand_reader_read(struct ondemand_reader *r, const char *worktree, int front,
                           ondemand_ensured_cb cb, void *arg)
{
    struct waiter *w = wait_read(r, worktree, 0);
    if (w) {
        w->cb = cb;
        w->arg = arg;
        w->front = front;
    }
    return w;
}

/* The waiter stays in its job, unanswered, until the job ends and frees it. */
void ondemand_reader_cancel(void *ticket)
{
    struct waiter *w = ticket;
    if (w) {
        w->cb = NULL;
        w->file_cb = NULL;
        if (w->expire)
            event_del(w->expire);
    }
}

/* An op's read outlived its time: the op is told so now. The worker may
 * stay blocked in the read for long (a hung NFS): its job still ends in
 * answer(), which then only refreshes the cache. */
static void expired(evutil_socket_t fd, short what, void *arg)
{
    struct waiter *w = arg;
    ondemand_file_cb cb = w->file_cb;
    (void)fd;
    (void)what;
    ondemand_reader_cancel(w);
    cb(w->arg, w->job->worktree, ONDEMAND_TIMED_OUT, NULL, "");
}

void *ondemand_reader_file(struct ondemand_reader *r, const char *worktree, unsigned timeout_ms,
                           ondemand_file_cb cb, void *arg)
{
    struct waiter *w = wait_read(r, worktree, 1);
    if (!w)
        return NULL;
    w->file_cb = cb;
    w->arg = arg;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    if (!(w->expire = evtimer_new(r->base, expired, w)) || evtimer_add(w->expire, &tv) < 0) {
        ondemand_reader_cancel(w); /* the job frees it */
        return NULL;
    }
    return w;
}

const struct ondemand_cached *
ondemand_reader_cached(struct ondemand_reader *r, const char *worktree, unsigned long long now_ms)
{
    struct ondemand_cached *e = ondemand_cache_get(r->cache, worktree);
    if (e && now_ms - e->checked_ms < ONDEMAND_CACHE_FRESH_MS)
        return e;
    for (struct read_job *j = r->jobs; j; j = j->next)
        if (strcmp(j->worktree, worktree) == 0)
            return e; /* its answer refreshes the cache */
    submit(r, worktree, e ? &e->f.key : NULL, 0);
    return e;
}

struct ondemand_reader *ondemand_reader_new(struct ondemand *a, struct event_base *base, char *err,
                                            size_t errlen)
{
    struct ondemand_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->cache = ondemand_cache_new())) {
        snprintf(err, errlen, "out of memory");
        ondemand_reader_free(r);
        return NULL;
    }
    r->a = a;
    r->base = base;
    r->worker = host_worker_new(read_one, r, 0, err, errlen);
    r->done = r->worker
                  ? event_new(base, host_worker_fd(r->worker), EV_READ | EV_PERSIST, finished, r)
                  : NULL;
    if (!r->done || event_add(r->done, NULL) < 0) {
        if (r->worker)
            snprintf(err, errlen, "cannot watch the .wtproxy reader's thread");
        ondemand_reader_free(r);
        return NULL;
    }
    return r;
}

/* The daemon stops: an op waiting for a file is answered so (its peer is
 * still there: the control socket closes after the reader). */
static void free_jobs(struct host_job_list *l)
{
    while (!STAILQ_EMPTY(l)) {
        struct read_job *j = (struct read_job *)STAILQ_FIRST(l);
        STAILQ_REMOVE_HEAD(l, link);
        while (j->waiters) {
            struct waiter *w = j->waiters;
            j->waiters = w->next;
            if (w->file_cb)
                w->file_cb(w->arg, j->worktree, -1, NULL,
                           "the daemon is stopping, so nothing was done: run the command "
                           "again once it is back (wtproxy doctor says whether it is)");
            waiter_free(w);
        }
        free(j);
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
    ondemand_cache_free(r->cache);
    free(r);
}
