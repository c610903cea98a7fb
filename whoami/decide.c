/* decide.c - see decide.h. The order of the questions is the policy: a
 * missing or outdated answer first, a restart under way, a server that
 * does not answer, then what its answer says (checkout, then code). */
#include "decide.h"

#include <stdio.h>
#include <string.h>

#include "host.h"
#include "kind.h"
#include "refusal.h"

static const char *const reasons[] = {
    [WHOAMI_PASS] = "pass",
    [WHOAMI_MISMATCH] = "checkout-mismatch",
    [WHOAMI_STALE] = "stale-code",
    [WHOAMI_NO_WHOAMI] = "no-whoami",
    [WHOAMI_INVALID] = "whoami-invalid",
    [WHOAMI_UNREACHABLE] = "backend-unreachable",
    [WHOAMI_APP_ERROR] = "backend-not-ready",
    [WHOAMI_BROKEN] = "backend-not-ready",
};

const char *whoami_verdict_reason(enum whoami_verdict v)
{
    return reasons[v];
}

/* What the gate shows in ls and the dashboard. */
static void show(struct whoami_status *st, const struct whoami_memory *m, const char *state,
                 const char *detail, const char *disk_hash)
{
    snprintf(st->state, sizeof st->state, "%s", state);
    snprintf(st->detail, sizeof st->detail, "%s", detail ? detail : "");
    snprintf(st->checkout, sizeof st->checkout, "%s", m->ans ? m->ans->checkout : "");
    snprintf(st->hash, sizeof st->hash, "%s", m->ans ? m->ans->hash : "");
    snprintf(st->disk_hash, sizeof st->disk_hash, "%s", disk_hash ? disk_hash : "");
    st->checked_ms = m->asked_ms;
    st->silent = 0;
    st->seq++;
}

/* Stale, said with since when (the disk's last change, when known) ahead
 * of the refusal's sentence: an agent reading ls learns how long its
 * server has served older code. */
static void show_stale(struct whoami_status *st, const struct whoami_memory *m,
                       long long changed_ms, const char *refusal, const char *disk_hash)
{
    char at[16], detail[sizeof st->detail];
    if (changed_ms) {
        host_time_of_day(changed_ms, at, sizeof at);
        snprintf(detail, sizeof detail, "stale since %s, when the code on disk changed: %s", at,
                 refusal);
    } else {
        snprintf(detail, sizeof detail, "%s", refusal);
    }
    show(st, m, "stale", detail, disk_hash);
}

static int restarting(const struct whoami_case *c)
{
    const struct whoami_memory *m = c->mem;
    return m->restart_ms && c->now_ms - m->restart_ms < c->cfg->start_timeout_ms;
}

/* The process our restart started has answered: its registration's start
 * moved since we asked (compared as values, as trusted_restarted_404
 * does) and the answer was asked after. Waiting longer for it could not
 * change what it serves: it loaded its code once. */
static int restarted(const struct whoami_case *c)
{
    const struct whoami_memory *m = c->mem;
    return c->target->started_ms != m->restart_start_ms && m->asked_ms >= m->restart_ms;
}

/* Whether a stale server may be restarted: twice per staleness at most,
 * never in a loop. The disk changing after the last restart was sent (an
 * edit landing while the new process started, or after a refusal) is a
 * new staleness. A restarted process back with older code is given one
 * more restart from the same files, because it can help: an edit that
 * keeps a .py's size, saved within the second the process before
 * compiled it, leaves a .pyc the next one takes for the new source; that
 * one reports it unknown and removes it (python/wtproxy_whoami/
 * bytecode.py), and the one after compiles the source. A third would
 * start from what the second did. */
static int may_restart(const struct whoami_case *c)
{
    const struct whoami_memory *m = c->mem;
    long long changed = c->disk->changed_ms;
    if (!c->target->restart_on_stale || c->target->pid <= 0 || m->restart_failed || c->no_restart)
        return 0;
    return !m->restart_ms || changed > m->restart_ms ||
           (changed > m->prior_restart_ms && restarted(c));
}

/* Whether a stale-looking server is still given time because its answer
 * says it is taking a change in (taking_in, PROTOCOL.md): a compile on a
 * loaded machine can outlast stale_grace, and a restart would start it
 * over. It is given start_timeout, what a restart would be given to come
 * back with the new code, so waiting is never worse than restarting; counted
 * both from when the server began (its word: a taking-in older than that
 * is stuck, judged at once as without it) and from when the request began
 * to wait (ours: a server that keeps moving its since cannot hold a
 * request longer). */
static int taking_in(const struct whoami_case *c)
{
    long long began = c->mem->ans->taking_in_ms, bound = c->cfg->start_timeout_ms;
    return began && c->now_ms - began < bound && c->now_ms - c->since_ms < bound;
}

/* The grace first, even with restart-on-stale: a server that takes edits
 * in by itself (runserver, uvicorn --reload, Vite, next dev) answers with
 * the new code within it, and a restart would throw away what it compiled
 * (next dev: 4-6 s an edit instead of 0.3-0.6 s). None for a server whose
 * answer says nothing reloads it ("reloads": false: flask run without
 * --debug, a plain node server.mjs): waiting could not help, and cost
 * stale_grace per edit. */
static int in_grace(const struct whoami_case *c)
{
    return !c->mem->ans->no_reloader && c->now_ms - c->since_ms < c->cfg->stale_grace_ms;
}

/* The answer agrees on the checkout: compare its fingerprint with the
 * disk's, giving a stale server its grace. */
static int decide_code(const struct whoami_case *c, struct whoami_status *st,
                       struct whoami_disk_want *want, char *detail, size_t detlen)
{
    const struct whoami_memory *m = c->mem;
    const struct whoami_target *t = c->target;
    if (!c->disk) {
        want->root = m->ans->checkout;
        want->patterns = &m->ans->patterns;
        return WA_DISK;
    }
    const struct whoami_fp *disk = c->disk->fp;
    if (!disk) {
        whoami_refusal_unreadable(t, c->disk->err, detail, detlen);
        show(st, m, "invalid", detail, NULL);
        return WHOAMI_INVALID;
    }
    if (strcmp(disk->hash, m->ans->hash) == 0) {
        /* The hot path: shown once per answer, not copied per request. */
        if (st->checked_ms != m->asked_ms || strcmp(st->state, "verified"))
            show(st, m, "verified", "serves the code on disk", disk->hash);
        return WHOAMI_PASS;
    }
    /* The answer predates the last change on disk: the server may have
     * reloaded since. Only a fresh answer can say it is stale. */
    if (m->asked_ms < c->disk->changed_ms || m->asked_ms < c->since_ms)
        return WA_FETCH;
    if ((restarting(c) && !restarted(c)) || in_grace(c) || taking_in(c))
        return WA_RETRY;
    /* Before a restart too: its log line says it, since the server's next
     * write would have it restarted again. */
    if (!m->ignored_checked)
        return WA_IGNORED;
    if (may_restart(c))
        return WA_RESTART;
    if (!m->holders_checked)
        return WA_HOLDERS;
    /* Its wrapper could not be asked (gone): no request will restart it. */
    struct whoami_target told = *t;
    told.restart_on_stale &= !m->restart_failed;
    whoami_refusal_stale(&told, m->ans, disk, m->restart_ms != 0, m->ignored_all, &m->holders,
                         detail, detlen);
    show_stale(st, m, c->disk->changed_ms, detail, disk->hash);
    return WHOAMI_STALE;
}

/* Trusted, said with what is watched for it: a reader of ls learns that
 * an edit to another file (a template a Go binary embeds) goes unseen. */
static void show_trusted(struct whoami_status *st, const struct whoami_memory *m,
                         const struct whoami_kind *k, const char *disk_hash)
{
    char watched[512], detail[sizeof st->detail];
    whoami_kind_watched(k, watched, sizeof watched);
    snprintf(detail, sizeof detail,
             "no /__whoami; trusted: no file changed since it started (watched for %s: %s; not %s)",
             k->name, watched, k->unseen);
    show(st, m, "trusted", detail, disk_hash);
}

/* No /__whoami and --trust-registry: the caller's word says which checkout
 * it serves, and a file it is built from (by its command's kind) newer
 * than the server is stale. */
static int decide_trusted(const struct whoami_case *c, struct whoami_status *st,
                          struct whoami_disk_want *want, char *detail, size_t detlen)
{
    const struct whoami_target *t = c->target;
    const struct whoami_kind *kind = whoami_kind_of(t->command);
    long long started = t->started_ms ? t->started_ms : t->registered_ms;
    if (!c->disk) {
        want->root = t->checkout;
        want->patterns = &kind->patterns;
        return WA_DISK;
    }
    const struct whoami_fp *disk = c->disk->fp;
    if (disk && whoami_refusal_newer_files(disk, started, detail, detlen) == 0) {
        show_trusted(st, c->mem, kind, disk->hash);
        return WHOAMI_PASS;
    }
    /* Restarted as a server with an answer is: its new process is judged
     * by its registration's start, which moves with `restarting`. */
    if (disk && may_restart(c))
        return WA_RESTART;
    if (!disk)
        whoami_refusal_unreadable(t, c->disk->err, detail, detlen);
    else
        whoami_refusal_trusted_stale(t, detail, detlen);
    show(st, c->mem, "stale", detail, disk ? disk->hash : NULL);
    return WHOAMI_STALE;
}

/* A whole answer without /__whoami from a server trusted for it, given
 * by the process a restart we asked started: its registration's start
 * moved since we asked (the wrapper's `restarting` moves it; compared as
 * values, not with our clock: the event loop's cached time runs apart
 * from the registry's by a millisecond or two). Until then a 404 is the
 * old process's, still judged by the old start, and a request that saw
 * it was once refused as stale while its server restarted. */
static int trusted_restarted_404(const struct whoami_case *c)
{
    const struct whoami_memory *m = c->mem;
    return c->cfg->trust_registry && m->result == WF_OK && m->status != 200 && !m->ans &&
           c->target->started_ms != m->restart_start_ms;
}

/* A server that has answered before and now answers nothing, not in time,
 * or only half (an autoreloader kills the old process while it answers,
 * and on a busy machine binds its port well before it serves) is most
 * likely starting again: waited for like one that does not listen. One
 * that never answered is refused at once (whoami-invalid, below). */
static int silent(const struct whoami_memory *m)
{
    return m->result == WF_UNREACHABLE ||
           ((m->result == WF_TIMEOUT || m->result == WF_CUT) && m->answered);
}

/* A server that has answered before and now answers /__whoami with an
 * error status, without an answer: an autoreloader's new server that
 * failed to load the app and answers every request with that error
 * (flask run's, after an edit broke app.py). Its wrapper reads the
 * traceback and tells the daemon within a second (a 503 with it): waited
 * for like a silent one, never refused as a server without the
 * middleware, which it has. So is one whose error is a Python traceback
 * though it never answered: gunicorn's master listens before its workers
 * fail to load the app, and the first request found it so. */
static int failing(const struct whoami_memory *m)
{
    return m->result == WF_OK && m->status >= 500 && !m->ans && (m->answered || m->traceback);
}

/* Our restart's new process answered /__whoami with an error: it will
 * not answer better by waiting for start_timeout; what it answers is
 * judged now (a failing one is given reload_grace, as any). */
static int restarted_failing(const struct whoami_case *c)
{
    return restarted(c) && failing(c->mem);
}

/* Whether the files a failing server's last usable answer was judged
 * against changed since it gave it: its hash is not theirs, or they
 * changed after (an edit undone since, whose server stays broken: hugo
 * server after an atomic-rename save). 1 yes, 0 no (or they cannot be
 * read), -1 the disk must say first (WA_DISK). */
static int changed_since_good(const struct whoami_case *c)
{
    const struct whoami_disk *disk = c->disk;
    if (!disk)
        return -1;
    return disk->fp &&
           (strcmp(disk->fp->hash, c->mem->good->hash) != 0 || disk->changed_ms > c->mem->good_ms);
}

/* Whether the last usable answer named this server's worktree (or a
 * folder inside it): one of another checkout's server says nothing of
 * this one's files. */
static int good_here(const struct whoami_case *c)
{
    const char *good = c->mem->good->checkout, *wt = c->target->checkout;
    return strcmp(good, wt) == 0 || whoami_inside(good, wt);
}

/* Whether a server a change broke may be restarted: once per change, as
 * a stale one is; a restarted process that fails too is refused (the
 * error is in its files), until they change again. */
static int may_restart_broken(const struct whoami_case *c)
{
    const struct whoami_memory *m = c->mem;
    if (!c->target->restart_on_stale || c->target->pid <= 0 || m->restart_failed || c->no_restart)
        return 0;
    return !m->restart_ms || c->disk->changed_ms > m->restart_ms;
}

/* A server that answered /__whoami and now answers it with an error
 * status without a traceback: most often a change broke it (hugo server
 * answers 500 to every path after some saves). Never "without the
 * middleware", which it had: restarted once after a change when it may
 * be, else refused with its error's first lines. */
static int decide_broken(const struct whoami_case *c, struct whoami_status *st,
                         struct whoami_disk_want *want, char *detail, size_t detlen)
{
    const struct whoami_memory *m = c->mem;
    int changed = changed_since_good(c);
    if (changed < 0) {
        want->root = m->good->checkout;
        want->patterns = &m->good->patterns;
        return WA_DISK;
    }
    if (changed && may_restart_broken(c))
        return WA_RESTART;
    struct whoami_target told = *c->target; /* its wrapper could not be asked: none will */
    told.restart_on_stale &= !m->restart_failed;
    struct whoami_broken b = {m->status,
                              m->error_head,
                              m->good->checkout,
                              m->good_ms,
                              c->disk->fp,
                              changed,
                              changed && m->restart_ms && restarted(c)};
    whoami_refusal_broken(&told, &b, detail, detlen);
    show(st, m, "broken", detail, c->disk->fp ? c->disk->fp->hash : NULL);
    return WHOAMI_BROKEN;
}

int whoami_inside(const char *folder, const char *worktree)
{
    size_t n = strlen(worktree);
    return n && strncmp(folder, worktree, n) == 0 && folder[n] == '/' && folder[n + 1];
}

/* Whether the answer's checkout is the server's worktree: its top folder,
 * or a folder inside it whose own worktree (the nearest .git, as the
 * disk's fingerprint found it) is that one. A Go module in api/, built
 * and run there, fingerprints its own folder (wtproxy help
 * whoami-protocol); refused, it was told to kill and restart the same
 * server for ever. A worktree nested inside (repo/.worktrees/wt-b in the
 * main checkout) is another checkout. 1 yes, 0 no, -1 the disk must say
 * first (WA_DISK: its lstats are the worker's). A folder in no worktree
 * that cannot be fingerprinted (removed) is let through to say so. */
static int checkout_agrees(const struct whoami_case *c)
{
    const char *ans = c->mem->ans->checkout, *wt = c->target->checkout;
    if (strcmp(ans, wt) == 0)
        return 1;
    if (!whoami_inside(ans, wt))
        return 0;
    if (!c->disk)
        return -1;
    return strcmp(c->disk->worktree, wt) == 0 || (!c->disk->worktree[0] && !c->disk->fp);
}

/* The other worktree a refused answer's checkout inside the server's
 * worktree is in, for the refusal; NULL when it is not inside. */
static const char *nested_worktree(const struct whoami_case *c)
{
    return c->disk && c->disk->worktree[0] ? c->disk->worktree : NULL;
}

/* What its answer says: no /__whoami, unusable, another checkout, or on
 * to the code. */
static int decide_answer(const struct whoami_case *c, int fresh, struct whoami_status *st,
                         struct whoami_disk_want *want, char *detail, size_t detlen)
{
    const struct whoami_memory *m = c->mem;
    const struct whoami_target *t = c->target;
    int agrees = m->ans ? checkout_agrees(c) : 0;
    /* A verified answer is trusted until the disk changes; any other is
     * asked again for each request that finds it older than itself. */
    if (!agrees && !fresh && c->now_ms - m->asked_ms >= WHOAMI_RECHECK_MS)
        return WA_FETCH;
    if (failing(m) && m->traceback) { /* no wrapper said it within reload_grace */
        whoami_refusal_app_error(t, m->status, m->traceback, detail, detlen);
        show(st, m, "app-error", detail, NULL);
        return WHOAMI_APP_ERROR;
    }
    if (failing(m) && m->good && good_here(c))
        return decide_broken(c, st, want, detail, detlen);
    if (m->result == WF_OK && m->status != 200 && !m->ans) {
        if (c->cfg->trust_registry)
            return decide_trusted(c, st, want, detail, detlen);
        whoami_refusal_no_whoami(t, m->status, m->problem, detail, detlen);
        show(st, m, "no-whoami", detail, NULL);
        return WHOAMI_NO_WHOAMI;
    }
    if (!m->ans) {
        whoami_refusal_invalid(t, m->problem, detail, detlen);
        show(st, m, "invalid", detail, NULL);
        return WHOAMI_INVALID;
    }
    if (agrees < 0) {
        want->root = m->ans->checkout;
        want->patterns = &m->ans->patterns;
        return WA_DISK;
    }
    if (!agrees && !m->holders_checked)
        return WA_HOLDERS;
    if (!agrees) {
        whoami_refusal_mismatch(t, m->ans, nested_worktree(c), &m->holders, detail, detlen);
        show(st, m, "mismatch", detail, NULL);
        return WHOAMI_MISMATCH;
    }
    return decide_code(c, st, want, detail, detlen);
}

int whoami_decide(const struct whoami_case *c, struct whoami_status *st,
                  struct whoami_disk_want *want, char *detail, size_t detlen)
{
    const struct whoami_memory *m = c->mem;
    int fresh = m->have && m->asked_ms >= c->since_ms;
    if (!m->have)
        return WA_FETCH;
    if (!fresh && m->ans && !m->listener_checked)
        return WA_LISTENER;
    if (!fresh && m->ans && m->listener_moved)
        return WA_FETCH; /* a server swapped behind the port has not answered yet */
    /* A server we asked to restart answers nothing, or not in time, for a
     * while: only its new process's fresh answer counts, within
     * start_timeout. */
    if (restarting(c) && !(fresh && (m->ans || trusted_restarted_404(c) || restarted_failing(c))))
        return fresh ? WA_RETRY : WA_FETCH;
    if (silent(m)) {
        if (!fresh)
            return WA_FETCH;
        if (restarting(c) || c->now_ms - c->since_ms < c->cfg->reload_grace_ms)
            return WA_RETRY;
        snprintf(detail, detlen, "GET /__whoami to %s (%s): %s", c->target->name,
                 c->target->checkout, m->problem);
        return WHOAMI_UNREACHABLE;
    }
    if (failing(m) &&
        ((restarting(c) && !restarted(c)) || c->now_ms - c->since_ms < c->cfg->reload_grace_ms))
        return fresh ? WA_RETRY : WA_FETCH;
    return decide_answer(c, fresh, st, want, detail, detlen);
}
