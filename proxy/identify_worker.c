/* identify_worker.c - the identification worker's pass (identify.h):
 * every socket waiting at that moment looked for at once, in the fd
 * tables of the processes it found lately, then of the young ones, then of
 * all of /proc; every socket seen goes back for the loop's index. */
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/queue.h>
#include <unistd.h>

#include "host.h"
#include "identify_int.h"
#include "proxy_limits.h"
#include "sock_index.h"

/* Put the pids just found first in the worker's list of recent ones. */
static void known_note(pid_t *known, int *nknown, pid_t pid)
{
    int i = 0;
    while (i < *nknown && known[i] != pid)
        i++;
    if (i == *nknown)
        i = *nknown < WORKER_KNOWN ? (*nknown)++ : WORKER_KNOWN - 1;
    memmove(&known[1], &known[0], (size_t)i * sizeof *known);
    known[0] = pid;
}

/* Advance the young floor: the last pid handed out YOUNG_MS ago or more,
 * so that the pids after it are the processes started in the last 5 to
 * 10 s, where a test runner's workers and a fresh curl are. */
static void young_note(struct identify *id, pid_t last)
{
    long long now = host_mono_ms();
    if (now - id->next_floor_ms >= YOUNG_MS) {
        id->young_floor = id->next_floor;
        id->next_floor = last;
        id->next_floor_ms = now;
    }
}

/* host_scope.seen: keep what the worker saw, up to SEEN_MAX a pass. */
static void seen_add(void *arg, unsigned long inode, pid_t pid, int fd)
{
    struct seen_list *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        struct seen_sock *v = cap <= SEEN_MAX ? realloc(l->v, cap * sizeof *v) : NULL;
        if (!v)
            return;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (struct seen_sock){inode, pid, fd};
}

/* Find the holders of n inodes in the fewest fd tables: the processes this
 * worker found lately (the connections of one browser or test runner
 * arrive together), then the young ones, then, for those left, all of
 * /proc once. */
static void find_holders(struct identify *id, const unsigned long *inodes, size_t n, uid_t uid,
                         pid_t *pids, int *fds, struct seen_list *seen)
{
    struct host_scope known = {.only = id->worker_known,
                               .nonly = (size_t)id->worker_nknown,
                               .seen = seen_add,
                               .seen_arg = seen};
    size_t found = host_socket_holders(inodes, n, uid, &known, pids, fds);
    pid_t last = host_last_pid();
    struct host_scope young = {
        .after = id->young_floor, .upto = last, .seen = seen_add, .seen_arg = seen};
    if (found < n && last && id->young_floor)
        found += host_socket_holders(inodes, n, uid, &young, pids, fds);
    young_note(id, last);
    if (found < n) {
        struct host_scope all = {0};
        host_socket_holders(inodes, n, uid, &all, pids, fds);
        atomic_fetch_add(&id->scans, 1);
    }
}

/* The holders of the jobs' sockets that the loop did not find, in one
 * pass (find_holders): a burst of 50 new callers costs one pass, not 50
 * scans in a row. */
static void find_batch(struct identify *id, struct host_job_list *jobs)
{
    struct host_job *hj;
    size_t n = 0, i = 0;
    STAILQ_FOREACH(hj, jobs, link)
        n += ((struct job *)hj)->pid == 0;
    if (n == 0)
        return;
    unsigned long *inodes = calloc(n, sizeof *inodes);
    pid_t *pids = calloc(n, sizeof *pids);
    int *fds = calloc(n, sizeof *fds);
    uid_t uid = 0;
    STAILQ_FOREACH(hj, jobs, link) {
        struct job *j = (struct job *)hj;
        if (j->pid)
            continue;
        if (i == 0)
            uid = j->uid;
        else if (j->uid != uid)
            uid = HOST_ANY_UID; /* only saves a stat per process: the inode decides */
        if (inodes)
            inodes[i] = j->inode;
        i++;
    }
    if (inodes && pids && fds)
        find_holders(id, inodes, n, uid, pids, fds, &((struct job *)STAILQ_FIRST(jobs))->seen);
    i = 0;
    STAILQ_FOREACH(hj, jobs, link) {
        struct job *j = (struct job *)hj;
        if (j->pid)
            continue;
        j->pid = inodes && pids && fds ? pids[i] : 0;
        j->fd = j->pid ? fds[i] : -1;
        if (j->pid)
            known_note(id->worker_known, &id->worker_nknown, j->pid);
        i++;
    }
    free(inodes);
    free(pids);
    free(fds);
}

/* A job of this pass that placed pid for uid already; NULL none. A load
 * test's first connections all wait for its one process's placement. */
static const struct job *walked(struct job *const *done, int n, pid_t pid, uid_t uid)
{
    for (int i = 0; i < n; i++)
        if (done[i]->pid == pid && done[i]->uid == uid)
            return done[i];
    return NULL;
}

/* On either worker: every caller waiting now, its socket's holder found
 * (find_batch) and placed by its ancestors (caller_place, with the copy of
 * the registrations taken when the job was queued), each process once.
 * The placer's jobs all come with their holder, so only the finder ever
 * touches worker_known and the young floors. */
void identify_run_batch(struct host_job_list *jobs, void *ctx)
{
    struct identify *id = ctx;
    struct host_job *hj;
    struct job *done[WORKER_KNOWN];
    int ndone = 0;
    find_batch(id, jobs);
    STAILQ_FOREACH(hj, jobs, link) {
        struct job *j = (struct job *)hj;
        const struct job *same = j->pid > 0 ? walked(done, ndone, j->pid, j->uid) : NULL;
        if (same) {
            j->placed = same->placed;
            j->place = same->place;
            j->walked = same->walked;
            j->known_version = same->known_version; /* what its answer was judged by */
        } else if (j->pid > 0 && j->known_copy) {
            j->placed =
                caller_place(j->pid, j->uid, id->known.known, j->known_copy, &j->place) == 0;
            j->walked = 1;
            if (ndone < WORKER_KNOWN)
                done[ndone++] = j;
        } else if (j->pid > 0) {
            j->place.pid = j->pid; /* no copy (out of memory): not placed */
        }
    }
    atomic_fetch_add(&id->batches, 1);
}
