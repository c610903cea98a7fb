/* gate.c - see gate.h. The I/O around decide.c's decision: asking
 * /__whoami (fetch.c), the timers that re-ask, the requests waiting, the
 * disk's fingerprint (tree.c, on its worker); the facts the decision asks
 * for are judge.c's. One whoami_server per server its caller checks,
 * holding its last answer and the requests waiting for the next one. */
#include "gate.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "gate_impl.h"
#include "host.h"
#include "refusal.h"
#include "tree.h"

/* Cancel what s has under way; it keeps its answer. */
static void server_stop(struct whoami_server *s)
{
    struct waiter *w;
    while ((w = TAILQ_FIRST(&s->waiters))) {
        TAILQ_REMOVE(&s->waiters, w, link);
        free(w);
    }
    whoami_fetch_cancel(s->fetch);
    s->fetch = NULL;
    if (s->poll)
        event_free(s->poll);
    s->poll = NULL;
    whoami_recheck_stop(s);
    if (s->recheck)
        event_free(s->recheck);
    s->recheck = NULL;
}

static void server_free(struct whoami_server *s)
{
    server_stop(s);
    whoami_holders_drop(s);
    whoami_ignored_drop(s);
    if (s->g)
        LIST_REMOVE(s, link);
    if (s->have_ans)
        whoami_answer_free(&s->ans);
    if (s->have_good)
        whoami_answer_free(&s->good);
    free(s);
}

/* Servers released during a callback go once no callback runs. */
static void unbusy(struct whoami_gate *g)
{
    struct whoami_server *s, *next;
    if (--g->busy)
        return;
    for (s = LIST_FIRST(&g->servers); s; s = next) {
        next = LIST_NEXT(s, link);
        if (s->released)
            server_free(s);
    }
}

static void poll_cb(evutil_socket_t fd, short what, void *arg);

struct whoami_server *whoami_server_new(struct whoami_gate *g)
{
    struct whoami_server *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (!(s->poll = evtimer_new(g->base, poll_cb, s)) ||
        !(s->recheck = evtimer_new(g->base, whoami_recheck_cb, s))) {
        if (s->poll)
            event_free(s->poll);
        free(s);
        return NULL;
    }
    s->g = g;
    TAILQ_INIT(&s->waiters);
    LIST_INSERT_HEAD(&g->servers, s, link);
    return s;
}

/* The folder inside s's worktree its answer names (decide.c fingerprints
 * it: a Go module in api/), NULL when it names another. */
static const char *answer_inside(const struct whoami_server *s)
{
    return s->have_ans && s->t.checkout && whoami_inside(s->ans.checkout, s->t.checkout)
               ? s->ans.checkout
               : NULL;
}

/* Whether o is checked against root's trees: its worktree's, or those of
 * the folder inside it its answer names. */
static int checked_at(const struct whoami_server *o, const char *root)
{
    const char *inside = answer_inside(o);
    return (o->t.checkout && strcmp(o->t.checkout, root) == 0) ||
           (inside && strcmp(inside, root) == 0);
}

/* root's trees go unless a server other than s is checked against them. */
static void forget_root(struct whoami_server *s, const char *root)
{
    struct whoami_server *o;
    LIST_FOREACH(o, &s->g->servers, link)
        if (o != s && !o->released && checked_at(o, root))
            return;
    whoami_trees_forget(s->g->trees, root);
}

/* s's server is gone: its checkout's trees go too unless another server
 * is checked against them, and so do those of the folder inside it its
 * answer named. Now, while s->t's strings are still its caller's: a
 * server released during a callback is freed later. */
static void forget_checkout(struct whoami_server *s)
{
    if (!s->g || !s->t.checkout)
        return;
    const char *inside = answer_inside(s);
    forget_root(s, s->t.checkout);
    if (inside)
        forget_root(s, inside);
}

void whoami_server_release(void *server)
{
    struct whoami_server *s = server;
    if (!s)
        return;
    forget_checkout(s);
    if (s->g && s->g->busy)
        s->released = 1;
    else
        server_free(s);
}

const struct whoami_status *whoami_server_status(const struct whoami_server *s)
{
    return &s->st;
}

int whoami_server_hangs(const struct whoami_server *s)
{
    return s->have && (s->res.result == WF_TIMEOUT || s->res.result == WF_CUT);
}

static void refused(struct whoami_server *s)
{
    s->st.refused++;
    s->st.seq++;
}

/* --- asking --- */

static void fetched(void *arg, const struct whoami_fetch_reply *r);

void whoami_gate_ask(struct whoami_server *s)
{
    if (s->fetch)
        return;
    s->asked_ms = s->listener_ms = whoami_gate_now(s->g);
    /* Before asking: a server that takes the port after this is another
     * listener, whatever it answers to this exchange. */
    s->listener = whoami_gate_listener(s);
    s->fetch = whoami_fetch_start(s->g->base, s->t.addr, s->t.addrlen, s->t.name,
                                  s->g->cfg.timeout_ms, fetched, s);
    if (!s->fetch) {
        struct whoami_fetch_reply r = {WF_UNREACHABLE, 0, NULL, 0, strerror(errno)};
        fetched(s, &r);
    }
}

/* How a middleware that is off begins its answer (whoami/node/index.mjs). */
#define OFF "wtproxy-whoami: off: "
#define OFF_LEN (sizeof OFF - 1)

/* The usable answer s had becomes its good one (decide.h): what it
 * answered before, once an exchange gives none. */
static void keep_good(struct whoami_server *s)
{
    if (!s->have_ans)
        return;
    if (s->have_good)
        whoami_answer_free(&s->good);
    s->good = s->ans;
    s->good_ms = s->ans_ms;
    s->have_good = 1;
    s->have_ans = 0;
}

/* Keep the outcome: a usable answer parsed, or why there is none. */
static void keep(struct whoami_server *s, const struct whoami_fetch_reply *r)
{
    keep_good(s);
    s->have = 1;
    s->res = *r;
    s->res.body = NULL;
    s->res.error = NULL;
    s->problem[0] = s->traceback[0] = s->error_head[0] = '\0';
    if (r->result == WF_OK && r->status >= 500)
        whoami_error_head(r->body, r->len, s->error_head, sizeof s->error_head);
    if (r->result != WF_OK) {
        snprintf(s->problem, sizeof s->problem, "%s", r->error);
    } else if (r->status != 200 && r->len > OFF_LEN && !memcmp(r->body, OFF, OFF_LEN)) {
        /* the Node middleware, off, says why: its first line */
        const char *nl = memchr(r->body, '\n', r->len);
        size_t n = nl ? (size_t)(nl - r->body) : r->len;
        snprintf(s->problem, sizeof s->problem, "%.*s", (int)(n - OFF_LEN), r->body + OFF_LEN);
    } else if (r->status >= 500 &&
               whoami_traceback_tail(r->body, r->len, s->traceback, sizeof s->traceback)) {
        snprintf(s->problem, sizeof s->problem, "its app fails to load");
    } else if (r->status == 200) {
        char err[256];
        if (whoami_answer_parse(r->body, r->len, &s->ans, err, sizeof err) == 0) {
            s->have_ans = s->answered = 1;
            s->ans_ms = s->asked_ms;
        } else
            snprintf(s->problem, sizeof s->problem, "%s", err);
    }
}

/* Nothing about s's server is known now: why says since when. */
static void show_unchecked(struct whoami_server *s, const char *why)
{
    struct whoami_status *st = &s->st;
    snprintf(st->state, sizeof st->state, "unchecked");
    snprintf(st->detail, sizeof st->detail, "%s", why);
    st->checkout[0] = st->hash[0] = st->disk_hash[0] = '\0';
    st->checked_ms = 0;
    st->silent = 0;
    st->seq++;
}

/* A probe's server answered nothing within reload_grace: it stays
 * unchecked, saying so, and is not asked again until a request comes (a
 * registration whose server never starts is not polled for ever). */
void whoami_gate_unanswered(struct whoami_server *s)
{
    char why[sizeof s->st.detail];
    whoami_refusal_silent(&s->t, s->problem[0] ? s->problem : "no answer", 0, why, sizeof why);
    show_unchecked(s, why);
    s->st.silent = 1;
}

/* An unchecked server's ask found nothing listening: said now, once (the
 * asks every WHOAMI_POLL_MS that follow change nothing shown), so that
 * `wtproxy register` tells at once what it would otherwise wait
 * reload_grace for, whatever host the server is on. */
static void show_silent(struct whoami_server *s, const struct whoami_fetch_reply *r)
{
    char why[sizeof s->st.detail];
    if (r->result != WF_UNREACHABLE || s->st.silent || strcmp(s->st.state, "unchecked") != 0)
        return;
    whoami_refusal_silent(&s->t, s->problem[0] ? s->problem : "no answer", 1, why, sizeof why);
    show_unchecked(s, why);
    s->st.silent = 1;
    if (s->watch)
        s->watch(s->watch_arg);
}

static void settle(struct whoami_server *s);
static void ask_soon(struct whoami_server *s, unsigned ms);

static void fetched(void *arg, const struct whoami_fetch_reply *r)
{
    struct whoami_server *s = arg;
    s->fetch = NULL;
    keep(s, r);
    if (s->forgotten[0] && r->result != WF_OK) /* nothing answered since it was forgotten */
        show_unchecked(s, s->forgotten);
    s->forgotten[0] = '\0';
    show_silent(s, r);
    settle(s);
}

/* Decide for every waiter; those still undecided wait for the next ask,
 * or for the disk's fingerprint. */
static void settle(struct whoami_server *s)
{
    struct waiter *w, *next;
    int again = 0, ask = 0;
    char detail[4096];
    if (s->released)
        return;
    s->g->busy++; /* a callback may end a request, and its caller let go of s */
    s->disk_wait = 0;
    unsigned long seq = s->st.seq;
    for (w = TAILQ_FIRST(&s->waiters); w; w = next) {
        next = TAILQ_NEXT(w, link);
        int d = whoami_gate_judge(s, w->since_ms, 0, &w->disk_ticket, detail, sizeof detail);
        if (d == G_DISK) {
            s->disk_wait = 1;
            continue;
        }
        if (d == G_LOOKUP) /* holders.c or ignored.c settles s once found */
            continue;
        if (d == WA_FETCH || d == WA_RETRY) {
            ask |= d == WA_FETCH;
            again = 1;
            continue;
        }
        TAILQ_REMOVE(&s->waiters, w, link);
        if (d != WHOAMI_PASS && w->cb)
            refused(s);
        /* A request refused so too: ls said "verified" of a server whose
         * /__whoami refused every request's ask (CI, test 114) */
        if (d == WHOAMI_UNREACHABLE)
            whoami_gate_unanswered(s);
        if (w->cb)
            w->cb(w->arg, (enum whoami_verdict)d, detail);
        free(w);
    }
    if (!s->released)
        whoami_gate_told(s, seq);
    /* After the loop: a fetch that fails at once settles again, here. */
    if (!s->released && ask)
        whoami_gate_ask(s);
    else if (!s->released && again)
        ask_soon(s, WHOAMI_POLL_MS);
    if (!s->released && s->edit_ms) /* an answer, or the disk's fingerprint */
        whoami_recheck_soon(s, 0, 0);
    unbusy(s->g);
}

void whoami_gate_settle(struct whoami_server *s)
{
    settle(s);
}

void whoami_gate_told(struct whoami_server *s, unsigned long seq)
{
    if (s->st.seq != seq && s->watch)
        s->watch(s->watch_arg);
}

/* A fingerprint is ready: the servers whose waiters wait for one decide. */
static void disk_ready(void *arg)
{
    struct whoami_gate *g = arg;
    struct whoami_server *s;
    g->busy++;
    LIST_FOREACH(s, &g->servers, link)
        if (s->disk_wait)
            settle(s);
    unbusy(g);
}

static void poll_cb(evutil_socket_t fd, short what, void *arg)
{
    struct whoami_server *s = arg;
    (void)fd;
    (void)what;
    if (!TAILQ_EMPTY(&s->waiters) || s->refresh)
        whoami_gate_ask(s);
    s->refresh = 0;
}

/* Ask from the loop in ms, never from inside a check: a fetch that fails
 * at once settles its waiters, and the one being added must first have
 * its ticket. An earlier pending ask stands. */
static void ask_soon(struct whoami_server *s, unsigned ms)
{
    struct timeval tv = {0, (long)ms * 1000};
    if (!evtimer_pending(s->poll, NULL))
        evtimer_add(s->poll, &tv);
}

/* cb NULL: whoami_gate_probe's, which refuses nothing and is not counted. */
int whoami_gate_check(struct whoami_server *s, const struct whoami_target *t, whoami_gate_cb cb,
                      void *arg, void **ticket, char *detail, size_t detlen)
{
    unsigned long disk_ticket = 0;
    *ticket = NULL;
    if (!s->g) {
        snprintf(detail, detlen, "the /__whoami gate has stopped: %s is not checked", t->name);
        return WHOAMI_INVALID;
    }
    long long since = whoami_gate_now(s->g);
    s->t = *t;
    /* Decided on what is known, even while an answer is on its way: a
     * verified server's requests never wait for the background re-ask. */
    int d = whoami_gate_judge(s, since, 0, &disk_ticket, detail, detlen);
    if (d == WA_FETCH && s->fetch)
        d = WA_RETRY; /* the answer on its way will do */
    if (d == WHOAMI_PASS && since - s->asked_ms >= WHOAMI_REVERIFY_MS && !s->fetch) {
        s->refresh = 1; /* in the background: this request goes on */
        ask_soon(s, 0);
    }
    if (d != WA_FETCH && d != WA_RETRY && d != G_DISK && d != G_LOOKUP) {
        if (d != WHOAMI_PASS && cb)
            refused(s);
        return d;
    }
    struct waiter *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(detail, detlen, "out of memory while checking %s", t->name);
        return WHOAMI_INVALID;
    }
    w->s = s;
    w->since_ms = since;
    w->disk_ticket = disk_ticket;
    w->cb = cb;
    w->arg = arg;
    TAILQ_INSERT_TAIL(&s->waiters, w, link);
    if (d == G_DISK)
        s->disk_wait = 1;                /* disk_ready settles it */
    else if (d != G_LOOKUP && !s->fetch) /* holders.c or ignored.c settles it */
        ask_soon(s, d == WA_FETCH ? 0 : WHOAMI_POLL_MS);
    *ticket = w;
    return -1;
}

int whoami_gate_probe(struct whoami_server *s, const struct whoami_target *t)
{
    char detail[4096];
    void *ticket;
    int d = whoami_gate_check(s, t, NULL, NULL, &ticket, detail, sizeof detail);
    if (d < 0)
        show_unchecked(s, "its server is new: wtproxy is asking its /__whoami now");
    return d;
}

void whoami_server_restarted(struct whoami_server *s, const char *why)
{
    if (!s)
        return;
    if (s->fetch) { /* the old process's answer */
        whoami_fetch_cancel(s->fetch);
        s->fetch = NULL;
        if (s->g && !TAILQ_EMPTY(&s->waiters))
            ask_soon(s, WHOAMI_POLL_MS);
    }
    keep_good(s); /* what the old process answered: the new one's error is judged by it */
    s->have = 0;
    whoami_recheck_stop(s); /* verify.c probes the new process once ready */
    show_unchecked(s, why);
}

void whoami_server_restart_why(struct whoami_server *s, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s", s ? s->restart_why : "");
    if (s)
        s->restart_why[0] = '\0';
}

void whoami_server_watch(struct whoami_server *s, void (*fn)(void *arg), void *arg)
{
    s->watch = fn;
    s->watch_arg = arg;
}

void whoami_gate_forget(struct whoami_server *s, const char *why)
{
    if (!s)
        return;
    if (s->fetch) {
        /* An ask under way keeps its outcome, an answer if the server
         * listens again; if it gets none, the refusal is told then: kept
         * for it, ls said "verified" of a server a request under load
         * had just found not listening, for good. */
        snprintf(s->forgotten, sizeof s->forgotten, "%s", why ? why : "");
        return;
    }
    s->have = 0;
    if (why)
        show_unchecked(s, why);
}

void whoami_gate_cancel(struct whoami_gate *g, void *ticket)
{
    struct waiter *w = ticket;
    (void)g;
    if (!w)
        return;
    TAILQ_REMOVE(&w->s->waiters, w, link);
    free(w);
}

struct whoami_gate *whoami_gate_new(struct event_base *base, const struct whoami_gate_config *cfg)
{
    struct whoami_gate *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->base = base;
    g->cfg = *cfg;
    LIST_INIT(&g->servers);
    char err[256];
    g->diag = host_diag_open(err, sizeof err);
    g->holders = whoami_holders_worker_new(g);
    g->ignored = whoami_ignored_worker_new(g);
    if (!(g->trees =
              whoami_trees_new(base, cfg->use_inotify, disk_ready, whoami_recheck_changed, g))) {
        host_diag_close(g->diag);
        whoami_holders_worker_free(g->holders);
        whoami_ignored_worker_free(g->ignored);
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
    /* first: their jobs name servers freed below */
    whoami_holders_worker_free(g->holders);
    whoami_ignored_worker_free(g->ignored);
    /* Their callers still hold them: inert from now on, freed on release. */
    while (!LIST_EMPTY(&g->servers)) {
        struct whoami_server *s = LIST_FIRST(&g->servers);
        LIST_REMOVE(s, link);
        server_stop(s);
        s->g = NULL;
        if (s->released)
            server_free(s);
    }
    whoami_trees_free(g->trees);
    host_diag_close(g->diag);
    free(g);
}
