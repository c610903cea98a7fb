/* tree.h - the fingerprint of the code on disk now, per (worktree,
 * patterns), kept current by inotify: a write marks it dirty, and the next
 * question recomputes it (re-reading only the files whose stat changed).
 * Where inotify is unavailable or its watches run out, every question is a
 * stat scan instead. Internal to whoami/. */
#ifndef WTP_WHOAMI_TREE_H
#define WTP_WHOAMI_TREE_H

#include <event2/event.h>

#include "whoami.h"

#define WHOAMI_MAX_TREES 64 /* (worktree, patterns) pairs kept; the least used goes */

struct whoami_trees;

/* use_inotify 0 forces stat scans (config whoami_watch = stat). */
struct whoami_trees *whoami_trees_new(struct event_base *base, int use_inotify);
void whoami_trees_free(struct whoami_trees *ts);

/* The fingerprint of root under p as the disk is now: every change written
 * before this call is seen (pending inotify events are read first).
 * *changed_ms is when its hash last changed (0: never seen to change).
 * NULL with err when root cannot be fingerprinted. The result stays valid
 * until the next call. */
const struct whoami_fp *whoami_tree_current(struct whoami_trees *ts, const char *root,
                                            const struct whoami_patterns *p,
                                            long long now_ms, long long *changed_ms,
                                            char *err, size_t errlen);

/* Whether ts watches with inotify (0: stat scans), for ls and the log. */
int whoami_trees_inotify(const struct whoami_trees *ts);

#endif
