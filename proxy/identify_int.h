/* identify_int.h - the caller identification's state, shared by
 * identify.c (stats, answers, life), identify_recent.c (the loop's
 * lookups among recent callers) and identify_worker.c (the worker's pass
 * over fd tables). Internal to proxy/. */
#ifndef WTP_IDENTIFY_INT_H
#define WTP_IDENTIFY_INT_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "host.h"
#include "identify.h"
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
#define WORKER_KNOWN 8   /* pids the worker found lately, checked before a full scan */
#define YOUNG_MS 5000    /* the worker reads the processes younger than 5-10 s next */

/* A process placed nowhere (its cwd and its ancestors' in no worktree
 * wtproxy knows: a browser or curl started from $HOME) is answered from
 * the per-pid cache as a placed one is, while that very process lives (its
 * pidfd), for the same uid, with the registrations unchanged since the
 * copy its walk judged by, and its own cwd reading the same (one readlink
 * on the loop): a registration, or a chdir into a worktree, places it at
 * its next connection. What the loop cannot see without reading an
 * ancestor's /proc files or files on a possibly slow filesystem (an
 * ancestor's cwd, a new parent, an exec with WTPROXY_WORKTREE, a .wtproxy
 * committed or a repository made around its cwd) places it at most
 * UNPLACED_MS late: it is walked again then. Without the memo every
 * connection of such a process, and every request of its keep-alive ones,
 * waited for the placer (RESULTS-identify-burst.md). */
#define UNPLACED_MS 1000

struct recent {
    pid_t pid;
    int pidfd; /* readable once that process ended: the cache is stale */
    int placed;
    struct caller_place place;
    int unplaced;          /* place is a walk's "placed nowhere", kept as UNPLACED_MS says: */
    uid_t uid;             /* for this uid's connections, */
    unsigned long version; /* the registrations (identify_known.version) it was judged by, */
    long long until_ms;    /* until then (host_mono_ms) */
    int fds[RECENT_FDS];   /* fd numbers of its ended connections, oldest first:
                            * connections end and start again in the same order */
    int nfds;
    int learnt_fd;       /* its fds below this number were read into the index */
    struct job *placing; /* its placement on the worker, in flight: its other
                          * connections wait for that answer (a load test's
                          * first burst), not for walks of their own */
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
    struct host_job hj;    /* first: the worker hands it back as this */
    struct seen_list seen; /* the first job of a pass carries the pass's */
    long long started_us;
    struct identify *id;
    unsigned long inode;
    uid_t uid;
    pid_t pid; /* found on the loop (the worker only places it), else the worker's answer */
    int fd;
    int cancelled;
    void *known_copy;            /* identify_known.snap's, for the walk */
    unsigned long known_version; /* identify_known.version's at the snap (of the job whose
                                  * walk answered this one, once walked) */
    int walked;                  /* the worker's walk answered: placed, or placed nowhere */
    int placed;                  /* the worker's walk: caller_place's answer */
    struct caller_place place;
    struct job *same; /* connections of the same process waiting for this
                       * job's placement, never queued themselves (loop's) */
    identify_cb cb;
    void *arg;
};

struct identify {
    struct host_diag *diag;
    struct identify_known known;
    struct recent recent[RECENT_MAX];
    int nrecent;
    /* The worker (host/worker.c): its answers wake the loop through a
     * pipe (no libevent locking on the hot path). */
    struct host_worker *worker;
    struct event *answers;
    /* A second worker places callers whose holder the loop found: a walk
     * of a few /proc files and .git entries must not queue behind a
     * search of all of /proc (a load test's 1,500 first connections all
     * wait for its one process's placement). */
    struct host_worker *placer;
    struct event *placed;
    /* The pids the worker found lately: the worker's alone. */
    pid_t worker_known[WORKER_KNOWN];
    int worker_nknown;
    pid_t young_floor, next_floor; /* the worker's: young processes are above the floor */
    long long next_floor_ms;
    atomic_ulong batches, scans;   /* the worker's passes, and those that read all of /proc */
    struct latencies all, slow;    /* every identification's time; the worker's answers' */
    struct sock_index index;       /* the loop's */
    pid_t guess_floor, guess_next; /* the loop's young floor, as young_floor */
    long long guess_next_ms;
    unsigned long untraced; /* sockets the kernel could not name */
};

/* identify_worker.c: one pass of the worker for every job queued. */
void identify_run_batch(struct host_job_list *jobs, void *ctx);

/* identify_recent.c: pid's place into r (r->uid: the connection's) from
 * the per-pid cache (1), or 0 when it must be walked (on the worker); the
 * worker's walk of j->pid kept; the loop's fast path for inode's holder
 * (0: not found). */
int identify_cached_place(struct identify *id, pid_t pid, struct identify_result *r);
void identify_keep_place(struct identify *id, const struct job *j);
/* The placement of pid for uid in flight (NULL none); j becomes pid's. */
struct job *identify_placing(struct identify *id, pid_t pid, uid_t uid);
void identify_set_placing(struct identify *id, pid_t pid, struct job *j);
pid_t identify_find_recent(struct identify *id, unsigned long inode, int *fd);

#endif
