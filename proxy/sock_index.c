/* sock_index.c - see sock_index.h. Open addressing with linear probing: no
 * deletions, so a full table is simply emptied; the entries it loses are
 * found again by the worker. */
#include "sock_index.h"

#include <string.h>

#include "host.h"

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

int sock_index_learn(struct sock_index *x, pid_t pid, int from, int budget)
{
    int next = from, gap = 0;
    unsigned long inode;
    for (int fd = from; gap < SOCK_INDEX_GAP && budget-- > 0; fd++) {
        int r = host_pid_fd_socket(pid, fd, &inode);
        if (r < 0) {
            gap++;
            continue;
        }
        gap = 0;
        next = fd + 1;
        if (r)
            sock_index_put(x, inode, pid, fd);
    }
    return next;
}
