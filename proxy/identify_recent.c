/* identify_recent.c - the loop's side of identification (identify.h):
 * the per-pid cache of recent callers and the few readlinks that find a
 * socket among them or among the youngest processes (see RECENT_MAX in
 * identify_int.h). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "host.h"
#include "identify_int.h"
#include "proxy_limits.h"
#include "sock_index.h"

static int pid_ended(int pidfd)
{
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    return pidfd < 0 || poll(&p, 1, 0) != 0;
}

/* The recent entry of pid (moved to the front), or NULL. */
static struct recent *recent_of(struct identify *id, pid_t pid)
{
    for (int i = 0; i < id->nrecent; i++)
        if (id->recent[i].pid == pid) {
            struct recent e = id->recent[i];
            memmove(&id->recent[1], &id->recent[0], (size_t)i * sizeof e);
            id->recent[0] = e;
            return &id->recent[0];
        }
    return NULL;
}

/* A new front entry for pid, evicting the oldest when full. */
static struct recent *recent_add(struct identify *id, pid_t pid)
{
    if (id->nrecent == RECENT_MAX && id->recent[RECENT_MAX - 1].pidfd >= 0)
        close(id->recent[RECENT_MAX - 1].pidfd);
    int n = id->nrecent < RECENT_MAX ? id->nrecent++ : RECENT_MAX - 1;
    memmove(&id->recent[1], &id->recent[0], (size_t)n * sizeof id->recent[0]);
    memset(&id->recent[0], 0, sizeof id->recent[0]);
    id->recent[0].pid = pid;
    id->recent[0].pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    return &id->recent[0];
}

/* Whether e's process still has the cwd its walk saw (one readlink). */
static int same_cwd(const struct recent *e)
{
    char cwd[PATH_MAX];
    return host_pid_cwd(e->pid, cwd, sizeof cwd) == 0 && strcmp(cwd, e->place.cwd) == 0;
}

/* Whether e's "placed nowhere" still holds for a connection of uid (see
 * UNPLACED_MS); its process is known to live. */
static int unplaced_holds(struct identify *id, const struct recent *e, uid_t uid)
{
    return e->unplaced && e->uid == uid && host_mono_ms() < e->until_ms &&
           e->version == id->known.version(id->known.arg) && same_cwd(e);
}

/* From the cache while that very process lives (a pidfd tells a reused
 * pid apart) and was placed, in the cwd it was placed in (a test runner
 * that chdirs into another worktree is that worktree's caller at its next
 * connection, not its old one's), or was placed nowhere and nothing the
 * loop can see changed since (unplaced_holds). */
int identify_cached_place(struct identify *id, pid_t pid, struct identify_result *r)
{
    struct recent *e = recent_of(id, pid);
    if (e && pid_ended(e->pidfd)) {
        if (e->pidfd >= 0)
            close(e->pidfd);
        e->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        e->placed = e->unplaced = 0;
        e->nfds = e->learnt_fd = 0;
        e->placing = NULL; /* the placement in flight is the ended process's */
    }
    if (!e || !(e->placed ? same_cwd(e) : unplaced_holds(id, e, r->uid)))
        return 0;
    r->placed = e->placed;
    r->place = e->place;
    return 1;
}

void identify_keep_place(struct identify *id, const struct job *j)
{
    struct recent *e = recent_of(id, j->pid);
    if (!e)
        e = recent_add(id, j->pid);
    e->placed = j->placed;
    e->place = j->place;
    /* Only a walk that ran is a memo: no copy of the registrations (out of
     * memory) placed nothing, it judged nothing. */
    e->unplaced = j->walked && !j->placed;
    e->uid = j->uid;
    e->version = j->known_version;
    e->until_ms = j->started_us / 1000 + UNPLACED_MS;
    e->placing = NULL;
}

struct job *identify_placing(struct identify *id, pid_t pid, uid_t uid)
{
    struct recent *e = recent_of(id, pid);
    return e && e->placing && e->placing->uid == uid ? e->placing : NULL;
}

void identify_set_placing(struct identify *id, pid_t pid, struct job *j)
{
    struct recent *e = recent_of(id, pid);
    if (!e)
        e = recent_add(id, pid);
    e->placing = j;
}

void identify_forget(struct identify *id, pid_t pid, int fd)
{
    struct recent *e = NULL;
    for (int i = 0; i < id->nrecent && !e; i++)
        if (id->recent[i].pid == pid)
            e = &id->recent[i];
    if (!e || fd < 0)
        return;
    for (int i = 0; i < e->nfds; i++)
        if (e->fds[i] == fd)
            return;
    if (e->nfds == RECENT_FDS)
        memmove(&e->fds[0], &e->fds[1], (size_t)--e->nfds * sizeof e->fds[0]);
    e->fds[e->nfds++] = fd;
}

struct identify_kept *identify_keep(const struct identify_result *r)
{
    const struct caller_place *p = &r->place;
    size_t lw = strlen(p->worktree) + 1, lc = strlen(p->comm) + 1, ld = strlen(p->cwd) + 1;
    struct identify_kept *k = malloc(sizeof *k + lw + lc + ld);
    if (!k)
        return NULL;
    k->placed = r->placed;
    k->uid = r->uid;
    k->fd = r->fd;
    k->pid = p->pid;
    k->decided_by = p->decided_by;
    memcpy(k->how, p->how, sizeof k->how);
    k->worktree = memcpy(k->text, p->worktree, lw);
    k->comm = memcpy(k->text + lw, p->comm, lc);
    k->cwd = memcpy(k->text + lw + lc, p->cwd, ld);
    return k;
}

/* Forget recent entry i: its process ended. */
static void recent_drop(struct identify *id, int i)
{
    if (id->recent[i].pidfd >= 0)
        close(id->recent[i].pidfd);
    memmove(&id->recent[i], &id->recent[i + 1],
            (size_t)(id->nrecent - i - 1) * sizeof id->recent[0]);
    id->nrecent--;
}

/* The indexed holder of inode when it still holds it, else 0. */
static pid_t indexed(struct identify *id, unsigned long inode, int *fd)
{
    const struct sock_index_slot *seen = sock_index_get(&id->index, inode);
    if (seen && host_pid_fd_is_socket(seen->pid, seen->fd, inode)) {
        *fd = seen->fd;
        return seen->pid;
    }
    return 0;
}

/* Index the fds the most recent callers opened since last read, then look
 * again. Returns the pid, 0. */
static pid_t learn_recent(struct identify *id, unsigned long inode, int *fd)
{
    for (int i = 0; i < id->nrecent && i < LEARN_RECENT; i++) {
        struct recent *e = &id->recent[i];
        int next = sock_index_learn(&id->index, e->pid, e->learnt_fd, LEARN_BUDGET);
        if (next == e->learnt_fd)
            continue;
        e->learnt_fd = next;
        pid_t pid = indexed(id, inode, fd);
        if (pid)
            return pid;
    }
    return 0;
}

/* A caller that started lately, guessed on the loop (host_young_holder)
 * among the pids handed out since the reading before last (GUESS_MS to
 * 2 * GUESS_MS ago while callers keep coming, longer after a quiet spell):
 * on a quiet machine a handful, all tried; on a busy one the GUESS_PIDS
 * newest, GUESS_BUDGET readlinks at most. */
static pid_t guess_young(struct identify *id, unsigned long inode, int *fd)
{
    pid_t last = host_last_pid();
    long long now = host_mono_ms();
    if (!last)
        return 0;
    if (now - id->guess_next_ms >= GUESS_MS) {
        id->guess_floor = id->guess_next;
        id->guess_next = last;
        id->guess_next_ms = now;
    }
    /* A floor above last: the pids wrapped past pid_max since. */
    pid_t span = id->guess_floor <= last ? last - id->guess_floor : GUESS_PIDS;
    struct host_guess g = {
        last, span < GUESS_PIDS ? span : GUESS_PIDS, GUESS_MAXFD, GUESS_BUDGET, getpid(), 0};
    pid_t pid = host_young_holder(inode, &g, fd);
    /* None at its first fds, but a young process holds many: a load test
     * whose connections arrive in any order. It is learnt from now on as a
     * recent caller (placed at its first connection found). */
    if (!pid && g.busiest && !recent_of(id, g.busiest))
        recent_add(id, g.busiest);
    return pid;
}

/* inode's holder among the recent callers' fds and the young processes;
 * 0 when not found. */
static pid_t find_unindexed(struct identify *id, unsigned long inode, int *fd)
{
    pid_t pid;
    for (int i = 0; i < id->nrecent; i++) {
        struct recent *e = &id->recent[i];
        if (pid_ended(e->pidfd)) { /* its fds are gone: no lookups wasted on them */
            recent_drop(id, i--);
            continue;
        }
        for (int k = 0; k < e->nfds; k++)
            if (host_pid_fd_is_socket(e->pid, e->fds[k], inode)) {
                *fd = e->fds[k];
                memmove(&e->fds[k], &e->fds[k + 1], (size_t)(e->nfds - k - 1) * sizeof e->fds[0]);
                e->nfds--;
                return e->pid;
            }
    }
    if ((pid = learn_recent(id, inode, fd)) || (pid = guess_young(id, inode, fd)))
        return pid;
    return learn_recent(id, inode, fd); /* the young process the guess added */
}

/* The fast path, on the loop (see RECENT_MAX): a few readlinks, never a
 * whole fd table. What it finds is indexed, so that the same socket's next
 * lookup is one readlink: a caller placed nowhere is looked up at its
 * connection's accept and again at each of its requests (a closed
 * connection's fd number, tried above, is used up by the first). Returns
 * the pid, 0. */
pid_t identify_find_recent(struct identify *id, unsigned long inode, int *fd)
{
    pid_t pid = indexed(id, inode, fd);
    if (pid)
        return pid;
    if ((pid = find_unindexed(id, inode, fd)))
        sock_index_put(&id->index, inode, pid, *fd);
    return pid;
}
