/* watch.c - the inotify side of tree.c (tree_impl.h): one instance per
 * tree, watching every folder its patterns do not prune, so a tree's
 * watches come and go with it. */
#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tree_impl.h"

void whoami_watch_drop(struct tree *t)
{
    for (size_t i = 0; i < t->nwatch; i++)
        free(t->watch[i].rel);
    t->nwatch = 0;
    whoami_watch_unhook(t);
    if (t->ifd >= 0)
        close(t->ifd);
    t->ifd = -1;
}

void whoami_watch_unhook(struct tree *t)
{
    if (t->ev)
        event_free(t->ev);
    t->ev = NULL;
}

void whoami_watch_close(struct whoami_fp_job *j)
{
    struct tree *t = j->owner;
    close(t->ifd);
    t->ifd = -1;
}

/* root/rel into out; -1 when it does not fit (such a folder is not watched
 * nor, by the fingerprint, walked). */
static int full_path(const struct tree *t, const char *rel, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s%s%s", t->root, rel[0] ? "/" : "", rel);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* Where wd is in t's watches, kept sorted by wd (the kernel hands them out
 * increasing, so an add is an append): an event finds its folder in log n
 * steps, not n, whatever the tree's size. Or where it would go. */
static size_t watch_index(const struct tree *t, int wd)
{
    size_t lo = 0, hi = t->nwatch;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->watch[mid].wd < wd)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int add_watch(struct tree *t, const char *rel)
{
    char path[PATH_MAX];
    if (full_path(t, rel, path, sizeof path) < 0)
        return 0;
    int wd = inotify_add_watch(t->ifd, path, WATCH_MASK);
    if (wd < 0)
        return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 0 : -1;
    char *copy = strdup(rel);
    if (!copy)
        return -1;
    size_t i = watch_index(t, wd);
    if (i < t->nwatch && t->watch[i].wd == wd) { /* watched already: a folder moved here */
        free(t->watch[i].rel);
        t->watch[i].rel = copy;
        return 0;
    }
    if (t->nwatch == t->capwatch) {
        size_t cap = t->capwatch ? 2 * t->capwatch : 64;
        struct watch *w = realloc(t->watch, cap * sizeof *w);
        if (!w) {
            free(copy);
            return -1;
        }
        t->watch = w;
        t->capwatch = cap;
    }
    memmove(&t->watch[i + 1], &t->watch[i], (t->nwatch - i) * sizeof *t->watch);
    t->watch[i] = (struct watch){wd, copy};
    t->nwatch++;
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
    size_t i = watch_index(t, wd);
    return i < t->nwatch && t->watch[i].wd == wd ? t->watch[i].rel : NULL;
}

static void forget_watch(struct tree *t, int wd)
{
    size_t i = watch_index(t, wd);
    if (i == t->nwatch || t->watch[i].wd != wd)
        return;
    free(t->watch[i].rel);
    t->nwatch--;
    memmove(&t->watch[i], &t->watch[i + 1], (t->nwatch - i) * sizeof *t->watch);
}

/* One event: a change to a fingerprinted file, or to the folders that
 * hold them, makes the tree dirty; a new folder is watched. */
static void handle_event(struct whoami_trees *ts, struct tree *t, const struct inotify_event *e)
{
    if (e->mask & IN_Q_OVERFLOW) { /* events were lost: watch everything again */
        whoami_tree_rewatch(ts, t);
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
            whoami_watch_drop(t);
        }
    } else if (whoami_patterns_select(&t->pat, path)) {
        t->dirty = 1;
    }
}

void whoami_watch_drain(struct whoami_trees *ts, struct tree *t)
{
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    while (t->ifd >= 0 && !t->setting_up) {
        ssize_t n = read(t->ifd, buf, sizeof buf);
        if (n <= 0)
            break;
        /* An overflow ends the loop: the rest is of the dropped watches. */
        for (char *p = buf; t->ifd >= 0 && !t->setting_up && p < buf + n;) {
            const struct inotify_event *e = (const struct inotify_event *)p;
            p += sizeof *e + e->len;
            handle_event(ts, t, e);
        }
    }
    if (t->dirty && t->ifd >= 0)
        whoami_tree_settle(t);
}

static void readable_cb(evutil_socket_t fd, short what, void *arg)
{
    struct tree *t = arg;
    (void)fd;
    (void)what;
    whoami_watch_drain(t->ts, t);
}

/* Out of instances or watches (fs.inotify.max_user_watches): a stat scan
 * per question is slower but never wrong. */
static int watching_failed(struct whoami_trees *ts, struct tree *t)
{
    ts->inotify_failed = 1;
    whoami_watch_drop(t);
    return -1;
}

int whoami_watch_init(struct whoami_trees *ts, struct tree *t)
{
    t->setting_up = 0;
    if (!ts->use_inotify || ts->inotify_failed)
        return -1;
    if ((t->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
        ts->inotify_failed = 1;
        return -1;
    }
    t->setting_up = 1;
    return 0;
}

void whoami_watch_first(struct whoami_fp_job *j)
{
    struct tree *t = j->owner;
    t->setup_failed = watch_folder(t, "") < 0;
}

void whoami_watch_set(struct whoami_trees *ts, struct tree *t)
{
    t->setting_up = 0;
    if (t->setup_failed ||
        !(t->ev = event_new(ts->base, t->ifd, EV_READ | EV_PERSIST, readable_cb, t)) ||
        event_add(t->ev, NULL) < 0)
        watching_failed(ts, t);
}
