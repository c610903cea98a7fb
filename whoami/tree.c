/* tree.c - see tree.h; the watches are watch.c's. Walking a big tree to
 * watch it is slow too: the first job of a tree sets its watches on the
 * worker, before its walk, and the loop reads its events only once that
 * job is back. So does the first job after the kernel's event queue
 * overflowed (whoami_tree_rewatch): the tree is dirty until then.
 *
 * Computations are numbered across trees in the order they start. A
 * question's ticket is the first number whose result it may use: one that
 * began after the question was asked (or the one under way, when no event
 * came since it began). A result is used only once no event came after
 * its computation began, or for a ticket it satisfies, so nothing written
 * before a question is missed, and a tree written to without pause still
 * answers each question with the first computation that began after it. */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "tree_impl.h"

static char **copy_strings(char **v, size_t n)
{
    char **c = calloc(n ? n : 1, sizeof *c);
    for (size_t i = 0; c && i < n; i++) {
        if (!(c[i] = strdup(v[i]))) {
            while (i--)
                free(c[i]);
            free(c);
            return NULL;
        }
    }
    return c;
}

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static void tree_free(struct tree *t)
{
    if (t->settle)
        event_free(t->settle);
    whoami_watch_drop(t);
    free(t->watch);
    free_strings(t->pat.include, t->pat.n_include);
    free_strings(t->pat.exclude, t->pat.n_exclude);
    whoami_fp_free(&t->fp);
    if (t->computing && t->job.finished && t->job.rc == 0)
        whoami_fp_free(&t->job.out);
    free(t);
}

static void settle_cb(evutil_socket_t fd, short what, void *arg);

static struct tree *tree_new(struct whoami_trees *ts, const char *root,
                             const struct whoami_patterns *p)
{
    struct tree *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ts = ts;
    t->ifd = -1;
    snprintf(t->root, sizeof t->root, "%s", root);
    t->pat.n_include = p->n_include;
    t->pat.n_exclude = p->n_exclude;
    if (!(t->pat.include = copy_strings(p->include, p->n_include)) ||
        !(t->pat.exclude = copy_strings(p->exclude, p->n_exclude)) ||
        !(t->settle = evtimer_new(ts->base, settle_cb, t))) {
        tree_free(t);
        return NULL;
    }
    whoami_watch_init(ts, t);
    return t;
}

/* On the loop: t, dropped and not with the worker, is freed, or first its
 * inotify instance closed by the worker (the close of one with watches
 * waits for the kernel's SRCU grace period: 10-40 ms, too long for the
 * loop), which hands t back to job_done. */
static void retire(struct whoami_trees *ts, struct tree *t)
{
    if (t->ifd >= 0) {
        t->computing = 1;
        memset(&t->job, 0, sizeof t->job);
        t->job.before = whoami_watch_close;
        t->job.owner = t;
        whoami_fp_worker_submit(ts->worker, &t->job);
        return;
    }
    struct tree **p = &ts->evicted;
    while (*p != t)
        p = &(*p)->next_evicted;
    *p = t->next_evicted;
    tree_free(t);
}

/* t goes (evicted, or its checkout served no more): its events are read
 * and its settle timer run no more from now on, and it is freed once the
 * worker is done with it (its job under way back, its watches closed). */
static void drop_tree(struct whoami_trees *ts, struct tree *t)
{
    t->evicted = 1;
    t->next_evicted = ts->evicted;
    ts->evicted = t;
    evtimer_del(t->settle);
    whoami_watch_unhook(t);
    if (!t->computing)
        retire(ts, t);
}

/* The tree for (root, p), made (evicting the least used) when missing. */
static struct tree *tree_find(struct whoami_trees *ts, const char *root,
                              const struct whoami_patterns *p, long long now_ms)
{
    size_t lru = 0;
    for (size_t i = 0; i < ts->n; i++) {
        struct tree *t = ts->tree[i];
        if (strcmp(t->root, root) == 0 && whoami_patterns_same(&t->pat, p)) {
            t->used_ms = now_ms;
            return t;
        }
        if (t->used_ms < ts->tree[lru]->used_ms)
            lru = i;
    }
    struct tree *t = tree_new(ts, root, p);
    if (!t)
        return NULL;
    if (ts->n == WHOAMI_MAX_TREES)
        drop_tree(ts, ts->tree[lru]);
    else
        lru = ts->n++;
    ts->tree[lru] = t;
    t->used_ms = now_ms;
    return t;
}

static long long loop_ms(struct whoami_trees *ts)
{
    struct timeval tv;
    event_base_gettimeofday_cached(ts->base, &tv);
    return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* Hand t to the worker: a computation numbered after every one before,
 * seeing every event read so far. */
static void start(struct whoami_trees *ts, struct tree *t)
{
    t->computing = 1;
    t->dirty = 0;
    t->run_num = ++ts->seq;
    t->run_ms = loop_ms(ts);
    memset(&t->job, 0, sizeof t->job);
    t->job.root = t->root;
    t->job.patterns = &t->pat;
    t->job.prev = t->have_fp ? &t->fp : NULL;
    t->job.before = t->setting_up ? whoami_watch_first : NULL;
    t->job.owner = t;
    whoami_fp_worker_submit(ts->worker, &t->job);
}

/* t's watches are set again by a computation (its before), so the walk is
 * the worker's, not the loop's; without inotify t scans. */
static void rewatch_now(struct whoami_trees *ts, struct tree *t)
{
    t->rewatch = 0;
    if (whoami_watch_init(ts, t) == 0)
        start(ts, t);
}

/* Keep a finished job's result as t's last. */
static void keep_result(struct tree *t)
{
    struct whoami_fp_job *j = &t->job;
    t->failed = j->rc < 0;
    snprintf(t->worktree, sizeof t->worktree, "%s", j->worktree);
    if (t->failed) {
        snprintf(t->err, sizeof t->err, "%s", j->err);
    } else {
        if (t->have_fp && strcmp(j->out.hash, t->fp.hash) != 0)
            t->changed_ms = t->run_ms; /* the change came before it began */
        whoami_fp_free(&t->fp);
        t->fp = j->out;
        t->have_fp = 1;
    }
    t->fp_num = t->run_num;
}

/* Tell a new hash once the tree is quiet: a result an event already
 * outdated is followed by another computation, which tells. The first
 * result is no change. */
static void tell_change(struct whoami_trees *ts, struct tree *t)
{
    if (t->failed || t->dirty || strcmp(t->told, t->fp.hash) == 0)
        return;
    int first = t->told[0] == '\0';
    snprintf(t->told, sizeof t->told, "%s", t->fp.hash);
    if (!first && ts->changed)
        ts->changed(ts->arg, t->root, &t->pat, t->fp.hash, t->changed_ms);
}

void whoami_tree_settle(struct tree *t)
{
    struct timeval tv = {0, WHOAMI_SETTLE_MS * 1000};
    if (!evtimer_pending(t->settle, NULL))
        evtimer_add(t->settle, &tv);
}

/* No question had t computed since its first unseen event: compute it
 * now. One under way: job_done finds t dirty and settles it again. */
static void settle_cb(evutil_socket_t fd, short what, void *arg)
{
    struct tree *t = arg;
    (void)fd;
    (void)what;
    if (t->dirty && !t->computing && !t->evicted && t->ifd >= 0)
        start(t->ts, t);
}

/* On the loop: a job is back. Events that came meanwhile are read; a
 * question still waiting for a later computation gets it started. */
static void job_done(void *arg, struct whoami_fp_job *j)
{
    struct whoami_trees *ts = arg;
    struct tree *t = j->owner;
    t->computing = 0;
    if (t->evicted) {
        int computed = j->root != NULL; /* else its watches were closed */
        if (j->rc == 0)
            whoami_fp_free(&j->out);
        retire(ts, t);
        if (computed)
            ts->ready(ts->arg); /* its questions ask again, of a new tree */
        return;
    }
    if (t->setting_up)
        whoami_watch_set(ts, t);
    keep_result(t);
    whoami_watch_drain(ts, t); /* an overflow read here starts the re-walk */
    tell_change(ts, t);
    if (t->rewatch && !t->computing)
        rewatch_now(ts, t);
    if (t->wanted > t->fp_num && !t->computing)
        start(ts, t);
    ts->ready(ts->arg);
}

void whoami_tree_rewatch(struct whoami_trees *ts, struct tree *t)
{
    whoami_watch_drop(t);
    t->dirty = 1;
    t->rewatch = 1;
    if (!t->computing) /* else job_done, once the job under way is back */
        rewatch_now(ts, t);
}

/* Whether t's last result answers a question holding ticket. */
static int usable(const struct tree *t, unsigned long ticket)
{
    if (!t->have_fp && !t->failed)
        return 0;
    return (t->ifd >= 0 && !t->dirty && !t->computing) || (ticket && t->fp_num >= ticket);
}

enum whoami_tree_result whoami_tree_get(struct whoami_trees *ts, const char *root,
                                        const struct whoami_patterns *p, long long now_ms,
                                        unsigned long *ticket, const struct whoami_fp **fp,
                                        long long *changed_ms, const char **worktree, char *err,
                                        size_t errlen)
{
    struct tree *t = tree_find(ts, root, p, now_ms);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return WT_ERROR;
    }
    whoami_watch_drain(ts, t);
    if (!usable(t, *ticket)) {
        /* The computation under way will do if no event came since it
         * began (a scan has no events, and a first walk's are not read
         * yet: it will not). */
        if (!*ticket)
            *ticket = t->computing && t->ifd >= 0 && !t->setting_up && !t->dirty ? t->run_num
                                                                                 : ts->seq + 1;
        if (t->wanted < *ticket)
            t->wanted = *ticket;
        if (!t->computing)
            start(ts, t);
        return WT_PENDING;
    }
    *worktree = t->worktree;
    if (t->failed) {
        snprintf(err, errlen, "%s", t->err);
        return WT_ERROR;
    }
    *fp = &t->fp;
    *changed_ms = t->changed_ms;
    return WT_READY;
}

struct whoami_trees *whoami_trees_new(struct event_base *base, int use_inotify,
                                      whoami_trees_cb ready, whoami_trees_changed_cb changed,
                                      void *arg)
{
    struct whoami_trees *ts = calloc(1, sizeof *ts);
    if (!ts)
        return NULL;
    ts->base = base;
    ts->use_inotify = use_inotify;
    ts->ready = ready;
    ts->changed = changed;
    ts->arg = arg;
    if (!(ts->worker = whoami_fp_worker_new(base, job_done, ts))) {
        free(ts);
        return NULL;
    }
    return ts;
}

void whoami_trees_forget(struct whoami_trees *ts, const char *root)
{
    for (size_t i = 0; i < ts->n;) {
        struct tree *t = ts->tree[i];
        if (strcmp(t->root, root) != 0) {
            i++;
            continue;
        }
        ts->tree[i] = ts->tree[--ts->n];
        drop_tree(ts, t);
    }
}

void whoami_trees_free(struct whoami_trees *ts)
{
    if (!ts)
        return;
    whoami_fp_worker_free(ts->worker); /* first: it may be reading a tree */
    for (size_t i = 0; i < ts->n; i++)
        tree_free(ts->tree[i]);
    while (ts->evicted) {
        struct tree *t = ts->evicted;
        ts->evicted = t->next_evicted;
        tree_free(t);
    }
    free(ts);
}

int whoami_trees_inotify(const struct whoami_trees *ts)
{
    return ts->use_inotify && !ts->inotify_failed;
}
