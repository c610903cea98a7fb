/* ignored.c - whether git ignores every file that made a server stale.
 * An app that writes into its own worktree as it runs (a JSON store in
 * data/, uploads in media/, a cache) makes its server stale at each write
 * when the fingerprint's patterns select those files (the Node defaults
 * take every JSON file): a restart cannot help, the next write stales it
 * again. Such files are mostly gitignored, and the refusal then says how
 * to leave them out of the fingerprint. Asked of `git check-ignore`, a
 * process: on a thread of its own, as holders.c's scan, never on the
 * loop; once per disk fingerprint and server start (gate_impl.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gate_impl.h"
#include "refusal.h"

extern char **environ;

struct whoami_ignored_job {
    struct whoami_server *s; /* NULL once it went (whoami_ignored_drop) */
    char root[PATH_MAX];     /* the paths are relative to it */
    char hash[WHOAMI_HASH_SIZE];
    long long since_ms;
    char *paths; /* each NUL-terminated, as check-ignore -z reads them */
    size_t len, n;
    int all; /* the worker's: git ignores all n */
    struct host_job hj;
};

struct whoami_ignored_worker {
    struct host_worker *worker;
    struct event *done_ev;
};

#define JOB_OF(job)                                                                                \
    ((struct whoami_ignored_job *)((char *)(job)-offsetof(struct whoami_ignored_job, hj)))

/* The number of paths git prints as ignored, from the output of
 * `git -C root check-ignore -z --stdin` fed paths; 0 when git cannot
 * say (not installed, not a repository). Tracked files are never
 * printed: a file git tracks is code, whatever .gitignore says. The
 * list is small (WHOAMI_IGNORED_MAX paths): it fits the pipe, so
 * writing all of it before reading cannot deadlock. */
static size_t count_ignored(const char *root, const char *paths, size_t len)
{
    int in[2], out[2];
    size_t n = 0;
    pid_t pid;
    if (pipe2(in, O_CLOEXEC) < 0)
        return 0;
    if (pipe2(out, O_CLOEXEC) < 0) {
        close(in[0]), close(in[1]);
        return 0;
    }
    const char *argv[] = {"git", "-C", root, "check-ignore", "-z", "--stdin", NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int spawned = posix_spawnp(&pid, "git", &fa, NULL, (char **)argv, environ) == 0;
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]), close(out[1]);
    if (spawned && write(in[1], paths, len) != (ssize_t)len)
        n = 0;
    close(in[1]);
    char buf[4096];
    ssize_t got;
    while (spawned && ((got = read(out[0], buf, sizeof buf)) > 0 || (got < 0 && errno == EINTR)))
        for (ssize_t i = 0; i < got; i++)
            n += buf[i] == '\0';
    close(out[0]);
    /* ECHILD when the daemon's SIGCHLD handler reaped it first: the
     * output said all there is to know */
    while (spawned && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return n;
}

/* On the worker. */
static void run_job(struct host_job *hj, void *ctx)
{
    struct whoami_ignored_job *j = JOB_OF(hj);
    (void)ctx;
    j->all = j->n && count_ignored(j->root, j->paths, j->len) == j->n;
}

/* A job back on the loop: kept by its server, whose waiters decide again. */
static void found(struct whoami_ignored_job *j)
{
    struct whoami_server *s = j->s;
    if (s) {
        s->ignored_job = NULL;
        memcpy(s->ignored_of, j->hash, sizeof s->ignored_of);
        s->ignored_since = j->since_ms;
        s->ignored_all = j->all;
    }
    free(j->paths);
    free(j);
    if (s)
        whoami_gate_settle(s);
}

static void done_cb(evutil_socket_t fd, short what, void *arg)
{
    struct whoami_ignored_worker *w = arg;
    struct host_job_list done = STAILQ_HEAD_INITIALIZER(done);
    (void)fd;
    (void)what;
    host_worker_finished(w->worker, &done);
    while (!STAILQ_EMPTY(&done)) {
        struct host_job *hj = STAILQ_FIRST(&done);
        STAILQ_REMOVE_HEAD(&done, link);
        found(JOB_OF(hj));
    }
}

struct whoami_ignored_worker *whoami_ignored_worker_new(struct whoami_gate *g)
{
    char why[256];
    struct whoami_ignored_worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    if (!(w->worker = host_worker_new(run_job, NULL, 0, why, sizeof why)) ||
        !(w->done_ev =
              event_new(g->base, host_worker_fd(w->worker), EV_READ | EV_PERSIST, done_cb, w)) ||
        event_add(w->done_ev, NULL) < 0) {
        whoami_ignored_worker_free(w);
        return NULL;
    }
    return w;
}

/* Jobs the worker will not hand back: their servers learn nothing. */
static void drop_all(struct host_job_list *jobs)
{
    while (!STAILQ_EMPTY(jobs)) {
        struct whoami_ignored_job *j = JOB_OF(STAILQ_FIRST(jobs));
        STAILQ_REMOVE_HEAD(jobs, link);
        if (j->s)
            j->s->ignored_job = NULL;
        free(j->paths);
        free(j);
    }
}

void whoami_ignored_worker_free(struct whoami_ignored_worker *w)
{
    struct host_job_list finished = STAILQ_HEAD_INITIALIZER(finished),
                         unstarted = STAILQ_HEAD_INITIALIZER(unstarted);
    if (!w)
        return;
    if (w->worker)
        host_worker_free(w->worker, &finished, &unstarted);
    drop_all(&finished);
    drop_all(&unstarted);
    if (w->done_ev)
        event_free(w->done_ev);
    free(w);
}

/* The job's paths: disk's files changed since since_ms, NUL-terminated,
 * or none when there are more than WHOAMI_IGNORED_MAX (so many written
 * at once are not one data file). 0, or -1 out of memory. */
static int changed_paths(struct whoami_ignored_job *j, const struct whoami_fp *disk)
{
    size_t cap = 0;
    for (size_t i = 0; i < disk->n; i++) {
        if (!whoami_refusal_file_newer(&disk->file[i], j->since_ms))
            continue;
        if (++j->n > WHOAMI_IGNORED_MAX) {
            j->n = j->len = 0;
            return 0;
        }
        size_t add = strlen(disk->file[i].path) + 1;
        if (j->len + add > cap) {
            char *more = realloc(j->paths, cap = 2 * (j->len + add));
            if (!more)
                return -1;
            j->paths = more;
        }
        memcpy(j->paths + j->len, disk->file[i].path, add);
        j->len += add;
    }
    return 0;
}

int whoami_ignored_get(struct whoami_server *s, const char *root, const struct whoami_fp *disk,
                       long long since_ms, int *all)
{
    *all = 0;
    if (strcmp(s->ignored_of, disk->hash) == 0 && s->ignored_since == since_ms) {
        *all = s->ignored_all;
        return 1;
    }
    if (!s->g->ignored)
        return 1;
    if (s->ignored_job) /* for another disk or start: found, then asked again */
        return 0;
    struct whoami_ignored_job *j = calloc(1, sizeof *j);
    if (!j)
        return 1;
    j->s = s;
    snprintf(j->root, sizeof j->root, "%s", root);
    memcpy(j->hash, disk->hash, sizeof j->hash);
    j->since_ms = since_ms;
    if (changed_paths(j, disk) < 0) {
        free(j->paths);
        free(j);
        return 1;
    }
    s->ignored_job = j;
    host_worker_submit(s->g->ignored->worker, &j->hj);
    return 0;
}

void whoami_ignored_drop(struct whoami_server *s)
{
    if (s->ignored_job)
        s->ignored_job->s = NULL;
    s->ignored_job = NULL;
}
