/* recheck.c - a server asked again after an edit, with no request
 * (gate_impl.h). Why: the gate's status of a server moved only when a
 * request (or the daemon's probe of a new server) asked its /__whoami, so
 * after an edit `wtproxy ls`, the MCP servers tool and the dashboard kept
 * saying "verified" until the next test request, and an agent reading them
 * believed its edit live. Now, once the tree's fingerprint moved (tree.h's
 * changed, WHOAMI_SETTLE_MS after a burst of writes), each server shown as
 * serving the older code says "changed" at once and is asked again in the
 * background, so that its status becomes what it really says: verified
 * once it took the edit in, "taking-in" while its /__whoami says
 * taking_in, "stale" (since when) once stale_grace has passed.
 *
 * It refuses nothing and restarts nothing: restarts and 409s stay the
 * requests' (decide.h, no_restart). Its asks are few, one in flight per
 * server: one at once, then after EDIT_ASK_MS, doubling up to
 * EDIT_ASK_MAX_MS, one at the end of stale_grace; never two within
 * EDIT_ASK_MS, however many edits come. */
#include <stdio.h>
#include <string.h>

#include "gate_impl.h"
#include "host.h"
#include "tree.h"

#define EDIT_ASK_MS 250
#define EDIT_ASK_MAX_MS 2000

/* Statuses that say what the server serves, which an edit makes untrue
 * (or true again: an edit undone makes a stale server verified, a fix
 * saved a broken one). */
static int outdated_by_edits(const struct whoami_status *st)
{
    return strcmp(st->state, "verified") == 0 || strcmp(st->state, "changed") == 0 ||
           strcmp(st->state, "taking-in") == 0 || strcmp(st->state, "stale") == 0 ||
           strcmp(st->state, "broken") == 0;
}

/* Shown while the recheck waits: its last answer's checkout and hash,
 * the disk's hash as the edit left it (set by begin). Unchanged words
 * are not shown again: nothing is copied for them. */
static void show(struct whoami_server *s, const char *state, const char *detail)
{
    struct whoami_status *st = &s->st;
    if (strcmp(st->state, state) == 0 && strcmp(st->detail, detail) == 0 &&
        st->checked_ms == s->asked_ms)
        return;
    snprintf(st->state, sizeof st->state, "%s", state);
    snprintf(st->detail, sizeof st->detail, "%s", detail);
    snprintf(st->checkout, sizeof st->checkout, "%s", s->have_ans ? s->ans.checkout : "");
    snprintf(st->hash, sizeof st->hash, "%s", s->have_ans ? s->ans.hash : "");
    st->checked_ms = s->asked_ms;
    st->silent = 0;
    st->seq++;
}

/* Decided not yet: what the last answer says meanwhile. */
static void show_waiting(struct whoami_server *s)
{
    char at[16], since[16], detail[1024];
    host_time_of_day(s->edit_ms, at, sizeof at);
    if (s->have_ans && s->ans.taking_in_ms && s->asked_ms >= s->edit_ms) {
        host_time_of_day(s->ans.taking_in_ms, since, sizeof since);
        snprintf(detail, sizeof detail,
                 "taking in an edit: its /__whoami says taking_in since %s (the code on disk "
                 "changed at %s); wtproxy asks again until it reports the new code",
                 since, at);
        show(s, "taking-in", detail);
        return;
    }
    if (s->have && s->res.result == WF_OK && s->res.status >= 500 && !s->have_ans)
        snprintf(detail, sizeof detail,
                 "code changed on disk at %s; its server answers /__whoami with HTTP %d now, as "
                 "while an autoreloader takes an edit in; asking again (broken once reload_grace "
                 "has passed)",
                 at, s->res.status);
    else if (s->have && s->res.result != WF_OK)
        snprintf(detail, sizeof detail,
                 "code changed on disk at %s; its server does not answer /__whoami now (%s), "
                 "as while an autoreloader restarts it; asking again",
                 at, s->problem);
    else
        snprintf(detail, sizeof detail,
                 "code changed on disk at %s; its server still reports the older code, as "
                 "before an autoreloader takes the edit in; asking again (stale once "
                 "stale_grace has passed)",
                 at);
    show(s, "changed", detail);
}

void whoami_recheck_soon(struct whoami_server *s, unsigned ms, int ask)
{
    struct timeval tv = {(long)(ms / 1000), (long)(ms % 1000) * 1000};
    if (!s->recheck)
        return;
    s->edit_ask = ask;
    evtimer_del(s->recheck);
    evtimer_add(s->recheck, &tv);
}

void whoami_recheck_stop(struct whoami_server *s)
{
    s->edit_ms = 0;
    if (s->recheck)
        evtimer_del(s->recheck);
}

/* An ask now, unless the last was under EDIT_ASK_MS ago: then at that. */
static void ask_now(struct whoami_server *s)
{
    long long wait = EDIT_ASK_MS - (whoami_gate_now(s->g) - s->asked_ms);
    if (wait > 0) {
        whoami_recheck_soon(s, (unsigned)wait, 1);
        return;
    }
    s->edit_asks++;
    whoami_gate_ask(s);
}

/* The next ask of a server that answered with the older code, or not at
 * all: later each time, and at the end of stale_grace, when its answer
 * decides. */
static void ask_later(struct whoami_server *s)
{
    unsigned n = s->edit_asks ? s->edit_asks - 1 : 0;
    long long ms = n >= 3 ? EDIT_ASK_MAX_MS : EDIT_ASK_MS << n;
    long long grace_left = s->edit_ms + s->g->cfg.stale_grace_ms - whoami_gate_now(s->g);
    if (grace_left > 0 && grace_left < ms)
        ms = grace_left > EDIT_ASK_MS ? grace_left : EDIT_ASK_MS;
    whoami_recheck_soon(s, (unsigned)ms, 1);
}

/* Decide on what is known: verified, stale and the rest are shown by
 * decide.c and end the recheck; an answer, the disk's fingerprint or
 * time is awaited otherwise. */
static void step(struct whoami_server *s)
{
    char detail[4096];
    if (s->fetch) /* its answer settles s, which steps again */
        return;
    unsigned long seq = s->st.seq;
    int d = whoami_gate_judge(s, s->edit_ms, 1, &s->edit_ticket, detail, sizeof detail);
    if (d == G_DISK) {
        s->disk_wait = 1; /* disk_ready settles s */
    } else if (d == G_LOOKUP) {
        /* holders.c or ignored.c settles s once found, which steps again */
    } else if (d == WA_FETCH) {
        ask_now(s);
    } else if (d == WA_RETRY) {
        show_waiting(s);
        ask_later(s);
    } else {
        if (d == WHOAMI_UNREACHABLE)
            whoami_gate_unanswered(s);
        s->edit_ms = 0;
    }
    whoami_gate_told(s, seq);
}

void whoami_recheck_cb(evutil_socket_t fd, short what, void *arg)
{
    struct whoami_server *s = arg;
    (void)fd;
    (void)what;
    if (!s->edit_ms || !s->g || s->released)
        return;
    if (s->edit_ask) {
        s->edit_ask = 0;
        s->edit_asks++;
        whoami_gate_ask(s);
        return;
    }
    step(s);
}

/* s's status stops saying what it served is the disk's code: changed at
 * changed_ms, to hash; asked again at once. */
static void begin(struct whoami_server *s, const char *hash, long long changed_ms)
{
    char at[16], detail[256];
    unsigned long seq = s->st.seq;
    s->edit_ms = changed_ms ? changed_ms : whoami_gate_now(s->g);
    s->edit_asks = 0;
    s->edit_ticket = 0;
    host_time_of_day(s->edit_ms, at, sizeof at);
    snprintf(detail, sizeof detail,
             "code changed on disk at %s; wtproxy is asking its /__whoami whether it took the "
             "edit in",
             at);
    snprintf(s->st.disk_hash, sizeof s->st.disk_hash, "%s", hash);
    s->st.state[0] = '\0'; /* shown anew, whatever it said */
    show(s, "changed", detail);
    whoami_gate_told(s, seq);
    whoami_recheck_soon(s, 0, 0);
}

/* Whether s is shown as serving root's code under p: its answer says so
 * (verified, stale), or its last one did (broken), or it is being
 * rechecked for root while it does not answer (an autoreloader
 * restarting it). */
static int serves(const struct whoami_server *s, const char *root, const struct whoami_patterns *p)
{
    if (s->released || !outdated_by_edits(&s->st))
        return 0;
    if (s->have_ans)
        return strcmp(s->ans.checkout, root) == 0 && whoami_patterns_same(&s->ans.patterns, p);
    if (strcmp(s->st.state, "broken") == 0 && s->have_good) /* judged by its last answer's files */
        return strcmp(s->good.checkout, root) == 0 && whoami_patterns_same(&s->good.patterns, p);
    return s->edit_ms && s->t.checkout && strcmp(s->t.checkout, root) == 0;
}

void whoami_recheck_changed(void *arg, const char *root, const struct whoami_patterns *p,
                            const char *hash, long long changed_ms)
{
    struct whoami_gate *g = arg;
    struct whoami_server *s;
    LIST_FOREACH(s, &g->servers, link)
        if (serves(s, root, p))
            begin(s, hash, changed_ms);
}
