/* gate.c - see gate.h. One entry per backend the gate has seen, holding a
 * reference to it, its last /__whoami answer and the requests waiting for
 * the next one. Entries of backends the registry dropped go at the next
 * check. */
#include "gate.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/time.h>

#include "fetch.h"
#include "host.h"
#include "refusal.h"
#include "tree.h"
#include "whoami.h"

enum decision { D_PASS = WHOAMI_PASS, D_FETCH = 100, D_RETRY };

struct waiter {
    struct entry *e;
    char worktree[PATH_MAX];
    long long since_ms;
    whoami_gate_cb cb;
    void *arg;
    TAILQ_ENTRY(waiter) link;
};

struct entry {
    struct whoami_gate *g;
    struct reg_backend *b;        /* one reference */
    struct whoami_fetch *fetch;   /* an exchange in flight */
    struct event *poll;           /* the next exchange, for waiters */
    int have;                     /* an exchange ended: res and the rest hold */
    struct whoami_fetch_reply res; /* body and error not kept: see below */
    char problem[256];            /* why res is not a usable answer */
    struct whoami_answer ans;
    int have_ans;
    long long asked_ms;           /* when the exchange behind res began */
    long long restart_ms;         /* when we asked its wrapper to restart it, 0 not */
    unsigned long listener;       /* inode of the socket listening when asked; 0 unknown */
    long long listener_ms;        /* when it was last compared with the one there now */
    int refresh;                  /* a background re-ask is due (WHOAMI_REVERIFY_MS) */
    int answered;                 /* it has given a usable answer before */
    int settling;                 /* settle() is running its waiters' callbacks */
    TAILQ_HEAD(, waiter) waiters;
    LIST_ENTRY(entry) link;
};

struct whoami_gate {
    struct event_base *base;
    struct whoami_gate_config cfg;
    struct whoami_trees *trees;
    struct host_diag *diag; /* NULL without sock_diag: swaps are found by re-asking */
    LIST_HEAD(, entry) entries;
};

static const char *const reasons[] = {
    [WHOAMI_PASS] = "pass",
    [WHOAMI_MISMATCH] = "checkout-mismatch",
    [WHOAMI_STALE] = "stale-code",
    [WHOAMI_NO_WHOAMI] = "no-whoami",
    [WHOAMI_INVALID] = "whoami-invalid",
    [WHOAMI_UNREACHABLE] = "backend-unreachable",
};

const char *whoami_verdict_reason(enum whoami_verdict v) { return reasons[v]; }

static long long now_ms(struct whoami_gate *g)
{
    struct timeval tv;
    event_base_gettimeofday_cached(g->base, &tv);
    return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void entry_free(struct entry *e)
{
    struct waiter *w;
    while ((w = TAILQ_FIRST(&e->waiters))) {
        TAILQ_REMOVE(&e->waiters, w, link);
        free(w);
    }
    whoami_fetch_cancel(e->fetch);
    if (e->poll)
        event_free(e->poll);
    if (e->have_ans)
        whoami_answer_free(&e->ans);
    LIST_REMOVE(e, link);
    reg_backend_unref(e->b);
    free(e);
}

static void poll_cb(evutil_socket_t fd, short what, void *arg);

/* The entry for b; entries of dropped backends with nobody waiting go. */
static struct entry *entry_for(struct whoami_gate *g, struct reg_backend *b)
{
    struct entry *e, *next, *found = NULL;
    for (e = LIST_FIRST(&g->entries); e; e = next) {
        next = LIST_NEXT(e, link);
        if (e->b == b)
            found = e;
        else if (e->b->state == REG_DEAD && TAILQ_EMPTY(&e->waiters) && !e->settling)
            entry_free(e);
    }
    if (found || !(found = calloc(1, sizeof *found)))
        return found;
    if (!(found->poll = evtimer_new(g->base, poll_cb, found))) {
        free(found);
        return NULL;
    }
    found->g = g;
    found->b = reg_backend_ref(b);
    TAILQ_INIT(&found->waiters);
    LIST_INSERT_HEAD(&g->entries, found, link);
    return found;
}

/* --- what the gate shows in ls and the dashboard --- */

static void show(struct entry *e, const char *state, const char *detail, const char *disk_hash)
{
    struct reg_whoami *w = &e->b->whoami;
    snprintf(w->state, sizeof w->state, "%s", state);
    snprintf(w->detail, sizeof w->detail, "%s", detail ? detail : "");
    snprintf(w->checkout, sizeof w->checkout, "%s", e->have_ans ? e->ans.checkout : "");
    snprintf(w->hash, sizeof w->hash, "%s", e->have_ans ? e->ans.hash : "");
    snprintf(w->disk_hash, sizeof w->disk_hash, "%s", disk_hash ? disk_hash : "");
    w->checked_ms = e->asked_ms;
}

/* --- deciding --- */

/* The inode of the socket listening on b's address now; 0 none, unknown. */
static unsigned long listener_now(struct whoami_gate *g, const struct reg_backend *b)
{
    unsigned long inode;
    uid_t uid;
    if (!g->diag ||
        host_diag_socket(g->diag, (const struct sockaddr *)&b->addr, NULL, &inode, &uid) < 0)
        return 0;
    return inode;
}

/* Whether another socket listens on e's backend address than the one that
 * gave its answer: a server swapped behind the port (a recycled port, a
 * registration with a TTL outliving its server) has not answered yet. */
static int listener_moved(struct entry *e, long long now)
{
    if (!e->listener || now - e->listener_ms < WHOAMI_LISTENER_MS)
        return 0;
    e->listener_ms = now;
    return listener_now(e->g, e->b) != e->listener;
}

/* Ask the wrapper of a server started with --restart-on-stale to restart
 * it (SIGUSR1; reg_run.c), once per staleness. Its pid is checked against
 * its start time first: a reused pid is never signalled. */
static int ask_restart(struct entry *e, long long now)
{
    struct reg_backend *b = e->b;
    if (!b->restart_on_stale || b->pid <= 0 || e->restart_ms)
        return 0;
    if (host_pid_start(b->pid) != b->pid_start || kill(b->pid, SIGUSR1) < 0)
        return 0;
    e->restart_ms = now;
    return 1;
}

static int restarting(const struct entry *e, long long now)
{
    return e->restart_ms && now - e->restart_ms < e->g->cfg.start_timeout_ms;
}

/* The answer agrees on the checkout: compare its fingerprint with the
 * disk's, giving a stale server its grace. */
static int decide_code(struct entry *e, const char *wt, long long since, long long now,
                       char *detail, size_t detlen)
{
    struct whoami_gate *g = e->g;
    long long changed_ms;
    char err[512];
    const struct whoami_fp *disk =
        whoami_tree_current(g->trees, wt, &e->ans.patterns, now, &changed_ms, err, sizeof err);
    if (!disk) {
        whoami_refusal_unreadable(e->b, wt, err, detail, detlen);
        show(e, "invalid", detail, NULL);
        return WHOAMI_INVALID;
    }
    if (strcmp(disk->hash, e->ans.hash) == 0) {
        e->restart_ms = 0;
        /* The hot path: shown once per answer, not copied per request. */
        if (e->b->whoami.checked_ms != e->asked_ms || strcmp(e->b->whoami.state, "verified"))
            show(e, "verified", "serves the code on disk", disk->hash);
        return D_PASS;
    }
    /* The answer predates the last change on disk: the server may have
     * reloaded since. Only a fresh answer can say it is stale. */
    if (e->asked_ms < changed_ms || e->asked_ms < since)
        return D_FETCH;
    if (ask_restart(e, now) || restarting(e, now) || now - since < g->cfg.stale_grace_ms)
        return D_RETRY;
    whoami_refusal_stale(e->b, &e->ans, disk, e->restart_ms != 0, detail, detlen);
    show(e, "stale", detail, disk->hash);
    return WHOAMI_STALE;
}

/* No /__whoami and --trust-registry: the registration says which checkout
 * it serves, and a fingerprinted file newer than the server is stale. */
static int decide_trusted(struct entry *e, const char *wt, long long now, char *detail,
                          size_t detlen)
{
    struct reg_backend *b = e->b;
    long long changed_ms, started = b->started_ms ? b->started_ms : b->registered_ms;
    char err[512];
    if (strcmp(b->worktree, wt) != 0) {
        whoami_refusal_trusted_mismatch(b, wt, detail, detlen);
        show(e, "mismatch", detail, NULL);
        return WHOAMI_MISMATCH;
    }
    const struct whoami_fp *disk = whoami_tree_current(e->g->trees, wt, whoami_default_patterns(),
                                                       now, &changed_ms, err, sizeof err);
    if (disk && whoami_refusal_newer_files(disk, started, detail, detlen) == 0) {
        show(e, "trusted", "no /__whoami; trusted: no file changed since it started",
             disk->hash);
        return D_PASS;
    }
    if (!disk)
        whoami_refusal_unreadable(b, wt, err, detail, detlen);
    else
        whoami_refusal_trusted_stale(b, detail, detlen);
    show(e, "stale", detail, disk ? disk->hash : NULL);
    return WHOAMI_STALE;
}

static int decide(struct entry *e, const char *wt, long long since, char *detail, size_t detlen)
{
    struct whoami_gate *g = e->g;
    long long now = now_ms(g);
    int fresh = e->have && e->asked_ms >= since;
    if (!e->have || (!fresh && e->have_ans && listener_moved(e, now)))
        return D_FETCH;
    /* A server we asked to restart answers nothing, or not in time, for a
     * while: only its fresh answer counts, within start_timeout. */
    if (restarting(e, now) && !(fresh && e->have_ans))
        return fresh ? D_RETRY : D_FETCH;
    /* A server that has answered before and now answers nothing, not in
     * time, or only half (an autoreloader kills the old process while it
     * answers, and on a busy machine binds its port well before it
     * serves) is most likely starting again: waited for like one that does
     * not listen. One that never answered is refused at once. */
    if (e->res.result == WF_UNREACHABLE ||
        ((e->res.result == WF_TIMEOUT || e->res.result == WF_CUT) && e->answered)) {
        if (!fresh)
            return D_FETCH;
        if (restarting(e, now) || now - since < g->cfg.reload_grace_ms)
            return D_RETRY;
        snprintf(detail, detlen, "GET /__whoami to %s (%s): %s", e->b->name, e->b->worktree,
                 e->problem);
        return WHOAMI_UNREACHABLE;
    }
    /* A verified answer is trusted until the disk changes; any other is
     * asked again for each request that finds it older than itself. */
    if (!e->have_ans || strcmp(e->ans.checkout, wt) != 0) {
        if (!fresh && now - e->asked_ms >= WHOAMI_RECHECK_MS)
            return D_FETCH;
    }
    if (e->res.result == WF_OK && e->res.status != 200 && !e->have_ans) {
        if (g->cfg.trust_registry)
            return decide_trusted(e, wt, now, detail, detlen);
        whoami_refusal_no_whoami(e->b, e->res.status, detail, detlen);
        show(e, "no-whoami", detail, NULL);
        return WHOAMI_NO_WHOAMI;
    }
    if (!e->have_ans) {
        whoami_refusal_invalid(e->b, e->problem, detail, detlen);
        show(e, "invalid", detail, NULL);
        return WHOAMI_INVALID;
    }
    if (strcmp(e->ans.checkout, wt) != 0) {
        whoami_refusal_mismatch(e->b, &e->ans, wt, detail, detlen);
        show(e, "mismatch", detail, NULL);
        return WHOAMI_MISMATCH;
    }
    return decide_code(e, wt, since, now, detail, detlen);
}

/* --- asking --- */

static void fetched(void *arg, const struct whoami_fetch_reply *r);

static void start_fetch(struct entry *e)
{
    struct reg_backend *b = e->b;
    if (e->fetch)
        return;
    e->asked_ms = e->listener_ms = now_ms(e->g);
    /* Before asking: a server that takes the port after this is another
     * listener, whatever it answers to this exchange. */
    e->listener = listener_now(e->g, b);
    e->fetch = whoami_fetch_start(e->g->base, (struct sockaddr *)&b->addr, b->addrlen, b->name,
                                  e->g->cfg.timeout_ms, fetched, e);
    if (!e->fetch) {
        struct whoami_fetch_reply r = {WF_UNREACHABLE, 0, NULL, 0, strerror(errno)};
        /* Answered from the loop, like every other outcome. */
        e->fetch = NULL;
        fetched(e, &r);
    }
}

/* Keep the outcome: a usable answer parsed, or why there is none. */
static void keep(struct entry *e, const struct whoami_fetch_reply *r)
{
    if (e->have_ans)
        whoami_answer_free(&e->ans);
    e->have_ans = 0;
    e->have = 1;
    e->res = *r;
    e->res.body = NULL;
    e->res.error = NULL;
    e->problem[0] = '\0';
    if (r->result != WF_OK) {
        snprintf(e->problem, sizeof e->problem, "%s", r->error);
    } else if (r->status == 200) {
        char err[256];
        if (whoami_answer_parse(r->body, r->len, &e->ans, err, sizeof err) == 0)
            e->have_ans = e->answered = 1;
        else
            snprintf(e->problem, sizeof e->problem, "%s", err);
    }
}

static void settle(struct entry *e);
static void ask_soon(struct entry *e, unsigned ms);

static void fetched(void *arg, const struct whoami_fetch_reply *r)
{
    struct entry *e = arg;
    e->fetch = NULL;
    keep(e, r);
    settle(e);
}

/* Decide for every waiter; those still undecided wait for the next ask. */
static void settle(struct entry *e)
{
    struct waiter *w, *next;
    int again = 0, ask = 0;
    char detail[4096];
    /* A callback may start the client's next request, and so a check that
     * sweeps entries: not this one meanwhile. */
    e->settling++;
    for (w = TAILQ_FIRST(&e->waiters); w; w = next) {
        next = TAILQ_NEXT(w, link);
        int d = decide(e, w->worktree, w->since_ms, detail, sizeof detail);
        if (d == D_FETCH || d == D_RETRY) {
            ask |= d == D_FETCH;
            again = 1;
            continue;
        }
        TAILQ_REMOVE(&e->waiters, w, link);
        if (d != WHOAMI_PASS)
            e->b->whoami.refused++;
        w->cb(w->arg, (enum whoami_verdict)d, detail);
        free(w);
    }
    /* After the loop: a fetch that fails at once settles again, here. */
    e->settling--;
    if (ask)
        start_fetch(e);
    else if (again)
        ask_soon(e, WHOAMI_POLL_MS);
}

static void poll_cb(evutil_socket_t fd, short what, void *arg)
{
    struct entry *e = arg;
    (void)fd;
    (void)what;
    if (!TAILQ_EMPTY(&e->waiters) || e->refresh)
        start_fetch(e);
    e->refresh = 0;
}

/* Ask from the loop in ms, never from inside a check: a fetch that fails
 * at once settles its waiters, and the one being added must first have
 * its ticket. An earlier pending ask stands. */
static void ask_soon(struct entry *e, unsigned ms)
{
    struct timeval tv = {0, (long)ms * 1000};
    if (!evtimer_pending(e->poll, NULL))
        evtimer_add(e->poll, &tv);
}

int whoami_gate_check(struct whoami_gate *g, struct reg_backend *b, const char *worktree,
                      whoami_gate_cb cb, void *arg, void **ticket, char *detail,
                      size_t detlen)
{
    struct entry *e = entry_for(g, b);
    long long since = now_ms(g);
    *ticket = NULL;
    if (!e) {
        snprintf(detail, detlen, "out of memory while checking %s", b->name);
        return WHOAMI_INVALID;
    }
    /* Decided on what is known, even while an answer is on its way: a
     * verified server's requests never wait for the background re-ask. */
    int d = decide(e, worktree, since, detail, detlen);
    if (d == D_FETCH && e->fetch)
        d = D_RETRY; /* the answer on its way will do */
    if (d == WHOAMI_PASS && since - e->asked_ms >= WHOAMI_REVERIFY_MS && !e->fetch) {
        e->refresh = 1; /* in the background: this request goes on */
        ask_soon(e, 0);
    }
    if (d != D_FETCH && d != D_RETRY) {
        if (d != WHOAMI_PASS)
            b->whoami.refused++;
        return d;
    }
    struct waiter *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(detail, detlen, "out of memory while checking %s", b->name);
        return WHOAMI_INVALID;
    }
    w->e = e;
    w->since_ms = since;
    w->cb = cb;
    w->arg = arg;
    snprintf(w->worktree, sizeof w->worktree, "%s", worktree);
    TAILQ_INSERT_TAIL(&e->waiters, w, link);
    if (!e->fetch)
        ask_soon(e, d == D_FETCH ? 0 : WHOAMI_POLL_MS);
    *ticket = w;
    return -1;
}

void whoami_gate_forget(struct whoami_gate *g, struct reg_backend *b)
{
    struct entry *e;
    LIST_FOREACH(e, &g->entries, link)
        if (e->b == b && !e->fetch)
            e->have = 0;
}

void whoami_gate_cancel(struct whoami_gate *g, void *ticket)
{
    struct waiter *w = ticket;
    (void)g;
    if (!w)
        return;
    TAILQ_REMOVE(&w->e->waiters, w, link);
    free(w);
}

struct whoami_gate *whoami_gate_new(struct event_base *base, const struct whoami_gate_config *cfg)
{
    struct whoami_gate *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->base = base;
    g->cfg = *cfg;
    LIST_INIT(&g->entries);
    char err[256];
    g->diag = host_diag_open(err, sizeof err);
    if (!(g->trees = whoami_trees_new(base, cfg->use_inotify))) {
        host_diag_close(g->diag);
        free(g);
        return NULL;
    }
    return g;
}

void whoami_gate_configure(struct whoami_gate *g, const struct whoami_gate_config *cfg)
{
    g->cfg = *cfg;
}

void whoami_gate_free(struct whoami_gate *g)
{
    if (!g)
        return;
    while (!LIST_EMPTY(&g->entries))
        entry_free(LIST_FIRST(&g->entries));
    whoami_trees_free(g->trees);
    host_diag_close(g->diag);
    free(g);
}
