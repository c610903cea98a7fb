/* tree.h - the fingerprint of the code on disk, per (root, patterns),
 * computed on a worker thread (fp_worker.h) and kept current by inotify: a
 * write marks it dirty, and the next question has it recomputed (re-reading
 * only the files whose stat changed). Where inotify is unavailable or its
 * watches run out, every question waits for a stat scan that began after
 * it. Reading inotify's queue stays on the loop: it is one read. Internal
 * to whoami/. */
#ifndef WTP_WHOAMI_TREE_H
#define WTP_WHOAMI_TREE_H

#include <stddef.h>

#include "whoami.h"

#define WHOAMI_MAX_TREES 64 /* (worktree, patterns) pairs kept; the least used goes */

struct event_base;
struct whoami_trees;

/* A watched tree written to is fingerprinted again by itself, without a
 * question, once no event came for this long (a save is a burst of
 * events; a burst that never pauses gets one computation per period), so
 * that whoever shows a server as serving the disk's code learns at once
 * that the disk moved on (changed, below). Scanned trees are not. */
#define WHOAMI_SETTLE_MS 250

/* A computation finished: questions that got WT_PENDING may ask again. */
typedef void (*whoami_trees_cb)(void *arg);

/* The fingerprint of root under p is now hash, no longer the one last
 * told: the disk changed at changed_ms (when the computation that saw it
 * began). Told once the tree is quiet (no event pending since), whether
 * a question or the tree itself (WHOAMI_SETTLE_MS) had it computed. */
typedef void (*whoami_trees_changed_cb)(void *arg, const char *root,
                                        const struct whoami_patterns *p, const char *hash,
                                        long long changed_ms);

/* use_inotify 0 forces stat scans (config whoami_watch = stat). ready and
 * changed (NULL: not told) run on base's loop. NULL with errno when out of
 * memory or the worker thread cannot start. */
struct whoami_trees *whoami_trees_new(struct event_base *base, int use_inotify,
                                      whoami_trees_cb ready, whoami_trees_changed_cb changed,
                                      void *arg);
void whoami_trees_free(struct whoami_trees *ts); /* waits for a computation under way */

/* No server is checked against root any more: its trees go, whatever
 * their patterns, so that a worktree nobody serves (its server stopped,
 * the worktree removed) holds no inotify watch and is fingerprinted no
 * more after its edits. Their watches are closed on the worker, and one
 * being computed goes once back. A later question makes root's tree
 * again. */
void whoami_trees_forget(struct whoami_trees *ts, const char *root);

enum whoami_tree_result {
    WT_READY,   /* *fp and *changed_ms hold, valid until the next call */
    WT_PENDING, /* being computed: ask again after ready runs */
    WT_ERROR,   /* root cannot be fingerprinted: err says why */
};

/* The fingerprint of root under p as the disk is now: every change written
 * before the first call with this *ticket (0 before it; the call fills it)
 * is seen, since pending inotify events are read first and a result
 * computed before them is not used. *changed_ms is when its hash last
 * changed (0: never seen to change). *worktree (WT_READY and WT_ERROR) is
 * the top folder of root's worktree, "" when it is in none, as that
 * computation found it. */
enum whoami_tree_result whoami_tree_get(struct whoami_trees *ts, const char *root,
                                        const struct whoami_patterns *p, long long now_ms,
                                        unsigned long *ticket, const struct whoami_fp **fp,
                                        long long *changed_ms, const char **worktree, char *err,
                                        size_t errlen);

/* Whether ts watches with inotify (0: stat scans), for ls and the log. */
int whoami_trees_inotify(const struct whoami_trees *ts);

#endif
