/* ondemand_cache.c - see ondemand_cache.h. A small array searched by
 * name: a daemon serves a few dozen worktrees at most. */
#include "ondemand_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ondemand_cache {
    struct ondemand_cached *e[ONDEMAND_CACHE_MAX]; /* allocated when first used */
    int n;
};

struct ondemand_cache *ondemand_cache_new(void)
{
    return calloc(1, sizeof(struct ondemand_cache));
}

void ondemand_cache_free(struct ondemand_cache *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        free(c->e[i]);
    free(c);
}

struct ondemand_cached *ondemand_cache_get(struct ondemand_cache *c, const char *worktree)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->e[i]->worktree, worktree) == 0)
            return c->e[i];
    return NULL;
}

/* A free entry, or the one looked at longest ago. */
static struct ondemand_cached *slot(struct ondemand_cache *c)
{
    if (c->n < ONDEMAND_CACHE_MAX)
        return (c->e[c->n] = calloc(1, sizeof *c->e[c->n])) ? c->e[c->n++] : NULL;
    struct ondemand_cached *old = NULL;
    for (int i = 0; i < c->n; i++)
        if (!old || c->e[i]->checked_ms < old->checked_ms)
            old = c->e[i];
    return old;
}

void ondemand_cache_put(struct ondemand_cache *c, const char *worktree, int rc,
                        const struct wtfile *f, const char *err, unsigned long long now_ms)
{
    struct ondemand_cached *e = ondemand_cache_get(c, worktree);
    if (!e && !(e = slot(c)))
        return;
    snprintf(e->worktree, sizeof e->worktree, "%s", worktree);
    e->rc = rc;
    snprintf(e->err, sizeof e->err, "%s", rc < 0 ? err : "");
    e->f = *f;
    e->checked_ms = now_ms;
}
