/* proc_fd.c - which process holds a socket. Each link in /proc/PID/fd
 * names an open file, and a socket's reads "socket:[INODE]" (proc(5)).
 * Measured: one process's fds cost about 11 µs + 2 µs per fd; every
 * process's, 1.7 ms on a quiet machine and 130-195 ms with 30k open fds -
 * which is why host_socket_holder never runs on the daemon's loop.
 *
 * Another user's fd directory is unreadable (unless we are root), so a
 * socket can exist with no process we can see holding it. */
#include "host.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "socket:[" + 20 digits + "]" + NUL, and one byte more so that a longer
 * link is read as longer and cannot pass for a socket's. */
#define SOCKET_LINK_MAX 32

/* The inodes a lookup accepts. */
struct inode_set {
    const unsigned long *v;
    size_t n;
};

/* The inode a fd link of n bytes names when it is a socket's, else 0. */
static unsigned long link_socket_inode(const char *link, ssize_t n)
{
    static const char prefix[] = "socket:[";
    char buf[SOCKET_LINK_MAX], *end;
    if (n <= (ssize_t)sizeof prefix || n >= SOCKET_LINK_MAX ||
        memcmp(link, prefix, sizeof prefix - 1) != 0 || link[n - 1] != ']' ||
        link[sizeof prefix - 1] < '0' || link[sizeof prefix - 1] > '9')
        return 0;
    memcpy(buf, link, (size_t)n);
    buf[n] = '\0';
    errno = 0;
    unsigned long inode = strtoul(buf + sizeof prefix - 1, &end, 10);
    return errno || end != buf + n - 1 ? 0 : inode;
}

/* Whether an fd link of n bytes is "socket:[INODE]" for one of s's. */
static int link_in_set(const char *link, ssize_t n, const struct inode_set *s)
{
    unsigned long inode = link_socket_inode(link, n);
    for (size_t i = 0; inode && i < s->n; i++)
        if (s->v[i] == inode)
            return 1;
    return 0;
}

/* An fd directory entry's name as a number (they are all digits). */
static int fd_number(const char *name)
{
    char *end;
    long v = strtol(name, &end, 10);
    return *end == '\0' && v >= 0 && v <= 0x7fffffff ? (int)v : -1;
}

/* The fd number in the fd directory at path (relative to at) whose link
 * is one of s's sockets, or -1: none, or the directory cannot be read
 * (another user's process, a process gone meanwhile). */
static int fd_dir_find(int at, const char *path, const struct inode_set *s)
{
    char link[SOCKET_LINK_MAX];
    struct dirent *e;
    int fd, found = -1;
    ssize_t n;
    DIR *d;

    if ((fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return -1;
    if (!(d = fdopendir(fd))) {
        close(fd);
        return -1;
    }
    while (found < 0 && (e = readdir(d))) {
        n = readlinkat(dirfd(d), e->d_name, link, sizeof link);
        if (n > 0 && link_in_set(link, n, s))
            found = fd_number(e->d_name);
    }
    closedir(d);
    return found;
}

int host_pid_socket_fd(pid_t pid, unsigned long inode)
{
    const struct inode_set s = {&inode, 1};
    char path[64];

    if (pid <= 0)
        return -1;
    snprintf(path, sizeof path, "%s/%ld/fd", host_proc_dir, (long)pid);
    return fd_dir_find(AT_FDCWD, path, &s);
}

int host_pid_fd_is_socket(pid_t pid, int fd, unsigned long inode)
{
    const struct inode_set s = {&inode, 1};
    char path[64], link[SOCKET_LINK_MAX];
    ssize_t n;

    snprintf(path, sizeof path, "%s/%ld/fd/%d", host_proc_dir, (long)pid, fd);
    n = readlink(path, link, sizeof link);
    return n > 0 && link_in_set(link, n, &s);
}

int host_pid_fd_socket(pid_t pid, int fd, unsigned long *inode)
{
    char path[64], link[SOCKET_LINK_MAX];
    ssize_t n;

    snprintf(path, sizeof path, "%s/%ld/fd/%d", host_proc_dir, (long)pid, fd);
    if ((n = readlink(path, link, sizeof link)) <= 0)
        return -1;
    *inode = link_socket_inode(link, n);
    return *inode != 0;
}

/* The real /proc lists processes in ascending pid order, so the first
 * holder found is the lowest and every later entry is skipped by its name
 * alone; the order is not relied on (a fake tree in a test lists in any
 * order), only the skipping depends on it. */
pid_t host_socket_holder(const unsigned long *inodes, size_t n, uid_t uid)
{
    const struct inode_set s = {inodes, n};
    char path[64];
    struct dirent *e;
    struct stat st;
    pid_t found = 0;
    long pid;
    DIR *d;

    if (n == 0 || !(d = opendir(host_proc_dir)))
        return 0;
    while ((e = readdir(d))) {
        if ((pid = host_proc_pid(e->d_name)) == 0 || (found && pid >= found))
            continue;
        /* Another user's fds are unreadable anyway (unless we are root);
         * the owner check costs one stat instead of an opendir. */
        if (uid != HOST_ANY_UID && (fstatat(dirfd(d), e->d_name, &st, 0) < 0 || st.st_uid != uid))
            continue;
        snprintf(path, sizeof path, "%ld/fd", pid);
        if (fd_dir_find(dirfd(d), path, &s) >= 0)
            found = (pid_t)pid;
    }
    closedir(d);
    return found;
}

size_t host_socket_pids(const unsigned long *inodes, size_t n, pid_t *pids, size_t max)
{
    const struct inode_set s = {inodes, n};
    char path[64];
    struct dirent *e;
    size_t found = 0;
    long pid;
    DIR *d;

    if (n == 0 || !(d = opendir(host_proc_dir)))
        return 0;
    while (found < max && (e = readdir(d))) {
        if ((pid = host_proc_pid(e->d_name)) == 0)
            continue;
        snprintf(path, sizeof path, "%ld/fd", pid);
        if (fd_dir_find(dirfd(d), path, &s) < 0)
            continue;
        /* kept in ascending order: a fake tree in a test lists in any order */
        size_t at = found++;
        for (; at > 0 && pids[at - 1] > (pid_t)pid; at--)
            pids[at] = pids[at - 1];
        pids[at] = (pid_t)pid;
    }
    closedir(d);
    return found;
}

/* A batch lookup: the inodes sorted (by index, for bsearch) and what was
 * found for each. */
struct holders {
    const struct host_scope *scope;
    const unsigned long *inodes;
    size_t *order; /* indexes into inodes, by inode */
    size_t n, left;
    pid_t *pids;
    int *fds;
};

static int by_inode(const void *a, const void *b, void *inodes)
{
    const unsigned long *v = inodes;
    unsigned long x = v[*(const size_t *)a], y = v[*(const size_t *)b];
    return x < y ? -1 : x > y;
}

/* Record pid's fd for inode when it is one of h's and still unfound (or
 * found in a higher pid: the lowest holder wins, as host_socket_holder). */
static void holders_note(struct holders *h, unsigned long inode, pid_t pid, int fd)
{
    size_t lo = 0, hi = h->n;
    while (lo < hi) { /* the first of h's order with an inode >= inode */
        size_t mid = (lo + hi) / 2;
        if (h->inodes[h->order[mid]] < inode)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < h->n && h->inodes[h->order[lo]] == inode; lo++) {
        size_t i = h->order[lo];
        if (h->pids[i] && h->pids[i] <= pid)
            continue;
        if (!h->pids[i])
            h->left--;
        h->pids[i] = pid;
        h->fds[i] = fd;
    }
}

/* Read pid's fd table (relative to at) once against every inode of h.
 * Returns how many of h's inodes it holds. */
static size_t holders_scan_pid(struct holders *h, int at, pid_t pid)
{
    char path[64], link[SOCKET_LINK_MAX];
    struct dirent *e;
    unsigned long inode;
    ssize_t n;
    snprintf(path, sizeof path, "%ld/fd", (long)pid);
    int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    size_t left = h->left, hits = 0;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    while ((e = readdir(d)))
        if ((n = readlinkat(dirfd(d), e->d_name, link, sizeof link)) > 0 &&
            (inode = link_socket_inode(link, n))) {
            holders_note(h, inode, pid, fd_number(e->d_name));
            hits++;
            if (h->scope->seen)
                h->scope->seen(h->scope->seen_arg, inode, pid, fd_number(e->d_name));
        }
    closedir(d);
    return left > h->left ? hits : 0;
}

static int uid_matches(int at, const char *name, uid_t uid)
{
    struct stat st;
    return uid == HOST_ANY_UID || (fstatat(at, name, &st, 0) == 0 && st.st_uid == uid);
}

pid_t host_last_pid(void)
{
    char path[PATH_MAX], buf[128];
    snprintf(path, sizeof path, "%s/loadavg", host_proc_dir);
    ssize_t n = host_read_small_file(path, buf, sizeof buf);
    const char *last = n > 0 ? strrchr(buf, ' ') : NULL;
    long pid = last ? strtol(last + 1, NULL, 10) : 0;
    return pid > 0 && pid <= 0x7fffffff ? (pid_t)pid : 0;
}

/* Whether scope takes pid (the pid range wraps past pid_max). */
static int in_scope(const struct host_scope *scope, long pid)
{
    if (!scope->after && !scope->upto)
        return 1;
    if (scope->after <= scope->upto)
        return pid > scope->after && pid <= scope->upto;
    return pid > scope->after || pid <= scope->upto;
}

/* The process a thread id belongs to (its Tgid), pid itself when it is
 * one, 0 when gone. /proc/TID opens for a thread though /proc does not
 * list it, and its fd table is its process's. */
static pid_t tgid_of(int at, pid_t pid)
{
    char name[32], buf[512];
    snprintf(name, sizeof name, "%ld/status", (long)pid);
    int fd = openat(at, name, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *t = strstr(buf, "\nTgid:");
    return t ? (pid_t)strtol(t + 6, NULL, 10) : 0;
}

/* Mark in skip (a bit per pid of scope's range) the threads of pid's
 * process: /proc/PID/task lists them all, also when PID is one of them. */
static void skip_threads(int at, pid_t pid, const struct host_scope *scope, unsigned char *skip)
{
    char path[40];
    snprintf(path, sizeof path, "%ld/task", (long)pid);
    int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    for (struct dirent *e; (e = readdir(d));) {
        long t = host_proc_pid(e->d_name);
        if (t > scope->after && t <= scope->upto)
            skip[(t - scope->after - 1) / 8] |= (unsigned char)(1u << ((t - scope->after - 1) % 8));
    }
    closedir(d);
}

/* The young processes by number, without listing /proc: the pids after
 * scope->after up to scope->upto (at most HOST_YOUNG_SPAN), most of them
 * gone or threads (an open of a missing /proc/PID fails in a microsecond,
 * where listing /proc takes a millisecond at 2,000 processes). /proc/TID
 * opens for a thread too, and its fd table is its process's: each table is
 * read once, not once per thread (a new Chromium is a dozen processes
 * with hundreds of threads: read per thread, placing its first connection
 * took 40-50 ms at load 6-9 on 2 CPUs and 0.4-0.7 s at load 11; once per
 * process, under 10 ms). A thread that holds a socket is reported as its
 * process. */
static void scan_range(struct holders *h, int at, const struct host_scope *scope, uid_t uid)
{
    char name[24];
    unsigned char skip[HOST_YOUNG_SPAN / 8] = {0};
    for (pid_t p = scope->after + 1; p <= scope->upto && h->left; p++) {
        size_t bit = (size_t)(p - scope->after - 1);
        if (skip[bit / 8] & (1u << (bit % 8)))
            continue;
        snprintf(name, sizeof name, "%ld", (long)p);
        if (!uid_matches(at, name, uid))
            continue;
        size_t hits = holders_scan_pid(h, at, p);
        skip_threads(at, p, scope, skip);
        pid_t tgid = hits ? tgid_of(at, p) : 0;
        for (size_t i = 0; tgid && tgid != p && i < h->n; i++)
            if (h->pids[i] == p)
                h->pids[i] = tgid;
    }
}

size_t host_socket_holders(const unsigned long *inodes, size_t n, uid_t uid,
                           const struct host_scope *scope, pid_t *pids, int *fds)
{
    struct holders h = {scope, inodes, calloc(n ? n : 1, sizeof *h.order), n, 0, pids, fds};
    char name[24];
    long pid;
    DIR *d;
    if (!h.order || !(d = opendir(host_proc_dir))) {
        free(h.order);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        h.order[i] = i;
        h.left += pids[i] == 0;
    }
    size_t wanted = h.left;
    qsort_r(h.order, n, sizeof *h.order, by_inode, (void *)inodes);
    for (size_t k = 0; scope->only && k < scope->nonly && h.left; k++) {
        snprintf(name, sizeof name, "%ld", (long)scope->only[k]);
        if (scope->only[k] > 0 && uid_matches(dirfd(d), name, uid))
            holders_scan_pid(&h, dirfd(d), scope->only[k]);
    }
    int by_number = !scope->only && scope->after && scope->after < scope->upto &&
                    scope->upto - scope->after <= HOST_YOUNG_SPAN;
    if (by_number)
        scan_range(&h, dirfd(d), scope, uid);
    /* /proc lists pids in ascending order: once each inode has a holder,
     * it is the lowest, and the rest is not read. */
    for (struct dirent *e; !scope->only && !by_number && h.left && (e = readdir(d));)
        if ((pid = host_proc_pid(e->d_name)) && in_scope(scope, pid) &&
            uid_matches(dirfd(d), e->d_name, uid))
            holders_scan_pid(&h, dirfd(d), (pid_t)pid);
    closedir(d);
    free(h.order);
    return wanted - h.left;
}

/* The fd number in 3..maxfd of the fd directory dfd whose link is socket
 * inode, or -1; each readlink takes one of *budget. */
static int fd_window_find(int dfd, unsigned long inode, int maxfd, int *budget)
{
    char name[16], link[SOCKET_LINK_MAX];
    ssize_t n;

    for (int f = 3; f <= maxfd && (*budget)-- > 0; f++) {
        snprintf(name, sizeof name, "%d", f);
        n = readlinkat(dfd, name, link, sizeof link);
        if (n > 0 && link_socket_inode(link, n) == inode)
            return f;
    }
    return -1;
}

pid_t host_young_holder(unsigned long inode, struct host_guess *g, int *fd)
{
    char name[32];
    pid_t found = 0;
    off_t most = g->maxfd + 1; /* st_size of an fd directory: its open fds (Linux 6.2+) */
    struct stat st;
    int at = open(host_proc_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    g->busiest = 0;
    if (at < 0)
        return 0;
    /* Newest first: the caller is most likely the process just started.
     * A pid that is gone, or another user's, fails at its open. */
    for (pid_t p = g->last; !found && p > 0 && p > g->last - g->npids && g->budget > 0; p--) {
        snprintf(name, sizeof name, "%ld/fd", (long)p);
        int dfd = openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            continue;
        if ((*fd = fd_window_find(dfd, inode, g->maxfd, &g->budget)) >= 0)
            found = p;
        else if (fstat(dfd, &st) == 0 && st.st_size > most) {
            pid_t tgid = tgid_of(at, p); /* one read, only for a new maximum */
            if (tgid && tgid != g->self) {
                most = st.st_size;
                g->busiest = tgid;
            }
        }
        close(dfd);
    }
    pid_t tgid = found ? tgid_of(at, found) : 0;
    close(at);
    return tgid ? tgid : found;
}
