/* identify.c - see identify.h: the stats, the worker's answers, life,
 * and a socket's identification begun. The loop's lookups in the recent
 * callers are identify_recent.c, the worker's pass identify_worker.c;
 * their shared state is identify_int.h. */
#include "identify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/queue.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "identify_int.h"
#include "proxy_limits.h"
#include "sock_index.h"

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
    json_t *o =
        json_pack("{s:I, s:I, s:I, s:I}", "count", (json_int_t)l->count, "p50_us",
                  (json_int_t)(n ? v[n / 2] : 0), "p99_us", (json_int_t)(n ? v[n * 99 / 100] : 0),
                  "max_us", (json_int_t)(n ? v[n - 1] : 0));
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

/* Free j and the jobs waiting for its placement. */
static void job_free(struct job *j)
{
    while (j) {
        struct job *next = j->same;
        if (j->known_copy)
            j->id->known.drop(j->known_copy);
        free(j->seen.v);
        free(j);
        j = next;
    }
}

/* j's answer (r: its place) to each connection of the same process that
 * waited for it, then they are freed. */
static void answer_same(struct job *j, const struct identify_result *r)
{
    struct job *s = j->same;
    j->same = NULL;
    for (struct job *w = s; w; w = w->same)
        if (!w->cancelled) {
            struct identify_result rw = *r;
            rw.uid = w->uid;
            rw.fd = w->fd;
            lat_add(&w->id->all, w->started_us);
            lat_add(&w->id->slow, w->started_us);
            w->cb(w->arg, &rw);
        }
    job_free(s);
}

/* The worker's answers, on the loop: the sockets it saw go into the index,
 * the places it walked into the per-pid cache (a cancelled job's too: the
 * caller's next connection needs it), then each waiting connection goes on. */
static void answers_cb(evutil_socket_t fd, short what, void *arg)
{
    struct identify *id = arg;
    struct host_job_list done = STAILQ_HEAD_INITIALIZER(done);
    (void)fd;
    (void)what;
    host_worker_finished(id->worker, &done);
    host_worker_finished(id->placer, &done);
    while (!STAILQ_EMPTY(&done)) {
        struct job *j = (struct job *)STAILQ_FIRST(&done);
        STAILQ_REMOVE_HEAD(&done, link);
        for (size_t i = 0; i < j->seen.n; i++)
            sock_index_put(&j->id->index, j->seen.v[i].inode, j->seen.v[i].pid, j->seen.v[i].fd);
        if (j->pid > 0)
            identify_keep_place(j->id, j);
        struct identify_result r = {.placed = j->placed, .uid = j->uid, .fd = j->fd};
        if (j->pid > 0)
            r.place = j->place;
        if (!j->cancelled) {
            lat_add(&j->id->all, j->started_us);
            lat_add(&j->id->slow, j->started_us);
            j->cb(j->arg, &r);
        }
        answer_same(j, &r);
        job_free(j);
    }
}

/* Free every job of list (their connections are gone). */
static void jobs_free(struct host_job_list *list)
{
    while (!STAILQ_EMPTY(list)) {
        struct job *j = (struct job *)STAILQ_FIRST(list);
        STAILQ_REMOVE_HEAD(list, link);
        job_free(j);
    }
}

static struct host_diag *open_diag(char *err, size_t errlen)
{
    char why[256];
    struct host_diag *d = host_diag_open(why, sizeof why);
    if (!d)
        snprintf(err, errlen,
                 "cannot identify callers: %s; send X-Wtproxy-Worktree or use "
                 "<name>.localhost instead",
                 why);
    return d;
}

/* One of identify's worker threads, its answers watched by the loop. */
static int start_worker(struct event_base *base, struct identify *id, struct host_worker **w,
                        struct event **ev, char *why, size_t whylen)
{
    if (!(*w = host_worker_new_batch(identify_run_batch, id, 0, why, whylen)))
        return -1;
    if (!(*ev = event_new(base, host_worker_fd(*w), EV_READ | EV_PERSIST, answers_cb, id)) ||
        event_priority_set(*ev, WTP_PRIO_ANSWERS) < 0 || event_add(*ev, NULL) < 0) {
        snprintf(why, whylen, "no event for its answers");
        return -1;
    }
    return 0;
}

struct identify *identify_new(struct event_base *base, const struct identify_known *known,
                              char *err, size_t errlen)
{
    char why[256];
    struct identify *id = calloc(1, sizeof *id);
    err[0] = '\0';
    if (!id) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    id->known = *known;
    /* The processes started from now on are the young ones. */
    id->young_floor = id->next_floor = id->guess_floor = id->guess_next = host_last_pid();
    id->next_floor_ms = id->guess_next_ms = host_mono_ms();
    if (!(id->diag = open_diag(err, errlen)))
        goto fail;
    if (start_worker(base, id, &id->worker, &id->answers, why, sizeof why) < 0 ||
        start_worker(base, id, &id->placer, &id->placed, why, sizeof why) < 0) {
        snprintf(err, errlen, "cannot start the identification workers: %s", why);
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
    if (id->placer)
        host_worker_free(id->placer, &finished, &unstarted);
    jobs_free(&finished);
    jobs_free(&unstarted);
    for (int i = 0; i < id->nrecent; i++)
        if (id->recent[i].pidfd >= 0)
            close(id->recent[i].pidfd);
    if (id->answers)
        event_free(id->answers);
    if (id->placed)
        event_free(id->placed);
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
    pid_t pid = identify_find_recent(id, inode, &r->fd);
    if (pid && identify_cached_place(id, pid, r)) {
        lat_add(&id->all, started);
        return 1;
    }
    /* The worker finds the holder (pid 0), places it, or both; or the
     * placement of this process in flight answers this connection too. */
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return -1;
    *j = (struct job){.id = id,
                      .started_us = started,
                      .inode = inode,
                      .uid = r->uid,
                      .pid = pid,
                      .fd = pid ? r->fd : -1,
                      .cb = cb,
                      .arg = arg};
    struct job *leader = pid ? identify_placing(id, pid, r->uid) : NULL;
    if (leader) {
        j->same = leader->same;
        leader->same = j;
    } else {
        j->known_copy = id->known.snap(id->known.arg);
        j->known_version = id->known.version(id->known.arg);
        host_worker_submit(pid ? id->placer : id->worker, &j->hj);
        if (pid)
            identify_set_placing(id, pid, j);
    }
    *ticket = j;
    return 0;
}

void identify_cancel(void *ticket)
{
    if (ticket)
        ((struct job *)ticket)->cancelled = 1;
}
