/* tree_impl.h - what tree.c (the trees, their computations) and watch.c
 * (their inotify watches) share. Internal to whoami/. */
#ifndef WTP_WHOAMI_TREE_IMPL_H
#define WTP_WHOAMI_TREE_IMPL_H

#include <sys/inotify.h>

#include "fp_worker.h"
#include "tree.h"

#define WATCH_MASK                                                                                 \
    (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM |              \
     IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_DONT_FOLLOW | IN_ONLYDIR | IN_EXCL_UNLINK)

struct watch {
    int wd;
    char *rel; /* the folder, relative to the root ("" for the root) */
};

struct whoami_trees;

struct tree {
    struct whoami_trees *ts;
    char root[PATH_MAX];
    struct whoami_patterns pat; /* a copy */
    struct whoami_fp fp;        /* the last result, when have_fp */
    int have_fp;
    int failed; /* the last result is err, not fp */
    char err[256];
    /* root's worktree, as the last result found it (fp_worker.h) */
    char worktree[PATH_MAX];
    unsigned long fp_num;  /* the computation the last result came from */
    int dirty;             /* an event came since the last computation began */
    int computing;         /* job is with the worker */
    unsigned long run_num; /* its number */
    long long run_ms;      /* when it began */
    unsigned long wanted;  /* a question awaits this computation */
    int setting_up;        /* the worker sets the watches: events wait */
    int setup_failed;      /* set by the worker: out of watches */
    int rewatch;           /* the queue overflowed while computing */
    int evicted;           /* dropped: freed once the worker is done with it */
    struct whoami_fp_job job;
    long long changed_ms, used_ms;
    char told[WHOAMI_HASH_SIZE]; /* the hash last told (changed), "" none yet */
    struct event *settle;        /* a computation of its own, once quiet (WHOAMI_SETTLE_MS) */
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
    unsigned long seq; /* computations started */
    struct whoami_fp_worker *worker;
    struct tree *evicted; /* dropped, still the worker's */
    whoami_trees_cb ready;
    whoami_trees_changed_cb changed;
    void *arg;
};

/* Close t's watches and its inotify instance (ifd -1: t scans). */
void whoami_watch_drop(struct tree *t);

/* On the loop: t's events are read no more (its instance stays open). */
void whoami_watch_unhook(struct tree *t);

/* A job's before, on the worker, for a dropped tree unhooked first: its
 * inotify instance closed, with its watches (ifd -1). */
void whoami_watch_close(struct whoami_fp_job *j);

/* A new inotify instance for t, its folders to be watched by the worker
 * before t's next computation (setting_up; whoami_watch_first). Returns
 * 0, or -1 when inotify is off or refused: t scans (ifd -1), and so do
 * later trees. */
int whoami_watch_init(struct whoami_trees *ts, struct tree *t);

/* (tree.c) The kernel's event queue for t overflowed: events were lost.
 * Its watches go; t is dirty (a question recomputes, never trusting the
 * last hash) until a computation on the worker sets them again, walking
 * the tree as for a new one: now, or once the one under way is back. */
void whoami_tree_rewatch(struct whoami_trees *ts, struct tree *t);

/* A job's before (fp_worker.h), on the worker: a new tree's folders
 * watched before its first walk, so that a write during the walk is
 * queued. Touches only t's watches, which the loop leaves alone while
 * t->setting_up. */
void whoami_watch_first(struct whoami_fp_job *j);

/* On the loop, once that job is back: t's events are read from now on
 * (or t scans, when its watches ran out). */
void whoami_watch_set(struct whoami_trees *ts, struct tree *t);

/* Read what inotify queued for t, marking it dirty for a change its
 * patterns select (and, dirty, computed again once quiet:
 * whoami_tree_settle). Called from the loop and before every answer, so
 * that a write made before a request was sent is always seen. */
void whoami_watch_drain(struct whoami_trees *ts, struct tree *t);

/* (tree.c) t is dirty: computed again by itself WHOAMI_SETTLE_MS after
 * the first event no computation has seen, unless a question has it
 * computed first. */
void whoami_tree_settle(struct tree *t);

#endif
