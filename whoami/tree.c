/* tree.c - see tree.h. One inotify instance per tree, watching every
 * folder the patterns do not prune: a tree is one worktree, so its watches
 * come and go with it. Walking a big tree to watch it is slow too: the
 * first job of a tree sets its watches on the worker, before its walk, and
 * the loop reads its events only once that job is back.
 *
 * Computations are numbered across trees in the order they start. A
 * question's ticket is the first number whose result it may use: one that
 * began after the question was asked (or the one under way, when no event
 * came since it began). A result is used only once no event came after
 * its computation began, or for a ticket it satisfies, so nothing written
 * before a question is missed, and a tree written to without pause still
 * answers each question with the first computation that began after it. */
#include "tree.h"

#include <event2/event.h>
#include <sys/time.h>

#include "fp_worker.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define WATCH_MASK                                                                          \
    (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM |       \
     IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_DONT_FOLLOW | IN_ONLYDIR | IN_EXCL_UNLINK)

struct watch {
    int wd;
    char *rel; /* the folder, relative to the root ("" for the root) */
};

struct whoami_trees;

struct tree {
    struct whoami_trees *ts;
    char root[PATH_MAX];
    struct whoami_patterns pat;  /* a copy */
    struct whoami_fp fp;         /* the last result, when have_fp */
    int have_fp;
    int failed;                  /* the last result is err, not fp */
    char err[256];
    unsigned long fp_num;        /* the computation the last result came from */
    int dirty;                   /* an event came since the last computation began */
    int computing;               /* job is with the worker */
    unsigned long run_num;       /* its number */
    long long run_ms;            /* when it began */
    unsigned long wanted;        /* a question awaits this computation */
    int setting_up;              /* the worker sets the watches: events wait */
    int setup_failed;            /* set by the worker: out of watches */
    int evicted;                 /* dropped while computing: freed when back */
    struct whoami_fp_job job;
    long long changed_ms, used_ms;
    int ifd;                     /* inotify, -1 when scanning */
    struct event *ev;
    struct watch *watch;
    size_t nwatch, capwatch;
    struct tree *next_evicted;
};

struct whoami_trees {
    struct event_base *base;
    int use_inotify;
    int inotify_failed; /* once out of watches, stat scans from then on */
    struct tree *tree[WHOAMI_MAX_TREES];
    size_t n;
    unsigned long seq;  /* computations started */
    struct whoami_fp_worker *worker;
    struct tree *evicted; /* computing when dropped */
    whoami_trees_cb ready;
    void *arg;
};

static int same_list(char **a, size_t na, char **b, size_t nb)
{
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i]) != 0)
            return 0;
    return 1;
}

/* Compared in place, not through a built key: this runs per request. */
static int same_patterns(const struct whoami_patterns *a, const struct whoami_patterns *b)
{
    return same_list(a->include, a->n_include, b->include, b->n_include) &&
           same_list(a->exclude, a->n_exclude, b->exclude, b->n_exclude);
}

static char **copy_strings(char **v, size_t n)
{
    char **c = calloc(n ? n : 1, sizeof *c);
    for (size_t i = 0; c && i < n; i++) {
        if (!(c[i] = strdup(v[i]))) {
            while (i--) free(c[i]);
            free(c);
            return NULL;
        }
    }
    return c;
}

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

static void drop_watches(struct tree *t)
{
    for (size_t i = 0; i < t->nwatch; i++) free(t->watch[i].rel);
    t->nwatch = 0;
    if (t->ev)
        event_free(t->ev);
    t->ev = NULL;
    if (t->ifd >= 0)
        close(t->ifd);
    t->ifd = -1;
}

static void tree_free(struct tree *t)
{
    drop_watches(t);
    free(t->watch);
    free_strings(t->pat.include, t->pat.n_include);
    free_strings(t->pat.exclude, t->pat.n_exclude);
    whoami_fp_free(&t->fp);
    if (t->computing && t->job.finished && t->job.rc == 0)
        whoami_fp_free(&t->job.out);
    free(t);
}

/* root/rel into out; -1 when it does not fit (such a folder is not watched
 * nor, by the fingerprint, walked). */
static int full_path(const struct tree *t, const char *rel, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s%s%s", t->root, rel[0] ? "/" : "", rel);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

static int add_watch(struct tree *t, const char *rel)
{
    char path[PATH_MAX];
    if (full_path(t, rel, path, sizeof path) < 0)
        return 0;
    int wd = inotify_add_watch(t->ifd, path, WATCH_MASK);
    if (wd < 0)
        return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 0 : -1;
    if (t->nwatch == t->capwatch) {
        size_t cap = t->capwatch ? 2 * t->capwatch : 64;
        struct watch *w = realloc(t->watch, cap * sizeof *w);
        if (!w)
            return -1;
        t->watch = w;
        t->capwatch = cap;
    }
    if (!(t->watch[t->nwatch].rel = strdup(rel)))
        return -1;
    t->watch[t->nwatch++].wd = wd;
    return 0;
}

/* Watch rel and every folder below it that the patterns do not prune.
 * -1 when inotify refuses (out of watches): the tree falls back to scans. */
static int watch_folder(struct tree *t, const char *rel)
{
    if (rel[0] && whoami_patterns_prune(&t->pat, rel))
        return 0;
    if (add_watch(t, rel) < 0)
        return -1;
    char path[PATH_MAX];
    DIR *d = full_path(t, rel, path, sizeof path) == 0 ? opendir(path) : NULL;
    if (!d)
        return 0; /* gone or unreadable: nothing below to watch */
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (e->d_type != DT_DIR || strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue; /* DT_UNKNOWN is not met on the filesystems worktrees live on */
        char sub[PATH_MAX];
        if (snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name) <
            (int)sizeof sub)
            rc = watch_folder(t, sub);
    }
    closedir(d);
    return rc;
}

static const char *watch_rel(const struct tree *t, int wd)
{
    for (size_t i = 0; i < t->nwatch; i++)
        if (t->watch[i].wd == wd)
            return t->watch[i].rel;
    return NULL;
}

static void forget_watch(struct tree *t, int wd)
{
    for (size_t i = 0; i < t->nwatch; i++) {
        if (t->watch[i].wd == wd) {
            free(t->watch[i].rel);
            t->watch[i] = t->watch[--t->nwatch];
            return;
        }
    }
}

static int start_watching(struct whoami_trees *ts, struct tree *t);

/* One event: a change to a fingerprinted file, or to the folders that
 * hold them, makes the tree dirty; a new folder is watched. */
static void handle_event(struct whoami_trees *ts, struct tree *t, const struct inotify_event *e)
{
    if (e->mask & IN_Q_OVERFLOW) { /* events were lost: watch everything again */
        t->dirty = 1;
        drop_watches(t);
        start_watching(ts, t);
        return;
    }
    if (e->mask & IN_IGNORED) {
        forget_watch(t, e->wd);
        return;
    }
    const char *rel = watch_rel(t, e->wd);
    if (!rel)
        return;
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s%s%s", rel, rel[0] && e->len ? "/" : "",
                     e->len ? e->name : "");
    if (n < 0 || (size_t)n >= sizeof path)
        return;
    if (e->mask & (IN_ISDIR | IN_DELETE_SELF | IN_MOVE_SELF)) {
        t->dirty = 1;
        if ((e->mask & IN_ISDIR) && (e->mask & (IN_CREATE | IN_MOVED_TO)) &&
            watch_folder(t, path) < 0) {
            ts->inotify_failed = 1;
            drop_watches(t);
        }
    } else if (whoami_patterns_select(&t->pat, path)) {
        t->dirty = 1;
    }
}

/* Read what inotify queued. Called from the loop and before every answer,
 * so that a write made before a request was sent is always seen. */
static void drain(struct whoami_trees *ts, struct tree *t)
{
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    while (t->ifd >= 0 && !t->setting_up) {
        ssize_t n = read(t->ifd, buf, sizeof buf);
        if (n <= 0)
            return;
        for (char *p = buf; t->ifd >= 0 && p < buf + n;) {
            const struct inotify_event *e = (const struct inotify_event *)p;
            p += sizeof *e + e->len;
            handle_event(ts, t, e);
        }
    }
}

static void readable_cb(evutil_socket_t fd, short what, void *arg)
{
    struct tree *t = arg;
    (void)fd;
    (void)what;
    drain(t->ts, t);
}

/* Out of instances or watches (fs.inotify.max_user_watches): a stat scan
 * per question is slower but never wrong. */
static int watching_failed(struct whoami_trees *ts, struct tree *t)
{
    ts->inotify_failed = 1;
    drop_watches(t);
    return -1;
}

/* Watch t's root, its folders on the loop (a lost queue; see
 * first_watches for a new tree); on failure t scans (ifd -1). */
static int start_watching(struct whoami_trees *ts, struct tree *t)
{
    if (!ts->use_inotify || ts->inotify_failed)
        return -1;
    if ((t->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0 || watch_folder(t, "") < 0 ||
        !(t->ev = event_new(ts->base, t->ifd, EV_READ | EV_PERSIST, readable_cb, t)) ||
        event_add(t->ev, NULL) < 0)
        return watching_failed(ts, t);
    return 0;
}

/* On the worker, before a new tree's first walk: its folders watched, so
 * a write during the walk is queued and makes the result dirty. Touches
 * only t's watches, which the loop leaves alone while setting_up. */
static void first_watches(struct whoami_fp_job *j)
{
    struct tree *t = j->owner;
    t->setup_failed = watch_folder(t, "") < 0;
}

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
        !(t->pat.exclude = copy_strings(p->exclude, p->n_exclude))) {
        tree_free(t);
        return NULL;
    }
    if (ts->use_inotify && !ts->inotify_failed &&
        (t->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
        ts->inotify_failed = 1;
    t->setting_up = t->ifd >= 0;
    return t;
}

/* A tree evicted while the worker has it goes when its job is back. */
static void drop_tree(struct whoami_trees *ts, struct tree *t)
{
    if (!t->computing) {
        tree_free(t);
        return;
    }
    t->evicted = 1;
    t->next_evicted = ts->evicted;
    ts->evicted = t;
}

/* The tree for (root, p), made (evicting the least used) when missing. */
static struct tree *tree_find(struct whoami_trees *ts, const char *root,
                              const struct whoami_patterns *p, long long now_ms)
{
    size_t lru = 0;
    for (size_t i = 0; i < ts->n; i++) {
        struct tree *t = ts->tree[i];
        if (strcmp(t->root, root) == 0 && same_patterns(&t->pat, p)) {
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
    t->job.before = t->setting_up ? first_watches : NULL;
    t->job.owner = t;
    whoami_fp_worker_submit(ts->worker, &t->job);
}

/* The first watches are set (or could not be): the loop reads events now. */
static void watches_set(struct whoami_trees *ts, struct tree *t)
{
    t->setting_up = 0;
    if (t->setup_failed ||
        !(t->ev = event_new(ts->base, t->ifd, EV_READ | EV_PERSIST, readable_cb, t)) ||
        event_add(t->ev, NULL) < 0)
        watching_failed(ts, t);
}

/* Keep a finished job's result as t's last. */
static void keep_result(struct tree *t)
{
    struct whoami_fp_job *j = &t->job;
    t->failed = j->rc < 0;
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

/* On the loop: a job is back. Events that came meanwhile are read; a
 * question still waiting for a later computation gets it started. */
static void job_done(void *arg, struct whoami_fp_job *j)
{
    struct whoami_trees *ts = arg;
    struct tree *t = j->owner;
    if (t->evicted) {
        struct tree **p = &ts->evicted;
        while (*p != t)
            p = &(*p)->next_evicted;
        *p = t->next_evicted;
        tree_free(t);
        return;
    }
    t->computing = 0;
    if (t->setting_up)
        watches_set(ts, t);
    keep_result(t);
    drain(ts, t);
    if (t->wanted > t->fp_num)
        start(ts, t);
    ts->ready(ts->arg);
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
                                        long long *changed_ms, char *err, size_t errlen)
{
    struct tree *t = tree_find(ts, root, p, now_ms);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return WT_ERROR;
    }
    drain(ts, t);
    if (!usable(t, *ticket)) {
        /* The computation under way will do if no event came since it
         * began (a scan has no events: it never will). */
        if (!*ticket)
            *ticket = t->computing && t->ifd >= 0 && !t->dirty ? t->run_num : ts->seq + 1;
        if (t->wanted < *ticket)
            t->wanted = *ticket;
        if (!t->computing)
            start(ts, t);
        return WT_PENDING;
    }
    if (t->failed) {
        snprintf(err, errlen, "%s", t->err);
        return WT_ERROR;
    }
    *fp = &t->fp;
    *changed_ms = t->changed_ms;
    return WT_READY;
}

struct whoami_trees *whoami_trees_new(struct event_base *base, int use_inotify,
                                      whoami_trees_cb ready, void *arg)
{
    struct whoami_trees *ts = calloc(1, sizeof *ts);
    if (!ts)
        return NULL;
    ts->base = base;
    ts->use_inotify = use_inotify;
    ts->ready = ready;
    ts->arg = arg;
    if (!(ts->worker = whoami_fp_worker_new(base, job_done, ts))) {
        free(ts);
        return NULL;
    }
    return ts;
}

void whoami_trees_free(struct whoami_trees *ts)
{
    if (!ts)
        return;
    whoami_fp_worker_free(ts->worker); /* first: it may be reading a tree */
    for (size_t i = 0; i < ts->n; i++) tree_free(ts->tree[i]);
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
