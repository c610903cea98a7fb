/* ondemand.c - see ondemand.h. The file is read by wtfile.c (on
 * ondemand_reader.c's worker); this file starts, orders, watches and stops
 * the servers it declares. Forking one is ondemand_launch.c; what is known
 * of each start is ondemand_starts.c; their state is ondemand_int.h. */
#include "ondemand.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host.h"
#include "log_flood.h"
#include "conn.h"
#include "ondemand_int.h"
#include "ondemand_reader.h"

struct started *ondemand_find(struct ondemand *a, const char *worktree, int front)
{
    for (int i = 0; i < a->n; i++)
        if (a->list[i].svc.front == front && strcmp(a->list[i].worktree, worktree) == 0)
            return &a->list[i];
    return NULL;
}

struct reg_backend *ondemand_registered(struct ondemand *a, const char *worktree, int front)
{
    struct reg_table *t = a->srv->reg ? reg_server_table(a->srv->reg) : NULL;
    struct reg_backend *b = t ? reg_table_get(t, front, worktree) : NULL;
    return b && b->state != REG_DEAD ? b : NULL;
}

void ondemand_log_path(const struct ondemand *a, const char *worktree, int front,
                       const char *service, char *out, size_t len)
{
    char name[NAME_MAX + 1];
    reg_log_name(worktree, front, service, name, sizeof name);
    snprintf(out, len, "%s/%s", a->log_dir, name);
}

int ondemand_running(struct ondemand *a, struct started *e)
{
    struct reg_backend *b =
        e->pid > 0 && e->adopted ? ondemand_registered(a, e->worktree, e->svc.front) : NULL;
    if (e->pid > 0 && e->adopted && (!b || b->pid != e->pid))
        e->pid = 0; /* no SIGCHLD for it: its registration's end is its end */
    return e->pid > 0;
}

struct started *ondemand_slot(struct ondemand *a, const char *worktree, const struct wtfile *f,
                              int i)
{
    struct started *e = ondemand_find(a, worktree, f->svc[i].front);
    for (int k = 0; !e && k < a->n; k++)
        if (!ondemand_running(a, &a->list[k]) && !a->list[k].waiting) /* one that exited */
            e = &a->list[k];
    if (!e && a->n == ONDEMAND_MAX)
        return NULL;
    if (!e)
        e = &a->list[a->n++];
    snprintf(e->worktree, sizeof e->worktree, "%s", worktree);
    e->svc = f->svc[i];
    e->nsib = f->n;
    for (int k = 0; k < f->n; k++) {
        snprintf(e->sib[k].name, sizeof e->sib[k].name, "%s", f->svc[k].name);
        e->sib[k].front = f->svc[k].front;
    }
    ondemand_log_path(a, worktree, e->svc.front, e->svc.name, e->log, sizeof e->log);
    e->failed[0] = '\0';
    e->failed_after = 0;
    e->adopted = 0; /* what it starts is its own child, seen by waitpid */
    e->adopted_ms = 0;
    return e;
}

/* Whether the machine's load lets e start now (start_max_load): 1 yes;
 * 0 not yet (e->load_pct is the load seen); -1 never: it waited
 * start_timeout already (late), and e->failed says so. */
static int load_ok(struct ondemand *a, struct started *e, int late)
{
    unsigned max = a->srv->cfg.start_max_load_pct, pct;
    e->load_pct = 0;
    if (!max || host_load_pct(&pct, NULL, NULL) < 0 || pct <= max)
        return 1;
    e->load_pct = pct;
    if (!late)
        return 0;
    snprintf(e->failed, sizeof e->failed,
             "%s's server%s%s was not started: the machine's load "
             "stayed at %u.%02u per CPU, above start_max_load %u.%02u, for start_timeout (%u "
             "ms); lower the load (see what runs: wtproxy ls, top) or raise start_max_load in "
             "the daemon's config",
             e->worktree, e->svc.name[0] ? " for service " : "", e->svc.name, pct / 100, pct % 100,
             max / 100, max % 100, a->srv->cfg.start_timeout_ms);
    return -1;
}

/* Start service i of f for worktree unless it runs: at once, or once the
 * services it is started after are ready (tick). Returns 0, or -1 with
 * err (also in the daemon's output). */
static int arm(struct ondemand *a, const char *worktree, const struct wtfile *f, int i, char *err,
               size_t errlen)
{
    struct started *e = ondemand_find(a, worktree, f->svc[i].front);
    if ((e && (ondemand_running(a, e) || e->waiting)) ||
        ondemand_registered(a, worktree, f->svc[i].front))
        return 0;
    if (!(e = ondemand_slot(a, worktree, f, i))) {
        snprintf(err, errlen,
                 "cannot start %s's server: the daemon runs %d servers it started "
                 "already; stop some (kill the pids wtproxy ls shows, or set idle_stop)",
                 worktree, ONDEMAND_MAX);
        log_flood_line(a->srv->flood, err, "%s", err);
        return -1;
    }
    if (f->svc[i].nafter == 0 && load_ok(a, e, 0) && ondemand_launch(a, e) < 0) {
        snprintf(err, errlen, "%s", e->failed);
        return -1;
    }
    if (f->svc[i].nafter == 0 && !e->load_pct)
        return 0;
    e->waiting = 1;
    e->since_ms = proxy_now_ms(a->srv);
    struct timeval tv = {0, WTP_WAIT_POLL_MS * 1000};
    evtimer_add(a->tick, &tv);
    return 0;
}

/* Say a bad file once in the daemon's output (the held requests say it
 * each time). */
static void report(struct ondemand *a, const char *err)
{
    if (strcmp(a->last_err, err) != 0)
        proxy_log("%s", err);
    snprintf(a->last_err, sizeof a->last_err, "%s", err);
}

int ondemand_not_ours(struct ondemand *a, const char *worktree, const struct wtfile *f, char *err,
                      size_t errlen)
{
    if (f->owner == geteuid())
        return 0;
    snprintf(err, errlen,
             "%s belongs to uid %u, and this daemon runs as %s: it starts servers only from its "
             "own user's .wtproxy files, as their commands run as the daemon's user; the file's "
             "owner starts it, with their own wtproxy daemon: cd %s && wtproxy restart",
             f->path, (unsigned)f->owner, a->srv->user, worktree);
    return 1;
}

static int ensure(struct ondemand *a, const char *worktree, const struct wtfile *f,
                  const struct wtfile_service *s, char *err, size_t errlen)
{
    int order[WTFILE_MAX_SERVICES];
    if (ondemand_not_ours(a, worktree, f, err, errlen)) {
        report(a, err);
        return -1;
    }
    int n = wtfile_start_order(f, (int)(s - f->svc), order);
    for (int k = 0; k < n; k++)
        if (arm(a, worktree, f, order[k], err, errlen) < 0)
            return -1;
    return 0;
}

int ondemand_ensure_file(struct ondemand *a, const char *worktree, int rc, const struct wtfile *f,
                         const char *ferr, const char *service, int front, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s", rc < 0 ? ferr : ""); /* a bad file: said once in our output */
    if (rc < 0)
        report(a, err);
    if (rc != 0)
        return -1;
    ondemand_check_fronts(a, worktree, f);
    const struct wtfile_service *s =
        service ? wtfile_by_name(f, service) : wtfile_by_front(f, front);
    if (!s && service) {
        size_t used = (size_t)snprintf(
            err, errlen, "%s declares no service `%s`; it declares:", f->path, service);
        for (int i = 0; i < f->n && used < errlen; i++)
            used += (size_t)snprintf(err + used, errlen - used, " %s",
                                     f->svc[i].name[0] ? f->svc[i].name : "(unnamed)");
    }
    return s ? ensure(a, worktree, f, s, err, errlen) : -1;
}

void *ondemand_read_later(struct ondemand *a, const char *worktree, unsigned timeout_ms,
                          ondemand_file_cb cb, void *arg)
{
    return ondemand_reader_file(a->reader, worktree, timeout_ms, cb, arg);
}

void *ondemand_ensure_front_later(struct ondemand *a, const char *worktree, int front,
                                  ondemand_ensured_cb cb, void *arg)
{
    return ondemand_reader_read(a->reader, worktree, front, cb, arg);
}

void ondemand_cancel(void *ticket)
{
    ondemand_reader_cancel(ticket);
}

/* Why a good file starts nothing for a request on front: the fronts it
 * does declare (a port mixed up between the file, the test config and the
 * daemon's listen). Returns buf. */
static const char *other_fronts(const struct wtfile *f, int front, char *buf, size_t len)
{
    size_t used =
        (size_t)snprintf(buf, len, "%s declares no server on front :%d, only on", f->path, front);
    for (int i = 0; i < f->n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s :%d%s%s%s", i ? "," : "",
                                 f->svc[i].front, f->svc[i].name[0] ? " (" : "", f->svc[i].name,
                                 f->svc[i].name[0] ? ")" : "");
    if (used < len)
        snprintf(buf + used, len - used,
                 ": send this request to that port, or give the server meant for this one "
                 "front = %d there.",
                 front);
    return buf;
}

void ondemand_file_answer(struct ondemand *a, const char *worktree, int front, int rc,
                          const struct wtfile *f, const char *err, ondemand_ensured_cb cb,
                          void *arg)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", err);
    if (rc < 0) {
        report(a, msg);
        cb(arg, ONDEMAND_BAD_FILE, msg);
        return;
    }
    const struct wtfile_service *s = rc == 0 ? wtfile_by_front(f, front) : NULL;
    if (rc == 0)
        ondemand_check_fronts(a, worktree, f);
    if (s && ondemand_not_ours(a, worktree, f, msg, sizeof msg)) {
        report(a, msg);
        cb(arg, ONDEMAND_NOT_OURS, msg);
    } else if (s)
        cb(arg, ensure(a, worktree, f, s, msg, sizeof msg) == 0 ? 0 : ONDEMAND_START_FAILED, msg);
    else if (rc == 0)
        cb(arg, ONDEMAND_NONE, other_fronts(f, front, msg, sizeof msg));
    else
        cb(arg, ONDEMAND_NONE, msg); /* the reader's note on the main checkout's file */
}

const struct ondemand_cached *ondemand_cached(struct ondemand *a, const char *worktree)
{
    return ondemand_reader_cached(a->reader, worktree, proxy_now_ms(a->srv));
}

unsigned long long ondemand_now_ms(struct ondemand *a)
{
    return proxy_now_ms(a->srv);
}

void ondemand_connected(struct ondemand *a, const char *worktree, int front)
{
    struct started *e = ondemand_find(a, worktree, front);
    if ((e && (ondemand_running(a, e) || e->waiting)) || ondemand_registered(a, worktree, front))
        return;
    ondemand_reader_submit(a->reader, worktree, front);
}

void ondemand_file_read(struct ondemand *a, const char *worktree, int front, const struct wtfile *f)
{
    char err[1024];
    const struct wtfile_service *s = wtfile_by_front(f, front);
    ondemand_check_fronts(a, worktree, f);
    if (s)
        ensure(a, worktree, f, s, err, sizeof err);
}

/* Whether e may start: the services it is started after are ready, and
 * the load allows it. 1 yes, 0 not yet, -1 never (e->failed says why). */
static int needs_met_by(struct ondemand *a, struct started *e, int late)
{
    for (int k = 0; k < e->svc.nafter; k++) {
        const struct sibling *d = &e->sib[e->svc.after[k]];
        struct reg_backend *b = ondemand_registered(a, e->worktree, d->front);
        struct started *ds = ondemand_find(a, e->worktree, d->front);
        if (b && b->state == REG_READY)
            continue;
        /* Its log, and the command that prints it: the fix of the page
         * (wtproxy logs on the request's front) would print this
         * service's log, which says nothing of why. */
        if (!b && (!ds || (!ondemand_running(a, ds) && !ds->waiting)))
            snprintf(e->failed, sizeof e->failed,
                     "service `%s` of %s was not started: `%s`, which it is started after, "
                     "exited before it was ready; its output: %s (wtproxy logs %s --front %d)",
                     e->svc.name, e->worktree, d->name, ds ? ds->log : "(none)", e->worktree,
                     d->front);
        else if (late)
            snprintf(e->failed, sizeof e->failed,
                     "service `%s` of %s was not started: `%s`, which it is started after, "
                     "was not ready within start_timeout; its output: %s (wtproxy logs %s --front "
                     "%d)",
                     e->svc.name, e->worktree, d->name, ds ? ds->log : "(none)", e->worktree,
                     d->front);
        e->failed_after = e->failed[0] != '\0';
        return e->failed[0] ? -1 : 0;
    }
    return load_ok(a, e, late);
}

static int needs_met(struct ondemand *a, struct started *e)
{
    return needs_met_by(a, e, proxy_now_ms(a->srv) - e->since_ms >= a->srv->cfg.start_timeout_ms);
}

/* The request's clock starts before the file is read, the start's after:
 * its start_timeout can end a poll before the tick gives the start up.
 * The request then gets the start's own reason (the load, a service it
 * waits for), not "did not start in time". */
const char *ondemand_give_up(struct ondemand *a, const char *worktree, int front)
{
    struct started *e = ondemand_find(a, worktree, front);
    if (!e || !e->waiting || needs_met_by(a, e, 1) >= 0)
        return NULL;
    e->waiting = 0;
    proxy_log("%s", e->failed);
    return e->failed;
}

/* Launch the waiting servers whose needs are ready; look again soon while
 * some still wait. */
static void tick(evutil_socket_t fd, short what, void *arg)
{
    struct ondemand *a = arg;
    int still = 0;
    (void)fd;
    (void)what;
    for (int i = 0; i < a->n; i++) {
        struct started *e = &a->list[i];
        int met = e->waiting ? needs_met(a, e) : 0;
        if (met < 0) {
            e->waiting = 0;
            proxy_log("%s", e->failed);
        } else if (met > 0) {
            ondemand_launch(a, e);
        }
        still |= e->waiting;
    }
    struct timeval tv = {0, WTP_WAIT_POLL_MS * 1000};
    if (still)
        evtimer_add(a->tick, &tv);
}

static void reap(evutil_socket_t fd, short what, void *arg)
{
    struct ondemand *a = arg;
    pid_t pid;
    int status;
    (void)fd;
    (void)what;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        for (int i = 0; i < a->n; i++)
            if (a->list[i].pid == pid) {
                a->list[i].pid = 0;
                a->list[i].status = status;
            }
}

/* Stop what has served no request for its idle_stop: SIGTERM to the group,
 * which `wtproxy run` passes on before it unregisters and exits. An
 * adopted server's idle time counts from its adoption: the requests the
 * dead daemon saw are not known. A server still starting is not idle, nor
 * one a request waits for (parked for its start, or in the gate): under
 * load a start slower than idle_stop was stopped under the request that
 * had started it, which got "exited with status 143 before it listened". */
static void sweep(evutil_socket_t fd, short what, void *arg)
{
    struct ondemand *a = arg;
    long long now = (long long)proxy_now_ms(a->srv);
    (void)fd;
    (void)what;
    for (int i = 0; i < a->n; i++) {
        struct started *e = &a->list[i];
        struct reg_backend *b = ondemand_running(a, e) && e->svc.idle_ms
                                    ? ondemand_registered(a, e->worktree, e->svc.front)
                                    : NULL;
        long long last = b ? b->registered_ms : 0;
        if (b && b->last_request_ms > last)
            last = b->last_request_ms;
        if (b && e->adopted_ms > last)
            last = e->adopted_ms;
        if (b && b->state == REG_READY && !b->active && now - last >= (long long)e->svc.idle_ms &&
            !conn_backend_awaited(a->srv, b)) {
            proxy_log("stopping %s's server%s%s: idle for %llu ms (idle_stop)%s", e->worktree,
                      e->svc.name[0] ? " for service " : "", e->svc.name, e->svc.idle_ms,
                      e->adopted ? "; it was adopted from the daemon that started it" : "");
            snprintf(b->stop_why, sizeof b->stop_why, "idle for %llu ms (idle_stop)",
                     e->svc.idle_ms);
            kill(-e->pid, SIGTERM);
        }
    }
}

struct ondemand *ondemand_new(struct proxy_server *s, const char *control_path, const char *log_dir)
{
    struct ondemand *a = calloc(1, sizeof *a);
    ssize_t n = a ? readlink("/proc/self/exe", a->exe, sizeof a->exe - 1) : -1;
    if (n <= 0) { /* the servers it starts are its own wtproxy run */
        proxy_log("no on-demand starts from .wtproxy files: %s%s",
                  a ? "cannot read /proc/self/exe, the wtproxy that runs each server: " : "",
                  a ? strerror(errno) : "out of memory");
        free(a);
        return NULL;
    }
    a->exe[n] = '\0';
    a->srv = s;
    snprintf(a->control, sizeof a->control, "WTPROXY_CONTROL=%s", control_path);
    snprintf(a->log_dir, sizeof a->log_dir, "%s", log_dir);
    struct timeval tv = {ONDEMAND_SWEEP_MS / 1000, (ONDEMAND_SWEEP_MS % 1000) * 1000};
    a->sigchld = evsignal_new(s->base, SIGCHLD, reap, a);
    a->sweep = event_new(s->base, -1, EV_PERSIST, sweep, a);
    a->tick = evtimer_new(s->base, tick, a);
    char why[256];
    a->reader = ondemand_reader_new(a, s->base, why, sizeof why);
    if (!a->reader)
        proxy_log("no on-demand starts from .wtproxy files: %s", why);
    if (!a->reader || !a->sigchld || !a->sweep || !a->tick || evsignal_add(a->sigchld, NULL) < 0 ||
        event_add(a->sweep, &tv) < 0) {
        ondemand_free(a);
        return NULL;
    }
    return a;
}

void ondemand_free(struct ondemand *a)
{
    if (!a)
        return;
    if (a->sigchld)
        event_free(a->sigchld);
    if (a->sweep)
        event_free(a->sweep);
    if (a->tick)
        event_free(a->tick);
    ondemand_reader_free(a->reader);
    free(a);
}
