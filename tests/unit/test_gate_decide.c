/* test_gate_decide.c - the gate's decision (whoami/decide.c), one row per
 * verdict and grace: what the server last answered, when, the disk's
 * fingerprint and the clock in; the verdict (with the status ls shows and
 * the refusal's sentence) or the next action out. The driver answers the
 * decision's questions (the listener, a restart, the disk) as gate.c does,
 * from the row. */
#include "../../host/clock.c"
#include "../../whoami/decide.c"
#include "../../whoami/error_head.c"
#include "../../whoami/glob.c"
#include "../../whoami/kind.c"
#include "../../whoami/refusal.c"
#include "../../whoami/refusal_ignored.c"
#include "tap.h"

#define T 1000000000000LL /* now, roughly: the unix ms of a day in 2001 */
#define WT "/w/app"
#define OTHER "/w/other"
#define SUB WT "/api"             /* a folder of WT: a Go module's, fingerprinted alone */
#define NESTED WT "/.worktrees/b" /* a worktree of its own inside WT */
#define H_DISK "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define H_OLD "sha256:2222222222222222222222222222222222222222222222222222222222222222"

/* Tables read as rows: kept out of clang-format. */
/* clang-format off */
static const struct whoami_gate_config cfg = {
    .timeout_ms = 1000, .stale_grace_ms = 2000, .reload_grace_ms = 3000,
    .start_timeout_ms = 5000, .trust_registry = 0, .use_inotify = 1};

enum ans { NO_ANS, ANS_HERE, ANS_OTHER, ANS_SUB, ANS_NESTED };
enum disk { DISK_OK, DISK_NEWER_FILE, DISK_UNREADABLE };
enum expect_patterns { P_ANY, P_ANSWER, P_KIND };

struct row {
    const char *name;
    /* the server: its last exchange */
    int have;
    enum whoami_fetch_result result;
    int status;
    enum ans ans;
    const char *ans_hash;
    long long asked, since, now; /* relative to T */
    int answered;
    long long restart;           /* relative to T; 0 none */
    int restart_on_stale, restart_fails, listener_moved, trust;
    enum disk disk;
    long long changed;           /* relative to T; 0 never */
    /* what comes out */
    int want;
    const char *want_state; /* "" unchanged */
    const char *want_detail;
    enum expect_patterns want_patterns;
    /* and when its answer said it began taking a change in (taking_in),
     * relative to T; 0 it did not */
    long long taking_in;
    /* and whether its answer said "reloads": false */
    int no_reloader;
};

#define OK200(a, h) 1, WF_OK, 200, a, h

static const struct row rows[] = {
    {"never asked: ask", 0, WF_OK, 0, NO_ANS, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, DISK_OK, 0,
     WA_FETCH, "", NULL, P_ANY, 0, 0},
    {"fresh verified answer: pass", OK200(ANS_HERE, H_DISK), 5, 0, 10, 1, 0, 0, 0, 0, 0,
     DISK_OK, -5000, WHOAMI_PASS, "verified", "serves the code on disk", P_ANSWER, 0, 0},
    {"older verified answer, same listener: pass", OK200(ANS_HERE, H_DISK), -1500, 0, 0, 1, 0,
     0, 0, 0, 0, DISK_OK, -5000, WHOAMI_PASS, "verified", NULL, P_ANSWER, 0, 0},
    {"swapped listener (inode changed): ask before serving", OK200(ANS_HERE, H_DISK), -1500, 0,
     0, 1, 0, 0, 0, 1, 0, DISK_OK, 0, WA_FETCH, "", NULL, P_ANY, 0, 0},
    {"wrong checkout: 421 checkout-mismatch", OK200(ANS_OTHER, H_DISK), 5, 0, 10, 1, 0, 0, 0,
     0, 0, DISK_OK, 0, WHOAMI_MISMATCH, "mismatch", "belongs to another checkout", P_ANY, 0, 0},
    {"wrong checkout asked over a second ago: ask again", OK200(ANS_OTHER, H_DISK), -1500, 0,
     0, 1, 0, 0, 0, 0, 0, DISK_OK, 0, WA_FETCH, "", NULL, P_ANY, 0, 0},
    {"stale within stale_grace: wait", OK200(ANS_HERE, H_OLD), 100, 0, 500, 1, 0, 0, 0, 0, 0,
     DISK_OK, -1000, WA_RETRY, "", NULL, P_ANSWER, 0, 0},
    {"stale past stale_grace: 409 stale-code", OK200(ANS_HERE, H_OLD), 2400, 0, 2500, 1, 0, 0,
     0, 0, 0, DISK_OK, -1000, WHOAMI_STALE, "stale", "Restart it: stop pid 4242", P_ANSWER, 0, 0},
    {"stale answer older than the disk's change: ask again", OK200(ANS_HERE, H_OLD), -500,
     -1000, 0, 1, 0, 0, 0, 0, 0, DISK_OK, -100, WA_FETCH, "", NULL, P_ANSWER, 0, 0},
    {"restart-on-stale, stale within stale_grace: wait (it may reload by itself)",
     OK200(ANS_HERE, H_OLD), 100, 0, 500, 1, 0, 1, 0, 0, 0, DISK_OK, -1000, WA_RETRY, "", NULL,
     P_ANSWER, 0, 0},
    {"restart-on-stale, stale past stale_grace: send the restart", OK200(ANS_HERE, H_OLD), 2400,
     0, 2500, 1, 0, 1, 0, 0, 0, DISK_OK, -1000, WA_RESTART, "", NULL, P_ANSWER, 0, 0},
    {"restart sent, past stale_grace, within start_timeout: wait", OK200(ANS_HERE, H_OLD),
     2900, 0, 3000, 1, 500, 1, 0, 0, 0, DISK_OK, -1000, WA_RETRY, "", NULL, P_ANSWER, 0, 0},
    {"restart sent, past start_timeout: 409 stale-code, restarted", OK200(ANS_HERE, H_OLD),
     5900, 0, 6000, 1, 500, 1, 0, 0, 0, DISK_OK, -1000, WHOAMI_STALE, "stale",
     "wtproxy restarted your server", P_ANSWER, 0, 0},
    {"restart sent, its old answer: ask", OK200(ANS_HERE, H_OLD), 400, 1000, 1200, 1, 500, 1,
     0, 0, 0, DISK_OK, -1000, WA_FETCH, "", NULL, P_ANY, 0, 0},
    {"restart sent, not answering yet: wait", 1, WF_UNREACHABLE, 0, NO_ANS, NULL, 1100, 1000,
     1200, 1, 500, 1, 0, 0, 0, DISK_OK, 0, WA_RETRY, "", NULL, P_ANY, 0, 0},
    {"restart cannot be sent, past stale_grace: 409 stale-code", OK200(ANS_HERE, H_OLD), 2400,
     0, 2500, 1, 0, 1, 1, 0, 0, DISK_OK, -1000, WHOAMI_STALE, "stale", "Restart it", P_ANSWER, 0, 0},
    {"reloading (not listening) within reload_grace: wait", 1, WF_UNREACHABLE, 0, NO_ANS, NULL,
     100, 0, 2000, 1, 0, 0, 0, 0, 0, DISK_OK, 0, WA_RETRY, "", NULL, P_ANY, 0, 0},
    {"not listening past reload_grace: backend-unreachable", 1, WF_UNREACHABLE, 0, NO_ANS, NULL,
     3000, 0, 3100, 1, 0, 0, 0, 0, 0, DISK_OK, 0, WHOAMI_UNREACHABLE, "",
     "GET /__whoami to 127.0.0.1:5001 (/w/app)", P_ANY, 0, 0},
    {"not listening, an old outcome: ask", 1, WF_UNREACHABLE, 0, NO_ANS, NULL, -100, 0, 0, 1, 0,
     0, 0, 0, 0, DISK_OK, 0, WA_FETCH, "", NULL, P_ANY, 0, 0},
    {"cut mid-answer after answering whole: wait (reload_grace)", 1, WF_CUT, 0, NO_ANS, NULL,
     100, 0, 200, 1, 0, 0, 0, 0, 0, DISK_OK, 0, WA_RETRY, "", NULL, P_ANY, 0, 0},
    {"cut mid-answer, past reload_grace: backend-unreachable", 1, WF_CUT, 0, NO_ANS, NULL, 3100,
     0, 3200, 1, 0, 0, 0, 0, 0, DISK_OK, 0, WHOAMI_UNREACHABLE, "", "in the middle", P_ANY, 0, 0},
    {"cut mid-answer, never answered whole: whoami-invalid", 1, WF_CUT, 0, NO_ANS, NULL, 100, 0,
     200, 0, 0, 0, 0, 0, 0, DISK_OK, 0, WHOAMI_INVALID, "invalid", "in the middle", P_ANY, 0, 0},
    {"timed out, never answered: whoami-invalid", 1, WF_TIMEOUT, 0, NO_ANS, NULL, 100, 0, 200,
     0, 0, 0, 0, 0, 0, DISK_OK, 0, WHOAMI_INVALID, "invalid", "no whole answer", P_ANY, 0, 0},
    {"500 after answering (a reloaded server that failed to load its app): wait", 1, WF_OK,
     500, NO_ANS, NULL, 100, 0, 2000, 1, 0, 0, 0, 0, 0, DISK_OK, 0, WA_RETRY, "", NULL, P_ANY, 0,
     0},
    {"500 after answering, past reload_grace: no-whoami", 1, WF_OK, 500, NO_ANS, NULL, 3000, 0,
     3100, 1, 0, 0, 0, 0, 0, DISK_OK, 0, WHOAMI_NO_WHOAMI, "no-whoami", "with HTTP 500", P_ANY, 0,
     0},
    {"500, never answered: no-whoami", 1, WF_OK, 500, NO_ANS, NULL, 100, 0, 200, 0, 0, 0, 0, 0, 0,
     DISK_OK, 0, WHOAMI_NO_WHOAMI, "no-whoami", "with HTTP 500", P_ANY, 0, 0},
    {"404: no-whoami", 1, WF_OK, 404, NO_ANS, NULL, 100, 0, 200, 0, 0, 0, 0, 0, 0, DISK_OK, 0,
     WHOAMI_NO_WHOAMI, "no-whoami", "with HTTP 404", P_ANY, 0, 0},
    {"an unusable answer: whoami-invalid", 1, WF_OK, 200, NO_ANS, NULL, 100, 0, 200, 0, 0, 0, 0,
     0, 0, DISK_OK, 0, WHOAMI_INVALID, "invalid", "fingerprint.hash is bad", P_ANY, 0, 0},
    {"404, trust_registry, nothing changed since it started: pass", 1, WF_OK, 404, NO_ANS, NULL,
     100, 0, 200, 0, 0, 0, 0, 0, 1, DISK_OK, 0, WHOAMI_PASS, "trusted", "no /__whoami",
     P_KIND, 0, 0},
    {"404, trust_registry, a file newer than the server: 409 stale-code", 1, WF_OK, 404, NO_ANS,
     NULL, 100, 0, 200, 0, 0, 0, 0, 0, 1, DISK_NEWER_FILE, 0, WHOAMI_STALE, "stale",
     "started before these changed: app/new.py", P_KIND, 0, 0},
    {"404, trust_registry, restart-on-stale, a file newer than the server: send the restart", 1,
     WF_OK, 404, NO_ANS, NULL, 100, 0, 200, 0, 0, 1, 0, 0, 1, DISK_NEWER_FILE, 0, WA_RESTART, "",
     NULL, P_ANY, 0, 0},
    {"404, trust_registry, restart sent, its start not moved yet (the old process's 404): wait",
     1, WF_OK, 404, NO_ANS, NULL, 900, 0, 1000, 0, 500, 1, 0, 0, 1, DISK_NEWER_FILE, 0, WA_RETRY,
     "", NULL, P_ANY, 0, 0},
    {"the checkout cannot be fingerprinted: whoami-invalid", OK200(ANS_HERE, H_DISK), 100, 0,
     200, 1, 0, 0, 0, 0, 0, DISK_UNREADABLE, 0, WHOAMI_INVALID, "invalid",
     "cannot fingerprint the code of /w/app", P_ANSWER, 0, 0},
    /* taking_in: the server says its fingerprint is about to move */
    {"restart-on-stale, taking a change in, past stale_grace: wait, no restart",
     OK200(ANS_HERE, H_OLD), 2400, 0, 2500, 1, 0, 1, 0, 0, 0, DISK_OK, -1000, WA_RETRY, "", NULL,
     P_ANSWER, -500, 0},
    {"taking a change in, past stale_grace: wait, no 409", OK200(ANS_HERE, H_OLD), 2400, 0, 2500,
     1, 0, 0, 0, 0, 0, DISK_OK, -1000, WA_RETRY, "", NULL, P_ANSWER, -500, 0},
    {"restart-on-stale, taking a change in for start_timeout: send the restart",
     OK200(ANS_HERE, H_OLD), 2400, 0, 2500, 1, 0, 1, 0, 0, 0, DISK_OK, -1000, WA_RESTART, "",
     NULL, P_ANSWER, -2600, 0},
    {"taking a change in for start_timeout: 409 stale-code saying so", OK200(ANS_HERE, H_OLD),
     2400, 0, 2500, 1, 0, 0, 0, 0, 0, DISK_OK, -1000, WHOAMI_STALE, "stale",
     "it said it was taking the change in (taking_in in its /__whoami, since", P_ANSWER, -2600, 0},
    {"taking a change in since just now, the request waited start_timeout: 409 stale-code",
     OK200(ANS_HERE, H_OLD), 5000, 0, 5100, 1, 0, 0, 0, 0, 0, DISK_OK, -1000, WHOAMI_STALE,
     "stale", "but did not report the new code within start_timeout", P_ANSWER, 4900, 0},
    {"taking a change in, within stale_grace: wait", OK200(ANS_HERE, H_OLD), 100, 0, 500, 1, 0,
     1, 0, 0, 0, DISK_OK, -1000, WA_RETRY, "", NULL, P_ANSWER, 50, 0},
    {"taking a change in, the disk's fingerprint: pass", OK200(ANS_HERE, H_DISK), 5, 0, 10, 1, 0,
     1, 0, 0, 0, DISK_OK, -1000, WHOAMI_PASS, "verified", "serves the code on disk", P_ANSWER, 1, 0},
    {"taking a change in, an answer older than the disk's change: ask", OK200(ANS_HERE, H_OLD),
     -500, -1000, 0, 1, 0, 1, 0, 0, 0, DISK_OK, -100, WA_FETCH, "", NULL, P_ANSWER, -600, 0},
    /* "reloads": false: nothing will take the change in, so no grace */
    {"nothing reloads it, stale within stale_grace: 409 stale-code at once",
     OK200(ANS_HERE, H_OLD), 100, 0, 500, 1, 0, 0, 0, 0, 0, DISK_OK, -1000, WHOAMI_STALE, "stale",
     "nothing reloads it (its /__whoami says \"reloads\": false)", P_ANSWER, 0, 1},
    {"restart-on-stale, nothing reloads it, within stale_grace: send the restart at once",
     OK200(ANS_HERE, H_OLD), 100, 0, 500, 1, 0, 1, 0, 0, 0, DISK_OK, -1000, WA_RESTART, "", NULL,
     P_ANSWER, 0, 1},
    {"nothing reloads it, an answer older than the disk's change: ask", OK200(ANS_HERE, H_OLD),
     -500, -1000, 0, 1, 0, 0, 0, 0, 0, DISK_OK, -100, WA_FETCH, "", NULL, P_ANSWER, 0, 1},
    {"nothing reloads it, restart sent, within start_timeout: wait", OK200(ANS_HERE, H_OLD), 900,
     0, 1000, 1, 500, 1, 0, 0, 0, DISK_OK, -1000, WA_RETRY, "", NULL, P_ANSWER, 0, 1},
    {"nothing reloads it, the disk's fingerprint: pass", OK200(ANS_HERE, H_DISK), 5, 0, 10, 1, 0,
     0, 0, 0, 0, DISK_OK, -1000, WHOAMI_PASS, "verified", "serves the code on disk", P_ANSWER, 0,
     1},
    /* a folder of the worktree, as its own checkout (a Go module in api/) */
    {"a folder of the worktree, its fingerprint the disk's: pass", OK200(ANS_SUB, H_DISK), 5, 0,
     10, 1, 0, 0, 0, 0, 0, DISK_OK, -5000, WHOAMI_PASS, "verified", "serves the code on disk",
     P_ANSWER, 0, 0},
    {"a folder of the worktree, an older verified answer: pass, not asked again",
     OK200(ANS_SUB, H_DISK), -1500, 0, 0, 1, 0, 0, 0, 0, 0, DISK_OK, -5000, WHOAMI_PASS,
     "verified", NULL, P_ANSWER, 0, 0},
    {"a folder of the worktree, stale past stale_grace: 409 stale-code", OK200(ANS_SUB, H_OLD),
     2400, 0, 2500, 1, 0, 0, 0, 0, 0, DISK_OK, -1000, WHOAMI_STALE, "stale",
     "your own server for " SUB, P_ANSWER, 0, 0},
    {"a worktree nested inside: 421 checkout-mismatch saying so", OK200(ANS_NESTED, H_DISK), 5,
     0, 10, 1, 0, 0, 0, 0, 0, DISK_OK, 0, WHOAMI_MISMATCH, "mismatch",
     "(a worktree of its own, nested inside yours)", P_ANSWER, 0, 0},
    {"a worktree nested inside, asked over a second ago: ask again", OK200(ANS_NESTED, H_DISK),
     -1500, 0, 0, 1, 0, 0, 0, 0, 0, DISK_OK, 0, WA_FETCH, "", NULL, P_ANY, 0, 0},
};
/* clang-format on */

static char *answer_include[] = {"src/**/*.py"};
static struct whoami_file disk_files[] = {
    {.path = "app/old.py", .type = 'f', .mtime_ns = (T - 3600000) * 1000000},
    {.path = "app/new.py", .type = 'f', .mtime_ns = (T - 1000) * 1000000},
};

/* 1: decided as the recheck after an edit decides, with no request
 * (whoami/recheck.c): a stale server is never restarted. */
static int no_restart;

/* Its registration's start, relative to T, when not a minute ago: moved
 * by a restart. */
static long long started;

/* When the restart before the row's was sent, relative to T; 0 none. */
static long long prior;

/* The folder the last run fingerprinted, "" none. */
static char used_root[PATH_MAX];

/* The checkout an answer names, and the worktree the disk finds it in. */
static const char *checkout_of(enum ans a)
{
    return a == ANS_OTHER ? OTHER : a == ANS_SUB ? SUB : a == ANS_NESTED ? NESTED : WT;
}

static const char *worktree_of(enum ans a)
{
    return a == ANS_OTHER ? OTHER : a == ANS_NESTED ? NESTED : WT;
}

/* The server's command, when not a Django runserver's. */
static const char *command;
/* the last lines of the Python traceback its error answer holds; NULL none */
static const char *traceback;

/* The hash of its last usable answer before the newest exchange, which
 * gave none, and when it was asked, relative to T; NULL none. */
static const char *good_hash;
static long long good_at;
/* the first lines of its error answer */
static const char *error_head = "";

/* The patterns the disk was fingerprinted under, the last time asked. */
static const struct whoami_patterns *used_patterns;

/* Run the decision for r as gate.c does; returns its final outcome, with
 * the patterns it fingerprinted the disk under in *used. */
static int run(const struct row *r, struct whoami_status *st, enum expect_patterns *used,
               char *detail, size_t detlen)
{
    struct whoami_disk_want want = {NULL, NULL};
    struct whoami_gate_config c = cfg;
    c.trust_registry = r->trust;
    struct whoami_target t = {NULL,
                              0,
                              "127.0.0.1:5001",
                              5001,
                              WT,
                              4242,
                              7,
                              r->restart_on_stale,
                              command ? command : "python3 manage.py runserver {port}",
                              started ? T + started : T - 60000,
                              T - 60000,
                              0,
                              0,
                              "",
                              "",
                              0,
                              0,
                              0};
    struct whoami_answer ans = {.pid = 4242, .started_ms = T - 60000, .files = 2};
    snprintf(ans.checkout, sizeof ans.checkout, "%s", checkout_of(r->ans));
    snprintf(ans.hash, sizeof ans.hash, "%s", r->ans_hash ? r->ans_hash : H_DISK);
    ans.patterns = (struct whoami_patterns){answer_include, 1, NULL, 0};
    ans.taking_in_ms = r->taking_in ? T + r->taking_in : 0;
    ans.no_reloader = r->no_reloader;
    struct whoami_answer good = ans;
    snprintf(good.checkout, sizeof good.checkout, "%s", WT);
    snprintf(good.hash, sizeof good.hash, "%s", good_hash ? good_hash : "");
    struct whoami_memory m = {r->have,
                              r->result,
                              r->status,
                              r->ans ? &ans : NULL,
                              r->result == WF_CUT       ? "closed the connection in the middle"
                              : r->result == WF_TIMEOUT ? "no whole answer in time"
                              : r->result == WF_OK      ? "fingerprint.hash is bad"
                                                        : "Connection refused",
                              T + r->asked,
                              r->answered,
                              r->restart ? T + r->restart : 0,
                              r->restart ? T - 60000 : 0,
                              prior ? T + prior : 0,
                              0,
                              0,
                              0,
                              0,
                              {NULL, 0},
                              0,
                              0,
                              traceback,
                              good_hash ? &good : NULL,
                              T + good_at,
                              error_head};
    struct whoami_fp fp = {H_DISK, r->disk == DISK_NEWER_FILE ? 2 : 1, disk_files, 0};
    struct whoami_disk disk = {r->disk == DISK_UNREADABLE ? NULL : &fp,
                               r->changed ? T + r->changed : 0, "No such file or directory",
                               worktree_of(r->ans)};
    struct whoami_case wc = {&c, &t, &m, NULL, T + r->since, T + r->now, no_restart};
    for (int i = 0; i < 8; i++) {
        int d = whoami_decide(&wc, st, &want, detail, detlen);
        if (d == WA_LISTENER) {
            m.listener_checked = 1;
            m.listener_moved = r->listener_moved;
        } else if (d == WA_RESTART && r->restart_fails) {
            m.restart_failed = 1;
        } else if (d == WA_HOLDERS) {
            m.holders_checked = 1; /* none found: the refusals name the pid that answered */
        } else if (d == WA_IGNORED) {
            m.ignored_checked = 1; /* not all ignored: the refusal as it was */
        } else if (d == WA_DISK) {
            wc.disk = &disk;
            snprintf(used_root, sizeof used_root, "%s", want.root);
            used_patterns = want.patterns;
            *used = want.patterns == &ans.patterns                          ? P_ANSWER
                    : want.patterns == &whoami_kind_of(t.command)->patterns ? P_KIND
                                                                            : P_ANY;
        } else {
            return d;
        }
    }
    return -1; /* a decision that never ends */
}

static void check_row(const struct row *r)
{
    struct whoami_status st = {0};
    enum expect_patterns used = P_ANY;
    char detail[4096] = "";
    used_root[0] = '\0';
    int d = run(r, &st, &used, detail, sizeof detail);
    if (d == WHOAMI_PASS) /* a pass has no refusal: its reason is the status's */
        snprintf(detail, sizeof detail, "%s", st.detail);
    tap_is_int(d, r->want, __FILE__, __LINE__, "%s", r->name);
    tap_ok(strcmp(st.state, r->want_state) == 0, __FILE__, __LINE__, "%s: status \"%s\"", r->name,
           r->want_state);
    if (strcmp(st.state, r->want_state) != 0)
        printf("#   got status \"%s\"\n", st.state);
    if (r->want_detail && !tap_ok(strstr(detail, r->want_detail) != NULL, __FILE__, __LINE__,
                                  "%s: says \"%s\"", r->name, r->want_detail))
        printf("#   detail: %s\n", detail);
    if (r->want_patterns != P_ANY)
        tap_ok(used == r->want_patterns, __FILE__, __LINE__, "%s: the disk under the %s patterns",
               r->name, r->want_patterns == P_ANSWER ? "answer's" : "command's kind's");
    /* the answer's folder is the one fingerprinted, the worktree's without one */
    if (r->want_patterns != P_ANY)
        tap_ok(strcmp(used_root, r->want_patterns == P_ANSWER ? checkout_of(r->ans) : WT) == 0,
               __FILE__, __LINE__, "%s: the disk of %s", r->name, used_root);
}

/* A verified server's requests copy nothing: its status changes once per
 * answer (proxy/ copies it into the registration when seq moves). */
static void check_hot_path(void)
{
    struct whoami_status st = {0};
    enum expect_patterns used;
    char detail[256];
    run(&rows[2], &st, &used, detail, sizeof detail);
    unsigned long seq = st.seq;
    run(&rows[2], &st, &used, detail, sizeof detail);
    tap_is_int((long long)st.seq, (long long)seq, __FILE__, __LINE__,
               "a second verified pass on the same answer leaves the status as it was");
    tap_ok(strcmp(st.hash, H_DISK) == 0 && strcmp(st.disk_hash, H_DISK) == 0 &&
               strcmp(st.checkout, WT) == 0 && st.checked_ms == T - 1500,
           __FILE__, __LINE__, "the verified status names the answer's checkout, hashes and time");
}

/* The recheck after an edit (no request) of a restart-on-stale server
 * past stale_grace: shown stale, saying since when the disk changed, and
 * not restarted: restarts stay the requests'. */
static void check_no_restart(void)
{
    struct whoami_status st = {0};
    enum expect_patterns used;
    char detail[4096], at[16];
    no_restart = 1;
    int d = run(&rows[10], &st, &used, detail, sizeof detail);
    no_restart = 0;
    host_time_of_day(T - 1000, at, sizeof at);
    tap_is_int(d, WHOAMI_STALE, __FILE__, __LINE__, "no request: a stale server is not restarted");
    tap_ok(strcmp(st.state, "stale") == 0 && strncmp(st.detail, "stale since ", 12) == 0 &&
               strstr(st.detail, at) && strstr(st.detail, "restarts it at the next request to it"),
           __FILE__, __LINE__,
           "its status says stale since the disk's change, and that a request restarts it");
    if (strncmp(st.detail, "stale since ", 12) != 0)
        printf("#   detail: %s\n", st.detail);
}

/* A trusted server restarted because a file changed: once its
 * registration's start moved past the restart, its new process's 404 is
 * trusted again, by that start (the file is older than it). */
static void check_trusted_restarted(void)
{
    struct whoami_status st = {0};
    enum expect_patterns used;
    char detail[4096];
    const struct row r = {"",   1, WF_OK, 404,  NO_ANS, NULL, 900, 0,
                          1000, 0, 500,   1,    0,      0,    1,   DISK_NEWER_FILE,
                          0,    0, "",    NULL, P_ANY,  0,    0};
    started = 600;
    int d = run(&r, &st, &used, detail, sizeof detail);
    started = 0;
    tap_is_int(d, WHOAMI_PASS, __FILE__, __LINE__,
               "trusted, restart sent, its start moved after it: the new 404 passes");
    tap_ok(strcmp(st.state, "trusted") == 0, __FILE__, __LINE__, "shown trusted again");
}

/* --trust-registry watches what the server's command says it is built
 * from: a `go run` server's .go files, where the Python defaults left an
 * edited Go server trusted while its tests ran on the old binary; never
 * what a run writes into the worktree (a stale server mid-run is
 * restarted under the tests). */
static void check_trusted_kinds(void)
{
    static const struct {
        const char *command, *watched, *unwatched;
    } cases[] = {
        {"go run . -port {port}", "greeting.go", "greeting_test.go"},
        {"go run . -port {port}", "go.mod", ".wtproxy-run/fp.json"},
        {"sh -c cd api && go build -o app . && exec ./app", "api/handlers/todo.go",
         "api/testdata/golden.go"},
        {"/usr/bin/node server.mjs {port}", "lib/messages.json", "test-results/.last-run.json"},
        {"npx vite --port {port}", "src/app.ts", "e2e/home.spec.ts"},
        {"npx vite --port {port}", "src/routes/+page.ts", ".svelte-kit/generated/root.js"},
        {"python3 manage.py runserver {port}", "shop/views.py", "node_modules/x/setup.py"},
        {"cargo run -- --port {port}", "src/main.rs", "target/debug/build/x/out.rs"},
        {"bin/rails server -p {port}", "app/views/items/index.html.erb", "tmp/cache/x.erb"},
        {"bundle exec puma -p {port}", "app/views/items/show.json.jbuilder", "log/development.log"},
        {"ruby server.rb {port}", "config/database.yml", "spec/fixtures/items.yml"},
        {"ruby server.rb {port}", "config/locales/en.yml", "vendor/bundle/x/config/a.yml"},
        {"morbo -l http://127.0.0.1:{port} app.pl", "templates/index.html.ep",
         "local/lib/perl5/Mojolicious.pm"},
        {"carton exec -- plackup -p {port} app.psgi", "lib/MyApp/Controller/Items.pm", "t/items.t"},
        {"perl script/app daemon -l http://*:{port}", "views/items.tt", "blib/lib/MyApp.pm"},
        {"./bin/server -port {port}", "lib/MyApp.pm", "log/development.log"},
        {"./bin/server -port {port}", "templates/index.html.ep", "tmp/x.ep"},
        {"./bin/server -port {port}", "cmd/server/main.go", "playwright-report/data.json"},
        {"./bin/server -port {port}", "app/views.py", ".wtproxy-run/fp.json"},
    };
    const struct row trusted = {"", 1, WF_OK, 404,     NO_ANS, NULL, 100, 0,    200,   0, 0, 0,
                                0,  0, 1,     DISK_OK, 0,      0,    "",  NULL, P_ANY, 0, 0};
    struct whoami_status st = {0};
    enum expect_patterns used;
    char detail[4096];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        command = cases[i].command;
        used_patterns = NULL;
        run(&trusted, &st, &used, detail, sizeof detail);
        tap_ok(used_patterns && whoami_patterns_select(used_patterns, cases[i].watched) &&
                   !whoami_patterns_select(used_patterns, cases[i].unwatched),
               __FILE__, __LINE__, "trusted `%s`: %s watched, %s not", cases[i].command,
               cases[i].watched, cases[i].unwatched);
    }
    command = "go run . -port {port}";
    run(&trusted, &st, &used, detail, sizeof detail);
    tap_ok(strstr(st.detail, "watched for a Go server: **/*.go, **/go.mod") &&
               strstr(st.detail, "not the files it embeds (//go:embed)"),
           __FILE__, __LINE__, "a trusted Go server's status says what is watched, and what not");
    if (!strstr(st.detail, "watched for a Go server"))
        printf("#   detail: %s\n", st.detail);
    struct row edited = trusted;
    edited.disk = DISK_NEWER_FILE;
    disk_files[1].path = "greeting.go";
    int d = run(&edited, &st, &used, detail, sizeof detail);
    tap_is_int(d, WHOAMI_STALE, __FILE__, __LINE__, "a trusted Go server, greeting.go edited: 409");
    tap_ok(strstr(detail, "started before these changed: greeting.go") != NULL, __FILE__, __LINE__,
           "the refusal names the .go file");
    disk_files[1].path = "app/new.py";
    command = NULL;
}

/* A server our restart started that answers older code (an edit landed
 * while it started: its fingerprint predates the disk's): restarted again
 * at once when the disk changed after the restart was sent, else refused
 * at once, not held for start_timeout. */
static void check_restarted_stale(void)
{
    struct whoami_status st = {0};
    enum expect_patterns used;
    char detail[4096];
    /* waiting since -2000 (past stale_grace), restart sent at +500, its
     * start moved to +600, asked at +900 */
    struct row r = {"",    OK200(ANS_HERE, H_OLD),
                    900,   -2000,
                    1000,  1,
                    500,   1,
                    0,     0,
                    0,     DISK_OK,
                    700,   0,
                    "",    NULL,
                    P_ANY, 0,
                    0};
    started = 600;
    int d = run(&r, &st, &used, detail, sizeof detail);
    tap_is_int(d, WA_RESTART, __FILE__, __LINE__,
               "restarted, stale, the disk changed after the restart: restart it again");
    r.changed = 400;
    d = run(&r, &st, &used, detail, sizeof detail);
    tap_is_int(d, WA_RESTART, __FILE__, __LINE__,
               "restarted, stale, the disk unchanged since the restart: one more restart");
    prior = 450; /* both restarts after the change at +400 */
    d = run(&r, &st, &used, detail, sizeof detail);
    tap_is_int(d, WHOAMI_STALE, __FILE__, __LINE__,
               "restarted twice since the disk changed, still stale: 409 at once");
    tap_ok(strstr(detail, "wtproxy restarted your server") != NULL, __FILE__, __LINE__,
           "the refusal says it was restarted");
    r.asked = 450;
    d = run(&r, &st, &used, detail, sizeof detail);
    tap_is_int(d, WA_RETRY, __FILE__, __LINE__,
               "an answer asked before the restart was sent is the old process's: wait");
    started = 0;
    prior = 0;
    /* refused after its restart (past start_timeout), then an edit */
    r = rows[12];
    r.changed = 5800;
    d = run(&r, &st, &used, detail, sizeof detail);
    tap_is_int(d, WA_RESTART, __FILE__, __LINE__,
               "refused after a restart, then an edit: a new staleness, restarted");
}

/* gunicorn --reload whose app fails to load: its workers answer every
 * request, /__whoami too, with a 500 of a Python traceback, and it never
 * answered. Waited for within reload_grace (its wrapper reads the failure
 * in its output and tells the daemon), then said as an app that fails to
 * load, its traceback quoted: never as a server without the middleware. */
static void check_app_error(void)
{
    struct whoami_status st = {0};
    enum expect_patterns used;
    char detail[4096] = "";
    struct row r = {.name = "app fails to load",
                    .have = 1,
                    .result = WF_OK,
                    .status = 500,
                    .ans = NO_ANS,
                    .asked = -10,
                    .since = -100,
                    .disk = DISK_OK};
    traceback = "  File \"/w/app/app/models.py\", line 4\nSyntaxError: '(' was never closed";
    int d = run(&r, &st, &used, detail, sizeof detail);
    tap_is_int(d, WA_RETRY, __FILE__, __LINE__,
               "a traceback within reload_grace: waited for, its wrapper may say it");
    r.since = -4000;
    d = run(&r, &st, &used, detail, sizeof detail);
    traceback = NULL;
    tap_is_int(d, WHOAMI_APP_ERROR, __FILE__, __LINE__, "past reload_grace: its app fails to load");
    tap_ok(strcmp(st.state, "app-error") == 0 && strstr(detail, "its app fails to load") &&
               strstr(detail, "app/models.py\", line 4\nSyntaxError") &&
               !strstr(detail, "middleware"),
           __FILE__, __LINE__, "said so with the traceback's end, not as a missing middleware");
    tap_ok(strcmp(whoami_verdict_reason(WHOAMI_APP_ERROR), "backend-not-ready") == 0, __FILE__,
           __LINE__, "its reason is a failed start's");
    d = run(&r, &st, &used, detail, sizeof detail);
    tap_is_int(d, WHOAMI_NO_WHOAMI, __FILE__, __LINE__,
               "a 500 without a traceback, never answered: no-whoami, as before");
}

/* hugo server after an atomic-rename save: verified, then every path,
 * /__whoami too, answers 500 without a traceback. Broken by the change,
 * not without a middleware: waited for within reload_grace, restarted
 * once with --restart-on-stale, else (and after that restart) said with
 * its error's first lines and the fix. */
static void check_broken(void)
{
    struct whoami_status st = {0};
    enum expect_patterns used;
    char detail[4096] = "";
    struct row r = {.name = "broken by a change",
                    .have = 1,
                    .result = WF_OK,
                    .status = 500,
                    .ans = NO_ANS,
                    .asked = -10,
                    .since = -100,
                    .answered = 1,
                    .disk = DISK_OK,
                    .changed = -1000};
    good_hash = H_OLD;
    good_at = -2000;
    error_head = "ERROR 2026/12/07 render: template: index.html:3: unexpected \"}\"";
    int d = run(&r, &st, &used, detail, sizeof detail);
    tap_is_int(d, WA_RETRY, __FILE__, __LINE__, "within reload_grace: waited for");
    r.since = -4000;
    d = run(&r, &st, &used, detail, sizeof detail);
    tap_is_int(d, WHOAMI_BROKEN, __FILE__, __LINE__, "past reload_grace: broken by the change");
    tap_ok(strcmp(st.state, "broken") == 0 && strstr(detail, "until its files changed") &&
               strstr(detail, "HTTP 500: the change broke it") &&
               strstr(detail, "\nERROR 2026/12/07 render: template: index.html:3") &&
               strstr(detail, "Fix the error and save") && !strstr(detail, "middleware"),
           __FILE__, __LINE__,
           "said with its error's first lines and the fix, never the middleware");
    tap_ok(strcmp(whoami_verdict_reason(WHOAMI_BROKEN), "backend-not-ready") == 0, __FILE__,
           __LINE__, "its reason is a failed server's");
    good_hash = H_DISK; /* an edit undone: the same files, changed since it answered */
    d = run(&r, &st, &used, detail, sizeof detail);
    tap_is_int(d, WHOAMI_BROKEN, __FILE__, __LINE__, "an edit undone since: still broken by it");
    r.changed = -3000; /* nothing changed since it answered */
    r.restart_on_stale = 1;
    d = run(&r, &st, &used, detail, sizeof detail);
    tap_is_int(d, WHOAMI_BROKEN, __FILE__, __LINE__,
               "its fingerprinted files unchanged since it answered: broken, not restarted");
    tap_ok(strstr(detail, "though no file its fingerprint covers changed since") &&
               !strstr(detail, "wtproxy restarts it") && !strstr(detail, "middleware"),
           __FILE__, __LINE__, "said so, never as a server without the middleware");
    r.changed = -1000;
    d = run(&r, &st, &used, detail, sizeof detail);
    tap_is_int(d, WA_RESTART, __FILE__, __LINE__, "--restart-on-stale: restarted once");
    r.restart = -500; /* sent after the change; its new process answered 500 too */
    r.asked = -100;
    started = -300;
    d = run(&r, &st, &used, detail, sizeof detail);
    tap_is_int(d, WHOAMI_BROKEN, __FILE__, __LINE__,
               "its restarted process answers 500 too: refused at once, not restarted again");
    tap_ok(strstr(detail, "wtproxy restarted it after the change") != NULL, __FILE__, __LINE__,
           "the refusal says it was restarted");
    r.changed = -200; /* the fix saved since that restart */
    d = run(&r, &st, &used, detail, sizeof detail);
    tap_is_int(d, WA_RESTART, __FILE__, __LINE__, "a change since that restart: restarted again");
    started = 0;
    good_hash = NULL;
    error_head = "";
}

/* What a refusal quotes of an error answer: its first lines of text, an
 * HTML error page's as its text. */
static void check_error_head(void)
{
    static const char page[] =
        "<!DOCTYPE html>\n<html><head><title>x</title>\n<style>\nbody { color: red; }\n</style>"
        "</head>\n<body>\n  <h1>Error</h1>\n<pre>template: index.html:3: unexpected &quot;}&quot; "
        "in &lt;if&gt;</pre>\n\n<p>a</p>\n<p>b</p>\n<p>c</p>\n</body></html>\n";
    char out[512];
    tap_ok(whoami_error_head(page, sizeof page - 1, out, sizeof out) &&
               strcmp(out, "Error\ntemplate: index.html:3: unexpected \"}\" in <if>\na\nb") == 0,
           __FILE__, __LINE__, "an HTML page: its text's first four lines");
    if (strcmp(out, "Error\ntemplate: index.html:3: unexpected \"}\" in <if>\na\nb") != 0)
        printf("#   got: %s\n", out);
    tap_ok(whoami_error_head("Internal Server Error", 21, out, sizeof out) &&
               strcmp(out, "Internal Server Error") == 0,
           __FILE__, __LINE__, "a line of text, as it is");
    tap_ok(!whoami_error_head(NULL, 0, out, sizeof out) && out[0] == '\0', __FILE__, __LINE__,
           "an empty body: none");
}

int main(void)
{
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        check_row(&rows[i]);
    check_hot_path();
    check_no_restart();
    check_trusted_restarted();
    check_trusted_kinds();
    check_restarted_stale();
    check_app_error();
    check_broken();
    check_error_head();
    tap_ok(strcmp(whoami_verdict_reason(WHOAMI_STALE), "stale-code") == 0 &&
               strcmp(whoami_verdict_reason(WHOAMI_MISMATCH), "checkout-mismatch") == 0,
           __FILE__, __LINE__, "verdicts name their X-Wtproxy-Refused reason");
    return done_testing();
}
