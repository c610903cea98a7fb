/* identify.c - see identify.h. */
#include "identify.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/queue.h>
#include <stdint.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "host.h"
#include "proxy_limits.h"
#include "sock_index.h"

/* Processes that held a caller's socket lately: looked at first, most
 * recent first, since a browser or test runner opens many connections in a
 * row. Reading a process's fd table costs about 5 µs per fd here, so the
 * loop reads none whole at once: it tries the sockets already indexed
 * (sock_index.h: those the worker saw, and those learnt here), the fd
 * numbers the caller's closed connections had (the kernel hands the lowest
 * free number to its next socket), then learns the LEARN_RECENT most
 * recent callers' fds not read yet (a process opening connections without
 * closing any: a load test, a browser's first burst), LEARN_BUDGET
 * readlinks at most. A caller not seen lately is guessed among the
 * processes started in the last second or two (guess_young), at their
 * first fd numbers: a test runner's new worker, a fresh curl, a load
 * test's first connection (or, when none is there, the young process with
 * the most fds is learnt like a recent caller). Anything else goes to the
 * worker, which reads each table once for every caller waiting; meanwhile
 * the connection waits, so the loop answers whatever it can itself. */
#define RECENT_MAX 32
#define RECENT_FDS 64
#define LEARN_RECENT 2
#define LEARN_BUDGET 128
#define GUESS_MS 1000
#define GUESS_PIDS 128 /* a busy machine hands out 100 pids while a burst starts */
#define GUESS_MAXFD 12
#define GUESS_BUDGET 256 /* readlinks: about 0.5 ms when every pid tried is alive */
#define WORKER_KNOWN 8 /* pids the worker found lately, checked before a full scan */
#define YOUNG_MS 5000  /* the worker reads the processes younger than 5-10 s next */

struct recent {
    pid_t pid;
    int pidfd;  /* readable once that process ended: the cache is stale */
    int placed;
    struct caller_place place;
    int fds[RECENT_FDS]; /* fd numbers of its ended connections, oldest first:
                          * connections end and start again in the same order */
    int nfds;
    int learnt_fd; /* its fds below this number were read into the index */
};

/* The last LAT_RING identification times, for their percentiles. */
#define LAT_RING 4096
struct latencies {
    uint32_t us[LAT_RING];
    unsigned long count; /* ever recorded */
};

/* The sockets the worker saw in the fd tables it read, for the index. */
#define SEEN_MAX 8192
struct seen_sock {
    unsigned long inode;
    pid_t pid;
    int fd;
};
struct seen_list {
    struct seen_sock *v;
    size_t n, cap;
};

struct job {
    struct host_job hj; /* first: the worker hands it back as this */
    struct seen_list seen; /* the first job of a pass carries the pass's */
    long long started_us;
    struct identify *id;
    unsigned long inode;
    uid_t uid;
    pid_t pid; /* the worker's answer */
    int fd;
    int cancelled;
    identify_cb cb;
    void *arg;
};

struct identify {
    struct host_diag *diag;
    caller_known_fn known;
    void *known_arg;
    struct recent recent[RECENT_MAX];
    int nrecent;
    /* The worker (host/worker.c): its answers wake the loop through a
     * pipe (no libevent locking on the hot path). */
    struct host_worker *worker;
    struct event *answers;
    /* The pids the worker found lately: the worker's alone. */
    pid_t worker_known[WORKER_KNOWN];
    int worker_nknown;
    pid_t young_floor, next_floor; /* the worker's: young processes are above the floor */
    long long next_floor_ms;
    atomic_ulong batches, scans; /* the worker's passes, and those that read all of /proc */
    struct latencies all, slow; /* every identification's time; the worker's answers' */
    struct sock_index index;    /* the loop's */
    pid_t guess_floor, guess_next; /* the loop's young floor, as young_floor */
    long long guess_next_ms;
    unsigned long untraced;     /* sockets the kernel could not name */
};

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
    struct host_scope known = {.only = id->worker_known, .nonly = (size_t)id->worker_nknown,
                               .seen = seen_add, .seen_arg = seen};
    size_t found = host_socket_holders(inodes, n, uid, &known, pids, fds);
    pid_t last = host_last_pid();
    struct host_scope young = {.after = id->young_floor, .upto = last, .seen = seen_add,
                               .seen_arg = seen};
    if (found < n && last && id->young_floor)
        found += host_socket_holders(inodes, n, uid, &young, pids, fds);
    young_note(id, last);
    if (found < n) {
        struct host_scope all = {0};
        host_socket_holders(inodes, n, uid, &all, pids, fds);
        atomic_fetch_add(&id->scans, 1);
    }
}

/* On the worker: every caller waiting now, in one pass (find_holders): a
 * burst of 50 new callers costs one pass, not 50 scans in a row. */
static void run_batch(struct host_job_list *jobs, void *ctx)
{
    struct identify *id = ctx;
    struct host_job *hj;
    size_t n = 0, i = 0;
    STAILQ_FOREACH(hj, jobs, link)
        n++;
    unsigned long *inodes = calloc(n, sizeof *inodes);
    pid_t *pids = calloc(n, sizeof *pids);
    int *fds = calloc(n, sizeof *fds);
    uid_t uid = ((struct job *)STAILQ_FIRST(jobs))->uid;
    STAILQ_FOREACH(hj, jobs, link) {
        struct job *j = (struct job *)hj;
        if (inodes)
            inodes[i++] = j->inode;
        if (j->uid != uid)
            uid = HOST_ANY_UID; /* only saves a stat per process: the inode decides */
    }
    if (inodes && pids && fds)
        find_holders(id, inodes, n, uid, pids, fds, &((struct job *)STAILQ_FIRST(jobs))->seen);
    i = 0;
    STAILQ_FOREACH(hj, jobs, link) {
        struct job *j = (struct job *)hj;
        j->pid = inodes && pids && fds ? pids[i] : 0;
        j->fd = j->pid ? fds[i] : -1;
        if (j->pid)
            known_note(id->worker_known, &id->worker_nknown, j->pid);
        i++;
    }
    atomic_fetch_add(&id->batches, 1);
    free(inodes);
    free(pids);
    free(fds);
}

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

/* Place pid into r: from the cache while that very process lives (a pidfd
 * tells a reused pid apart), else by walking its ancestors. */
static void place_pid(struct identify *id, pid_t pid, struct identify_result *r)
{
    struct recent *e = recent_of(id, pid);
    if (e && pid_ended(e->pidfd)) {
        if (e->pidfd >= 0)
            close(e->pidfd);
        e->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        e->placed = 0;
        e->nfds = e->learnt_fd = 0;
    }
    if (!e || !e->placed) {
        r->placed = caller_place(pid, r->uid, id->known, id->known_arg, &r->place) == 0;
        if (!e)
            e = recent_add(id, pid);
        e->placed = r->placed;
        e->place = r->place;
    } else {
        r->placed = 1;
        r->place = e->place;
    }
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
    memmove(&id->recent[i], &id->recent[i + 1], (size_t)(id->nrecent - i - 1) * sizeof id->recent[0]);
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
    struct host_guess g = {last, span < GUESS_PIDS ? span : GUESS_PIDS, GUESS_MAXFD, GUESS_BUDGET,
                           getpid(), 0};
    pid_t pid = host_young_holder(inode, &g, fd);
    /* None at its first fds, but a young process holds many: a load test
     * whose connections arrive in any order. It is learnt from now on as a
     * recent caller (placed at its first connection found). */
    if (!pid && g.busiest && !recent_of(id, g.busiest))
        recent_add(id, g.busiest);
    return pid;
}

/* The fast path, on the loop (see RECENT_MAX): a few readlinks, never a
 * whole fd table. Returns the pid, 0. */
static pid_t find_recent(struct identify *id, unsigned long inode, int *fd)
{
    pid_t pid = indexed(id, inode, fd);
    if (pid)
        return pid;
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

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void lat_add(struct latencies *l, long long since_us)
{
    long long d = now_us() - since_us;
    l->us[l->count++ % LAT_RING] = d < 0 ? 0 : d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
}

static int by_value(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* {"count", "p50_us", "p99_us", "max_us"} over the times kept. */
static json_t *lat_json(const struct latencies *l)
{
    size_t n = l->count < LAT_RING ? l->count : LAT_RING;
    uint32_t *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return NULL;
    memcpy(v, l->us, n * sizeof *v);
    qsort(v, n, sizeof *v, by_value);
    json_t *o = json_pack("{s:I, s:I, s:I, s:I}", "count", (json_int_t)l->count, "p50_us",
                          (json_int_t)(n ? v[n / 2] : 0), "p99_us",
                          (json_int_t)(n ? v[n * 99 / 100] : 0), "max_us",
                          (json_int_t)(n ? v[n - 1] : 0));
    free(v);
    return o;
}

json_t *identify_stats_json(const struct identify *id)
{
    return json_pack("{s:o*, s:o*, s:I, s:I, s:I}", "all", lat_json(&id->all), "worker",
                     lat_json(&id->slow), "worker_passes", (json_int_t)atomic_load(&id->batches),
                     "proc_scans", (json_int_t)atomic_load(&id->scans), "untraced",
                     (json_int_t)id->untraced);
}

static void answers_cb(evutil_socket_t fd, short what, void *arg)
{
    struct identify *id = arg;
    struct host_job_list done = STAILQ_HEAD_INITIALIZER(done);
    (void)fd;
    (void)what;
    host_worker_finished(id->worker, &done);
    while (!STAILQ_EMPTY(&done)) {
        struct job *j = (struct job *)STAILQ_FIRST(&done);
        STAILQ_REMOVE_HEAD(&done, link);
        struct identify_result r = {.uid = j->uid, .fd = j->fd};
        for (size_t i = 0; i < j->seen.n; i++)
            sock_index_put(&j->id->index, j->seen.v[i].inode, j->seen.v[i].pid, j->seen.v[i].fd);
        free(j->seen.v);
        if (!j->cancelled) {
            lat_add(&j->id->all, j->started_us);
            lat_add(&j->id->slow, j->started_us);
            if (j->pid > 0)
                place_pid(j->id, j->pid, &r);
            j->cb(j->arg, &r);
        }
        free(j);
    }
}

/* Free every job of list (their connections are gone). */
static void jobs_free(struct host_job_list *list)
{
    while (!STAILQ_EMPTY(list)) {
        struct job *j = (struct job *)STAILQ_FIRST(list);
        STAILQ_REMOVE_HEAD(list, link);
        free(j->seen.v);
        free(j);
    }
}

static struct host_diag *open_diag(char *err, size_t errlen)
{
    char why[256];
    struct host_diag *d = host_diag_open(why, sizeof why);
    if (!d)
        snprintf(err, errlen, "cannot identify callers: %s; send X-Wtproxy-Worktree or use "
                              "<name>.localhost instead", why);
    return d;
}

struct identify *identify_new(struct event_base *base, caller_known_fn known, void *known_arg,
                              char *err, size_t errlen)
{
    char why[256];
    struct identify *id = calloc(1, sizeof *id);
    err[0] = '\0';
    if (!id) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    id->known = known;
    id->known_arg = known_arg;
    /* The processes started from now on are the young ones. */
    id->young_floor = id->next_floor = id->guess_floor = id->guess_next = host_last_pid();
    id->next_floor_ms = id->guess_next_ms = host_mono_ms();
    if (!(id->diag = open_diag(err, errlen)))
        goto fail;
    if (!(id->worker = host_worker_new_batch(run_batch, id, 0, why, sizeof why)) ||
        !(id->answers = event_new(base, host_worker_fd(id->worker), EV_READ | EV_PERSIST,
                                  answers_cb, id)) ||
        event_priority_set(id->answers, WTP_PRIO_ANSWERS) < 0 ||
        event_add(id->answers, NULL) < 0) {
        snprintf(err, errlen, "cannot start the identification worker: %s",
                 id->worker ? "no event for its answers" : why);
        goto fail;
    }
    return id;
fail:
    identify_free(id);
    return NULL;
}

void identify_free(struct identify *id)
{
    struct host_job_list finished = STAILQ_HEAD_INITIALIZER(finished),
                         unstarted = STAILQ_HEAD_INITIALIZER(unstarted);
    if (!id)
        return;
    if (id->worker)
        host_worker_free(id->worker, &finished, &unstarted);
    jobs_free(&finished);
    jobs_free(&unstarted);
    for (int i = 0; i < id->nrecent; i++)
        if (id->recent[i].pidfd >= 0)
            close(id->recent[i].pidfd);
    if (id->answers)
        event_free(id->answers);
    host_diag_close(id->diag);
    free(id);
}

int identify_start(struct identify *id, int fd, identify_cb cb, void *arg,
                   struct identify_result *r, void **ticket)
{
    struct sockaddr_storage local, peer;
    socklen_t llen = sizeof local, plen = sizeof peer;
    unsigned long inode;
    memset(r, 0, sizeof *r);
    r->uid = (uid_t)-1;
    r->fd = -1;
    *ticket = NULL;
    long long started = now_us();
    if (getsockname(fd, (struct sockaddr *)&local, &llen) < 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &plen) < 0 ||
        host_diag_socket(id->diag, (struct sockaddr *)&peer, (struct sockaddr *)&local, &inode,
                      &r->uid) < 0) {
        id->untraced++;
        return -1;
    }
    pid_t pid = find_recent(id, inode, &r->fd);
    if (pid) {
        place_pid(id, pid, r);
        lat_add(&id->all, started);
        return 1;
    }
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return -1;
    *j = (struct job){.id = id, .started_us = started, .inode = inode, .uid = r->uid,
                      .cb = cb, .arg = arg};
    host_worker_submit(id->worker, &j->hj);
    *ticket = j;
    return 0;
}

void identify_cancel(void *ticket)
{
    if (ticket)
        ((struct job *)ticket)->cancelled = 1;
}
