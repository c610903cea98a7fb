/* sock_index.c - see sock_index.h. Open addressing with linear probing: no
 * deletions, so a full table is simply emptied; the entries it loses are
 * found again by the worker. */
#include "sock_index.h"

#include <string.h>

static size_t home(unsigned long inode)
{
    /* Socket inodes are consecutive numbers: spread them (Fibonacci hashing). */
    return (size_t)((inode * 11400714819323198485ull) >> 50) & (SOCK_INDEX_SLOTS - 1);
}

void sock_index_put(struct sock_index *x, unsigned long inode, pid_t pid, int fd)
{
    if (!inode)
        return;
    if (x->used >= SOCK_INDEX_SLOTS / 2) {
        memset(x->slot, 0, sizeof x->slot);
        x->used = 0;
    }
    size_t i = home(inode);
    while (x->slot[i].inode && x->slot[i].inode != inode)
        i = (i + 1) & (SOCK_INDEX_SLOTS - 1);
    if (!x->slot[i].inode)
        x->used++;
    x->slot[i] = (struct sock_index_slot){inode, pid, fd};
}

const struct sock_index_slot *sock_index_get(const struct sock_index *x, unsigned long inode)
{
    for (size_t i = home(inode); x->slot[i].inode; i = (i + 1) & (SOCK_INDEX_SLOTS - 1))
        if (x->slot[i].inode == inode)
            return &x->slot[i];
    return NULL;
}
