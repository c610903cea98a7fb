/* dispatch.c - a parsed request on its way to a backend: the caller
 * identified (once per connection), the route picked, a starting or
 * reloading server waited for, a server the daemon starts from .wtproxy
 * awaited, and the /__whoami gate passed. Then upstream.c takes over; a
 * refusal goes back through conn_fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ondemand.h"
#include "ondemand_reader.h"
#include "ops.h"
#include "reg_db.h"
#include "conn.h"
#include "gate.h"
#include "host.h"
#include "packages.h"
#include "route.h"
#include "verify.h"

static void identified(void *arg, const struct identify_result *r)
{
    struct proxy_client *c = arg;
    c->ident_ticket = NULL;
    c->who = identify_keep(r);
    if (c->state == CS_IDENTIFY)
        conn_route(c);
    else if (c->state == CS_IDLE && c->who && c->who->placed) /* no request yet */
        ondemand_connected(c->srv->ondemand, c->who->worktree, c->listener->port);
}

void conn_identify_at_accept(struct proxy_client *c)
{
    struct identify_result r;
    if (!c->srv->ondemand || !route_needs_caller(c->srv, ""))
        return;
    if (identify_start(c->srv->ident, stream_fd(c->bev), identified, c, &r, &c->ident_ticket) != 0)
        identified(c, &r);
}

/* Identify the caller once per connection: at once from the caches, or
 * later from the worker (returns 0: route_continue runs again then). */
static int ensure_caller(struct proxy_client *c)
{
    struct identify_result r;
    if (c->who || !route_needs_caller(c->srv, c->route_name))
        return 1;
    if (!c->ident_ticket && identify_start(c->srv->ident, stream_fd(c->bev), identified, c, &r,
                                           &c->ident_ticket) != 0) {
        identified(c, &r);
        return 1;
    }
    c->state = CS_IDENTIFY; /* slowness costs time, never a guessed worktree */
    conn_arm_timer(c, WTP_IDENTIFY_TIMEOUT_MS);
    return 0;
}

/* The worktree this request belongs to when it is known by path: the
 * placed caller's, or an absolute X-Wtproxy-Worktree. NULL otherwise. */
static const char *request_worktree(struct proxy_client *c)
{
    if (c->route_name[0] == '/')
        return c->route_name;
    return c->who && c->who->placed && !c->route_name[0] ? c->who->worktree : NULL;
}

/* Fail c as kind with detail d, to which its server's last words are
 * added (their exit status too when with_status), whose fix is then the
 * page's Fix line: the one that names this server's cure and its start;
 * else other (NULL: the page's own). */
static void last_words_or(struct proxy_client *c, enum proxy_error kind, int front,
                          const char *worktree, int with_status, char *d, size_t len,
                          const char *other)
{
    char fix[CONN_FIX_MAX];
    int told = conn_last_words(c->srv, front, worktree, with_status, d, len, fix, sizeof fix);
    conn_fail_fix(c, kind, d, told ? fix : other);
}

static void last_words_fail(struct proxy_client *c, enum proxy_error kind, int front,
                            const char *worktree, int with_status, char *d, size_t len)
{
    last_words_or(c, kind, front, worktree, with_status, d, len, NULL);
}

/* No server for the request, and none to start: say why routing found
 * none, then why the worktree's .wtproxy starts none (note, or ""). */
static void no_backend(struct proxy_client *c, const char *note)
{
    char d[3072 + REG_START_FAILED_MAX + 2 * PATH_MAX];
    route_explain(c->srv, c->listener->port, c->route_error, c->route_name, c->who, note, d,
                  3072 + 2 * PATH_MAX);
    char fix[CONN_FIX_MAX];
    /* Its server exited lately: why, in its own words; else the note's
     * command (the main checkout's .wtproxy brought here). */
    if (c->route_error == PE_NO_BACKEND && request_worktree(c))
        last_words_or(c, PE_NO_BACKEND, c->listener->port, request_worktree(c), 1, d, sizeof d,
                      ondemand_note_fix(note, fix, sizeof fix) ? fix : NULL);
    else if (route_fix(c->srv, c->listener->port, c->route_error, c->who, fix, sizeof fix))
        conn_fail_fix(c, c->route_error, d, fix);
    else
        conn_fail(c, c->route_error, d);
}

/* No server for the request, and its worktree was removed. */
static void worktree_gone(struct proxy_client *c)
{
    char d[3072 + 2 * PATH_MAX], fix[CONN_FIX_MAX];
    route_explain_gone(c->srv, c->listener->port, c->route_name, c->who, d, sizeof d, fix,
                       sizeof fix);
    conn_fail_fix(c, PE_NO_BACKEND, d, fix);
}

/* The request's worktree's .wtproxy, read by a worker: it declared a
 * server for this front, started (or starting) by the daemon, and the
 * request waits for it; or what is the matter (ondemand.h's codes). */
static void declared_read(void *arg, int rc, const char *what)
{
    struct proxy_client *c = arg;
    c->file_ticket = NULL;
    if (rc == 0) {
        c->awaiting_start = 1;
        conn_wait(c, WTP_WAIT_POLL_MS);
    } else if (rc == ONDEMAND_BAD_FILE) {
        conn_fail(c, PE_BAD_WTPROXY_FILE, what);
    } else if (rc == ONDEMAND_START_FAILED) {
        conn_fail(c, PE_BACKEND_NOT_READY, what);
    } else if (rc == ONDEMAND_NOT_OURS) {
        conn_fail(c, PE_OTHER_USER, what);
    } else if (rc == ONDEMAND_GONE) {
        worktree_gone(c);
    } else {
        no_backend(c, what);
    }
}

/* No server for the request's worktree: its .wtproxy may declare one for
 * this front. The file is read off the loop (on NFS or FUSE a read can
 * take seconds); the request is parked meanwhile, as it is while a
 * server starts, within start_timeout. Returns 0 when parked. */
static int read_declared(struct proxy_client *c)
{
    const char *wt = request_worktree(c);
    if (!wt || c->route_error != PE_NO_BACKEND || !c->srv->ondemand)
        return -1;
    c->file_ticket =
        ondemand_ensure_front_later(c->srv->ondemand, wt, c->listener->port, declared_read, c);
    if (!c->file_ticket)
        return -1;
    c->state = CS_WAIT;
    conn_arm_timer(c, c->srv->cfg.start_timeout_ms);
    return 0;
}

/* Its .wtproxy's read did not come back within start_timeout. */
static void read_timeout(struct proxy_client *c)
{
    const char *wt = request_worktree(c);
    char d[2 * PATH_MAX + 256];
    ondemand_cancel(c->file_ticket);
    c->file_ticket = NULL;
    snprintf(d, sizeof d,
             "reading %s/.wtproxy took longer than start_timeout (%u ms): its "
             "filesystem does not answer; check it (ls %s), or start the server yourself: "
             "wtproxy run -- CMD {port}",
             wt, c->srv->cfg.start_timeout_ms, wt);
    conn_fail(c, PE_BACKEND_NOT_READY, d);
}

/* Route the parsed request (routing may need the caller first), then wait
 * for a starting backend or go to it. */
void conn_route(struct proxy_client *c)
{
    if (!ensure_caller(c))
        return;
    int front = c->listener->port;
    c->backend = route_pick(c->srv, front, c->route_name, c->who, &c->route_error);
    c->wait_since_ms = proxy_now_ms(c->srv);
    if (!c->backend && read_declared(c) == 0)
        return;
    if (!c->backend) {
        no_backend(c, "");
        return;
    }
    c->refused_since_ms = 0;
    if (c->backend->state == REG_STARTING)
        conn_wait(c, WTP_WAIT_POLL_MS);
    else
        conn_forward(c);
}

static void gate_verdict(struct proxy_client *c, int v, const char *detail)
{
    static const enum proxy_error refusal[] = {
        [WHOAMI_MISMATCH] = PE_CHECKOUT_MISMATCH,
        [WHOAMI_STALE] = PE_STALE_CODE,
        [WHOAMI_NO_WHOAMI] = PE_NO_WHOAMI,
        [WHOAMI_INVALID] = PE_WHOAMI_INVALID,
        [WHOAMI_UNREACHABLE] = PE_BACKEND_UNREACHABLE,
        [WHOAMI_APP_ERROR] = PE_APP_ERROR,
        [WHOAMI_BROKEN] = PE_BROKEN,
    };
    proxy_backend_show(c->backend);
    if (v == WHOAMI_PASS && c->backend->state == REG_STARTING) {
        /* Passed on the old process's answer while its restart began (a
         * trusted server's 404 names no process): the request waits for
         * the new one, within start_timeout, as any starting server's. */
        c->refused_since_ms = 0;
        conn_wait(c, WTP_WAIT_POLL_MS);
    } else if (v == WHOAMI_PASS) {
        upstream_start(c);
    } else if (v == WHOAMI_UNREACHABLE && whoami_server_hangs(c->backend->gate)) {
        conn_fail(c, PE_BACKEND_HANGS, detail);
    } else if (v == WHOAMI_MISMATCH && proxy_backend_target(c->srv, c->backend).other_front > 0) {
        /* The server there is another worktree's, in use: the detail says
         * to leave it running, and the Fix line must not say to stop it. */
        conn_fail_fix(c, PE_CHECKOUT_MISMATCH, detail,
                      "Leave the server named above running: it is another worktree's. Drop "
                      "your worktree's registration of its port and start your own (the "
                      "command is above).");
    } else {
        conn_fail(c, refusal[v], detail);
    }
}

static void gate_answered(void *arg, enum whoami_verdict v, const char *detail)
{
    struct proxy_client *c = arg;
    c->gate_ticket = NULL;
    gate_verdict(c, (int)v, detail);
}

/* A registered backend serves the request only once the /__whoami gate
 * has found it serving its worktree's checkout and the code on disk now.
 * (The default backend is the user's own fallback: not checked.) */
void conn_forward(struct proxy_client *c)
{
    struct reg_backend *b = c->backend;
    char detail[4096];
    if (!c->srv->gate || !b->worktree[0]) {
        upstream_start(c);
        return;
    }
    if (!proxy_backend_gate(c->srv, b)) {
        snprintf(detail, sizeof detail, "out of memory while checking %s", b->name);
        conn_fail(c, PE_WHOAMI_INVALID, detail);
        return;
    }
    struct whoami_target t = proxy_backend_target(c->srv, b);
    int v =
        whoami_gate_check(b->gate, &t, gate_answered, c, &c->gate_ticket, detail, sizeof detail);
    if (v >= 0) {
        gate_verdict(c, v, detail);
        return;
    }
    /* The gate answers within its own deadlines (whoami_timeout and the
     * graces) or once the disk's fingerprint is computed; the body, if
     * any, waits in the input buffer meanwhile. */
    c->state = CS_VERIFY;
    conn_stop_timer(c);
}

/* Poll the backend again in ms: the registry never calls into the proxy,
 * so a request for a starting (or reloading) server checks back. */
void conn_wait(struct proxy_client *c, unsigned ms)
{
    c->state = CS_WAIT;
    conn_arm_timer(c, ms);
}

/* The refusal for a start given up: one a service it is started after
 * failed says so, so that its fix does not send the reader to this
 * service's log. */
static enum proxy_error not_started(struct proxy_client *c, const char *wt, int front)
{
    return ondemand_failed_after(c->srv->ondemand, wt, front) ? PE_AFTER_NOT_READY
                                                              : PE_BACKEND_NOT_READY;
}

/* The 503 of a .wtproxy server that exited, as ondemand_exit_note told
 * it: before it listened, or after it had served (its headline then says
 * so: a kill -9 of a server that had served for minutes did not exit
 * "before it listened"). */
static enum proxy_error exit_kind(int exited)
{
    return exited == 2 ? PE_BACKEND_ENDED : PE_BACKEND_EXITED;
}

/* Polling for the registration of a server the daemon started. */
static void await_started(struct proxy_client *c)
{
    const char *wt = request_worktree(c);
    int front = c->listener->port;
    char log[PATH_MAX + 64] = "", d[4 * PATH_MAX + REG_START_FAILED_MAX], what[PATH_MAX + 128];
    const char *failed;
    int exited;
    c->backend = route_pick(c->srv, front, c->route_name, c->who, &c->route_error);
    if (c->backend) {
        c->awaiting_start = 0;
        conn_wait(c, 0); /* on as any starting backend */
    } else if ((failed = ondemand_failed(c->srv->ondemand, wt, front))) {
        conn_fail(c, not_started(c, wt, front), failed);
    } else if ((exited = ondemand_exit_note(c->srv->ondemand, wt, front, d, sizeof d))) {
        last_words_fail(c, exit_kind(exited), front, wt, 0, d, sizeof d);
    } else if (proxy_now_ms(c->srv) - c->wait_since_ms >= c->srv->cfg.start_timeout_ms &&
               (failed = ondemand_give_up(c->srv->ondemand, wt, front))) {
        conn_fail(c, not_started(c, wt, front), failed);
    } else if (proxy_now_ms(c->srv) - c->wait_since_ms >= c->srv->cfg.start_timeout_ms) {
        ondemand_exited(c->srv->ondemand, wt, front, log, sizeof log);
        ondemand_named(c->srv->ondemand, wt, front, what, sizeof what);
        snprintf(d, sizeof d, "%s did not start within start_timeout; its output: %s", what, log);
        conn_fail(c, PE_BACKEND_NOT_READY, d);
    } else {
        conn_wait(c, WTP_WAIT_POLL_MS);
    }
}

/* b's wrapper saw its server fail while it lives on (an autoreloader that
 * waits for a change to its files, or a server listening on another port
 * than the one it was given): said at once with its last lines, not
 * after start_timeout, which a test runner's own timeout ends first; and
 * said as what it is, a failed start, an edit that broke a server that
 * served, or a start line that ignores {port}, which is where its reader
 * looks for the cause. The page's headline says which (error_page.c) and
 * its fix what to do, so the detail says only whose server it is and its
 * last lines: each thing once. */
static void start_failed(struct proxy_client *c, const struct reg_backend *b)
{
    char fix[4 * PATH_MAX] = "", under[96] = "";
    char d[REG_START_FAILED_MAX + sizeof fix + PATH_MAX + 256];
    char db[REG_DB_NAME_MAX + 1], base[REG_DB_NAME_MAX + 1], down[600];
    static const enum proxy_error kinds[] = {
        [REG_FAILED_START] = PE_START_FAILED,
        [REG_FAILED_EDIT] = PE_EDIT_FAILED,
        [REG_FAILED_PORT] = PE_WRONG_PORT,
        [REG_FAILED_DIED] = PE_SERVER_DIED,
    };
    enum proxy_error kind = kinds[b->start_failed_when];
    if (b->start_failed_when != REG_FAILED_PORT)
        snprintf(under, sizeof under, ", under %s",
                 b->reloader[0] ? b->reloader : "its autoreloader");
    /* A new worktree's dev database not claimed yet: no edit helps. */
    if (kind == PE_START_FAILED &&
        reg_db_missing_dev(b->start_failed, reg_machine_id(), b->worktree, db, sizeof db, base,
                           sizeof base)) {
        kind = PE_START_NO_DB;
        snprintf(fix, sizeof fix,
                 "\nits database %s is this worktree's dev database, which does not exist yet: "
                 "cd %s && wtproxy db claim --dev %s, then migrate it (Django: manage.py "
                 "migrate), then wtproxy restart --front %d",
                 db, b->worktree, base, b->front);
    } else if (kind == PE_START_FAILED && reg_db_refused(b->start_failed, down, sizeof down)) {
        /* Its PostgreSQL is down: no edit helps, its start does. */
        kind = PE_START_DB_DOWN;
        snprintf(fix, sizeof fix, "\n%s, then wtproxy restart --front %d", down, b->front);
    }
    /* A new worktree without node_modules: no edit helps either, and
     * the package its error names is in no registry as wtproxy's. Nor
     * for a package of the app's own that is not installed there. */
    if (kind != PE_WRONG_PORT && kind != PE_SERVER_DIED && kind != PE_START_NO_DB &&
        kind != PE_START_DB_DOWN &&
        whoami_missing_package(b->start_failed, b->worktree, fix + 1, sizeof fix - 1)) {
        kind = PE_START_NO_WHOAMI;
        fix[0] = '\n';
    } else if (kind != PE_WRONG_PORT && kind != PE_SERVER_DIED && kind != PE_START_NO_DB &&
               kind != PE_START_DB_DOWN &&
               host_deps_missing(b->start_failed, b->command, b->worktree, fix + 1,
                                 sizeof fix - 1)) {
        kind = PE_START_NO_DEPS;
        fix[0] = '\n';
    }
    snprintf(d, sizeof d, "%s's server (pid %d%s) does not serve on port %d; its last lines:\n%s%s",
             b->worktree, (int)b->pid, under, b->port, b->start_failed, fix);
    conn_fail(c, kind, d);
}

/* b failed and waits for a change to its files, and a file its last lines
 * name changed since, longer ago than its reloader takes to see it: its
 * reloader never will (it took its first look after the save). Restarted
 * when its wrapper restarts it on stale code (--restart-on-stale), the
 * request waiting for it; else refused saying so, with the restart.
 * Returns 1 when c is answered or waits. */
static int fixed_unseen(struct proxy_client *c, struct reg_backend *b)
{
    char file[PATH_MAX], d[REG_START_FAILED_MAX + 2 * PATH_MAX + 512];
    if (b->start_failed_when == REG_FAILED_PORT || b->start_failed_when == REG_FAILED_DIED ||
        !reg_failed_fixed(b->start_failed, b->worktree, b->start_failed_ms, file, sizeof file))
        return 0;
    if (b->restart_on_stale &&
        proxy_restart_wrapper(c->srv, b, "its files changed since it failed") == 0) {
        conn_wait(c, WTP_WAIT_POLL_MS);
        return 1;
    }
    snprintf(d, sizeof d,
             "%s's server (pid %d, under %s) does not serve on port %d: its files changed since "
             "it failed (%s), yet its reloader did not start it again: wtproxy restart --front "
             "%d; its last lines before:\n%s",
             b->worktree, (int)b->pid, b->reloader[0] ? b->reloader : "its autoreloader", b->port,
             file, b->front, b->start_failed);
    conn_fail(c, PE_FIXED_UNSEEN, d);
    return 1;
}

/* b ended while the request waited for it (a restart whose new process
 * exited at start, a server killed), and no start of this daemon says
 * how: said with its log. One an earlier daemon started from the
 * .wtproxy (adopted after a kill -9) is the .wtproxy's to start again,
 * never "start your dev server with wtproxy run". */
static void ended(struct proxy_client *c, const struct reg_backend *b)
{
    char d[5 * PATH_MAX + REG_START_FAILED_MAX], log[2 * PATH_MAX + 64] = "";
    if (b->log[0])
        snprintf(log, sizeof log, "; its output: %s (wtproxy logs %s --front %d)", b->log,
                 b->worktree, b->front);
    if (b->daemon_started && b->log[0]) {
        snprintf(d, sizeof d,
                 "the server that %s/.wtproxy declares (wrapper pid %d) exited before it "
                 "served this request%s",
                 b->worktree, (int)b->pid, log);
        /* One that served (its restart after an edit, or an edit, broke
         * it) did not exit "before it listened". */
        last_words_fail(c, b->been_ready ? PE_BACKEND_ENDED : PE_BACKEND_EXITED, b->front,
                        b->worktree, 1, d, sizeof d);
        return;
    }
    snprintf(d, sizeof d, "the dev server of %s ended before it served this request%s", b->worktree,
             log);
    last_words_fail(c, PE_NO_BACKEND, b->front, b->worktree, 1, d, sizeof d);
}

/* Why b was not ready within start_timeout, into d: it listens and its
 * ready path answered otherwise each time since (its wrapper's `not-ready`
 * note), or it did not listen. Said as which, for "it did not listen, or
 * its ready path did not answer" sent its reader to both. */
static void not_ready(struct proxy_client *c, const struct reg_backend *b, char *d, size_t len)
{
    char since[32];
    if (b->not_ready[0]) {
        host_age(host_wall_ms() - b->not_ready_ms, since, sizeof since);
        snprintf(d, len,
                 "%s (pid %d) was not ready on port %d within start_timeout (%u ms): it listens, "
                 "but its ready path (ready = in the .wtproxy, --health) did not answer 2xx or "
                 "3xx: %s, each time for the last %s; its output: wtproxy logs %s --front %d",
                 b->worktree, (int)b->pid, b->port, c->srv->cfg.start_timeout_ms, b->not_ready,
                 since, b->worktree, b->front);
        return;
    }
    snprintf(d, len,
             "%s (pid %d) was not ready on port %d within start_timeout (%u ms): it did not listen "
             "there; its output: wtproxy logs %s --front %d",
             b->worktree, (int)b->pid, b->port, c->srv->cfg.start_timeout_ms, b->worktree,
             b->front);
}

void conn_wait_timeout(struct proxy_client *c)
{
    if (c->file_ticket) {
        read_timeout(c);
        return;
    }
    if (c->awaiting_start) {
        await_started(c);
        return;
    }
    struct reg_backend *b = c->backend;
    unsigned long long waited = proxy_now_ms(c->srv) - c->wait_since_ms;
    char d[4 * PATH_MAX + REG_START_FAILED_MAX];
    unsigned load;
    int exited = 0;
    if (b->state == REG_DEAD && c->srv->ondemand &&
        (exited = ondemand_exit_note(c->srv->ondemand, b->worktree, b->front, d, sizeof d))) {
        last_words_fail(c, exit_kind(exited), b->front, b->worktree, 0, d, sizeof d);
    } else if (b->state == REG_DEAD && c->srv->ondemand && waited < c->srv->cfg.start_timeout_ms &&
               strcmp(ondemand_state(c->srv->ondemand, b->worktree, b->front, &load), "launched") ==
                   0) {
        /* Its wrapper unregistered it and is exiting: its status, soon
         * reaped, says more than "ended". */
        conn_wait(c, WTP_WAIT_POLL_MS);
    } else if (b->state == REG_DEAD) {
        ended(c, b);
    } else if (b->state == REG_STARTING && b->start_failed[0] && fixed_unseen(c, b)) {
        return;
    } else if (b->state == REG_STARTING && b->start_failed[0]) {
        start_failed(c, b); /* before a reload_grace retry: its server will not listen */
    } else if (b->state == REG_READY || c->refused_since_ms) {
        conn_forward(c);
    } else if (waited >= c->srv->cfg.start_timeout_ms) {
        not_ready(c, b, d, sizeof d);
        conn_fail(c, PE_BACKEND_NOT_READY, d);
    } else {
        conn_wait(c, WTP_WAIT_POLL_MS);
    }
}

int conn_backend_awaited(struct proxy_server *s, const struct reg_backend *b)
{
    struct proxy_client *c;
    TAILQ_FOREACH(c, &s->clients, link)
        if (c->backend == b && (c->state == CS_WAIT || c->state == CS_VERIFY))
            return 1;
    return 0;
}

/* b's start failed while its process lives on, which its wrapper told
 * after b was ready (an edit broke the server and its autoreloader waits
 * for the next), or b was dropped (its wrapper exited: a restart whose new
 * process died at start): the requests that met the server gone are
 * waiting for it in the gate (its /__whoami unanswered) or retrying its
 * port, each for reload_grace or start_timeout. Each is looked at again
 * now, and gets the failure's 503. A server whose serving process died
 * under a reloader that holds its port ("died") never answers the
 * requests relayed to it since either: nobody accepted them, and each
 * waited response_timeout (120 s) for its head; those get the 503 now. */
void conn_backend_failed(struct proxy_server *s, const struct reg_backend *b)
{
    struct proxy_client *c, *next;
    for (c = TAILQ_FIRST(&s->clients); c; c = next) {
        next = TAILQ_NEXT(c, link); /* a refusal may close c */
        if (c->backend == b && c->state == CS_FORWARD && c->req_done && !c->resp_bytes &&
            b->state == REG_STARTING && b->start_failed[0] &&
            b->start_failed_when == REG_FAILED_DIED) {
            start_failed(c, b);
            continue;
        }
        if (c->backend != b || (c->state != CS_VERIFY && c->state != CS_WAIT) || c->awaiting_start)
            continue;
        whoami_gate_cancel(s->gate, c->gate_ticket);
        c->gate_ticket = NULL;
        conn_wait(c, 0); /* conn_wait_timeout refuses it, from the loop */
    }
}
