/* ondemand_cache.h - the .wtproxy file last read for each worktree, for
 * the answers that must not wait for a read: the dashboard's `declared`,
 * which its event stream asks for about every 250 ms. On a slow
 * filesystem (NFS, FUSE) opening a file can take seconds, so the loop
 * never does: it answers from here, and ondemand_reader.c looks at the
 * file again on its worker, reading it only when its key (device, inode,
 * size, mtime) changed. Loop only. */
#ifndef WTP_ONDEMAND_CACHE_H
#define WTP_ONDEMAND_CACHE_H

#include "wtfile.h"

#define ONDEMAND_CACHE_MAX 64       /* worktrees kept; the least recently looked at goes */
#define ONDEMAND_CACHE_FRESH_MS 250 /* a look older than this asks the worker again */

struct ondemand_cached {
    char worktree[PATH_MAX];
    int rc; /* wtfile_read's: 0, 1 no file, -1 bad (err) */
    char err[1024];
    struct wtfile f;               /* as read; f.key also when rc is 1 (all zero) */
    unsigned long long checked_ms; /* when the worker last looked */
};

struct ondemand_cache;

struct ondemand_cache *ondemand_cache_new(void);
void ondemand_cache_free(struct ondemand_cache *c);

/* worktree's entry, NULL when it was never read (or was dropped). */
struct ondemand_cached *ondemand_cache_get(struct ondemand_cache *c, const char *worktree);

/* Keep what the worker read of worktree's file at now_ms. Out of memory:
 * nothing kept (the next answer asks again). */
void ondemand_cache_put(struct ondemand_cache *c, const char *worktree, int rc,
                        const struct wtfile *f, const char *err, unsigned long long now_ms);

#endif
