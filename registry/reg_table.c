/* reg_table.c - the registrations of this machine, in registration order.
 *
 * A plain array of references: a developer runs a handful of servers, so a
 * linear scan per lookup costs less than keeping an index in step. The
 * order is what `wtproxy list` shows, so removal shifts the tail down
 * rather than swapping the last entry in. The key is (front, worktree);
 * the machine part is always this machine for the table a daemon keeps. */
#include "registry.h"

#include <stdlib.h>
#include <string.h>

#define TABLE_MIN_CAP 16

struct reg_table {
    struct reg_backend **v;
    size_t n, cap;
    unsigned long changes; /* entries put or taken, ever */
};

struct reg_table *reg_table_new(void)
{
    return calloc(1, sizeof(struct reg_table));
}

void reg_table_free(struct reg_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        reg_backend_unref(t->v[i]);
    free(t->v);
    free(t);
}

/* Index of the entry for (front, worktree), or -1. */
static long find(const struct reg_table *t, int front, const char *worktree)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i]->front == front && strcmp(t->v[i]->worktree, worktree) == 0)
            return (long)i;
    return -1;
}

/* Remove entry i, keeping the others in order; returns it with the
 * table's reference. */
static struct reg_backend *remove_at(struct reg_table *t, size_t i)
{
    struct reg_backend *b = t->v[i];

    memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof t->v[0]);
    t->n--;
    return b;
}

/* Room for one more entry. Returns 0, or -1 when out of memory. */
static int reserve_one(struct reg_table *t)
{
    struct reg_backend **v;
    size_t cap;

    if (t->n < t->cap)
        return 0;
    cap = t->cap ? t->cap * 2 : TABLE_MIN_CAP;
    if (!(v = realloc(t->v, cap * sizeof v[0])))
        return -1;
    t->v = v;
    t->cap = cap;
    return 0;
}

/* As registry.h says; besides, -1 with *holder NULL when out of memory
 * (the table is unchanged then, a dead entry on the key included). A
 * replacement goes to the end: it is the newest registration. */
int reg_table_put(struct reg_table *t, struct reg_backend *b, struct reg_backend **holder)
{
    long i = find(t, b->front, b->worktree);

    if (holder)
        *holder = NULL;
    if (i >= 0 && t->v[i]->state != REG_DEAD) {
        if (holder)
            *holder = t->v[i];
        return -1;
    }
    if (i < 0 && reserve_one(t) < 0)
        return -1;
    reg_backend_ref(b); /* first: b may be the dead entry itself */
    if (i >= 0)
        reg_backend_unref(remove_at(t, (size_t)i));
    t->v[t->n++] = b;
    t->changes++;
    return 0;
}

struct reg_backend *reg_table_get(const struct reg_table *t, int front, const char *worktree)
{
    long i = find(t, front, worktree);

    return i >= 0 ? t->v[i] : NULL;
}

struct reg_backend *reg_table_take(struct reg_table *t, int front, const char *worktree)
{
    long i = find(t, front, worktree);

    if (i < 0)
        return NULL;
    t->changes++;
    return remove_at(t, (size_t)i);
}

size_t reg_table_by_name(const struct reg_table *t, int front, const char *name,
                         struct reg_backend **out, size_t max)
{
    size_t count = 0;

    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i]->front != front || strcmp(reg_worktree_name(t->v[i]), name) != 0)
            continue;
        if (count < max)
            out[count] = t->v[i];
        count++;
    }
    return count;
}

unsigned long reg_table_changes(const struct reg_table *t)
{
    return t->changes;
}

size_t reg_table_count(const struct reg_table *t)
{
    return t->n;
}

struct reg_backend *reg_table_at(const struct reg_table *t, size_t i)
{
    return i < t->n ? t->v[i] : NULL;
}
