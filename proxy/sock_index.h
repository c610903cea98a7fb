/* sock_index.h - which process holds a socket, remembered: the inode of
 * every socket seen in the fd tables the identification worker read, with
 * its pid and fd number. One process opening 1,500 connections at once (a
 * load test, a browser's first burst) then costs one fd table read for all
 * of them, not one each: its later connections are found here, on the loop,
 * and checked with one readlink. Internal to identify.c; loop only. */
#ifndef WTP_SOCK_INDEX_H
#define WTP_SOCK_INDEX_H

#include <sys/types.h>

#define SOCK_INDEX_SLOTS 16384 /* a power of two; cleared when half full */

struct sock_index_slot {
    unsigned long inode; /* 0: empty */
    pid_t pid;
    int fd;
};

struct sock_index {
    struct sock_index_slot slot[SOCK_INDEX_SLOTS];
    size_t used;
};

/* Remember that pid holds inode as fd (replacing what was known of it). */
void sock_index_put(struct sock_index *x, unsigned long inode, pid_t pid, int fd);

/* The slot of inode, or NULL. An entry may be stale (the socket closed, its
 * holder gone): check it before trusting it. */
const struct sock_index_slot *sock_index_get(const struct sock_index *x, unsigned long inode);

/* Read pid's fds from number from upward, one readlink each, and remember
 * each socket: a process opening connections in a burst (wrk -c1500, a
 * browser's first page) has its new sockets above the ones already read.
 * Stops after SOCK_INDEX_GAP numbers in a row that are not open, or after
 * budget readlinks. Returns where the next call starts: one past the last
 * open fd read (from, when none was). Loop only: bounded by budget. */
#define SOCK_INDEX_GAP 8
int sock_index_learn(struct sock_index *x, pid_t pid, int from, int budget);

#endif
