/* run_orphan.c - `wtproxy run` meeting a server that outlived its daemon.
 *
 * A daemon that dies (kill -9, the OOM killer, a crash) leaves its
 * `wtproxy run` wrappers and their servers running: the daemon started
 * next reloads their entries from the state file and routes to them (the
 * entry is "restored"). Meanwhile nothing answered on the front, so a test
 * runner (Playwright's webServer with reuseExistingServer) ran its
 * `wtproxy run` again, which started that daemon and met the old server
 * on its key. That server is no second server of its owner's making, and
 * killing it would be wrong when it serves the worktree's code. So this
 * run waits for the daemon's /__whoami verdict on it (the daemon asks a
 * restored ready server at its start, and one its wrapper marks ready
 * later), then:
 *  - verified (or trusted, or whoami = off): reuses it, says so, and stays
 *    in the foreground while it runs, as a webServer command must (one
 *    that exits before its URL answers fails the test run). A signal ends
 *    this command only: the server is not this command's to stop, as
 *    Playwright leaves a reused server running;
 *  - refused (stale, another checkout's, no /__whoami...), failed (its
 *    start, or an edit, broke it: it waits for a change to its files) or
 *    no verdict in time: stops it through its wrapper (the stop op) and
 *    runs CMD in its place, whose output (a traceback) is this run's.
 * One registered with `wtproxy register` cannot be stopped so: the
 * conflict is reported, naming it. */
#include "run.h"
#include "servers.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#define ORPHAN_POLL_MS 100
/* The daemon's verdict: its /__whoami (whoami_timeout), a stale server's
 * stale_grace, and a wrapper marking its server ready after the restart. */
#define ORPHAN_VERDICT_MS 15000
#define ORPHAN_STOP_MS (WTP_RESTART_STOP_MS + 5000) /* the wrapper's grace, and its exit */
#define FOLLOW_POLL_MS 250

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Say a line on stderr and in the server's log, where this run's header
 * line would otherwise stand for a server it never started. */
static void say(const struct cli_run *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void say(const struct cli_run *r, const char *fmt, ...)
{
    char line[2 * PATH_MAX + 2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
    cli_run_log_note(&r->log, line);
}

/* The entry on r's key now (a new reference), NULL when there is none or
 * no daemon answers. */
static json_t *entry_now(const struct cli_run *r)
{
    struct cli_server_args a = {.front = r->front};
    char err[PATH_MAX + 256];
    snprintf(a.worktree, sizeof a.worktree, "%s", r->worktree);
    json_t *list = cli_servers_matching(&a, err, sizeof err);
    json_t *e = json_incref(json_array_get(list, 0));
    json_decref(list);
    return e;
}

/* Whether e is the process holder named (its pid and start time). */
static int same_process(json_t *e, json_t *holder)
{
    return e &&
           json_integer_value(json_object_get(e, "pid")) ==
               json_integer_value(json_object_get(holder, "pid")) &&
           json_integer_value(json_object_get(e, "pid_start")) ==
               json_integer_value(json_object_get(holder, "pid_start"));
}

/* Whether e has its verdict: ready, and its /__whoami asked ("" is a
 * daemon with whoami = off, which asks nothing); or failed, waiting for a
 * change to its files (its entry's start_failed, kept by the daemon that
 * died), which no wait makes ready. */
static int decided(json_t *e)
{
    return (strcmp(str(e, "state"), "ready") == 0 && !cli_verdict_pending(e)) ||
           json_object_get(e, "start_failed");
}

/* The holder's entry once decided, or as it is after ORPHAN_VERDICT_MS;
 * NULL when it is gone (or another process holds the key now). */
static json_t *await_verdict(const struct cli_run *r, json_t *holder)
{
    for (long waited = 0;; waited += ORPHAN_POLL_MS) {
        json_t *e = entry_now(r);
        if (!same_process(e, holder)) {
            json_decref(e);
            return NULL;
        }
        if (decided(e) || waited >= ORPHAN_VERDICT_MS)
            return e;
        json_decref(e);
        sleep_ms(ORPHAN_POLL_MS);
    }
}

/* The length of s's first sentence: a refusal's detail ends with its fix,
 * which this run is. */
static int first_sentence(const char *s)
{
    const char *end = strstr(s, ". ");
    return end ? (int)(end - s) : (int)strlen(s);
}

/* Why e is not reused, in a clause; NULL when it is good to reuse (its
 * verdict passes, or the daemon checks none). */
static const char *refused(json_t *e, char *why, size_t len)
{
    const char *detail = str(json_object_get(e, "whoami"), "detail");
    char words[1400], named[64];
    json_t *failed = json_object_get(e, "start_failed");
    size_t n;
    const char *error = host_error_line(str(failed, "lines"), &n);
    if (failed) { /* started again, its output is this run's, where its runner reads it */
        snprintf(why, len, "%s and waits for a change to its files (its error: %.*s)",
                 strcmp(str(failed, "when"), "edit") == 0 ? "an edit broke it"
                                                          : "it failed at start",
                 (int)(n < 600 ? n : 600), error);
        return why;
    }
    if (strcmp(str(e, "state"), "ready") != 0) {
        snprintf(why, len, "it was not ready within %d s", ORPHAN_VERDICT_MS / 1000);
        return why;
    }
    switch (cli_verdict_words(e, ORPHAN_VERDICT_MS, words, sizeof words)) {
    case CLI_VERDICT_OFF:
    case CLI_VERDICT_PASS:
        return NULL;
    case CLI_VERDICT_UNDECIDED:
        snprintf(why, len, "%s", words);
        break;
    case CLI_VERDICT_REFUSED:
        cli_verdict_named(e, named, sizeof named);
        snprintf(why, len, "the /__whoami gate refuses it%s: %.*s", named, first_sentence(detail),
                 detail);
        break;
    }
    return why;
}

/* Stop e through its wrapper and wait until its entry is gone. Returns 0,
 * or -1 (not a wrapper's, or it did not go: the conflict is reported). */
static int stop_holder(const struct cli_run *r, json_t *e)
{
    char err[PATH_MAX + 256];
    json_t *reply = NULL, *req = json_pack("{s:s, s:s, s:i}", "op", "stop", "worktree", r->worktree,
                                           "front", r->front);
    int rc = req ? cli_call(req, 0, &reply, err, sizeof err) : -1;
    json_decref(req);
    if (rc < 0 || !json_is_true(json_object_get(reply, "ok"))) {
        fprintf(stderr, "wtproxy: could not stop it: %s\n", rc < 0 ? err : str(reply, "message"));
        json_decref(reply);
        return -1;
    }
    json_decref(reply);
    for (long waited = 0; waited < ORPHAN_STOP_MS; waited += ORPHAN_POLL_MS) {
        json_t *now = entry_now(r);
        int gone = !same_process(now, e);
        json_decref(now);
        if (gone)
            return 0;
        sleep_ms(ORPHAN_POLL_MS);
    }
    fprintf(stderr, "wtproxy: pid %lld still serves %s %d s after its stop\n",
            json_integer_value(json_object_get(e, "pid")), r->worktree, ORPHAN_STOP_MS / 1000);
    return -1;
}

enum cli_run_holder cli_run_orphan(struct cli_run *r, json_t *holder)
{
    long long pid = json_integer_value(json_object_get(holder, "pid"));
    if (!json_is_true(json_object_get(holder, "restored")) || pid <= 0)
        return CLI_RUN_HOLDER_KEPT; /* pid 0: a --ttl entry, no process to reuse */
    json_t *e = await_verdict(r, holder);
    if (!e)
        return CLI_RUN_HOLDER_GONE; /* it exited meanwhile: the key is free */
    char why[1400];
    const char *no = refused(e, why, sizeof why);
    enum cli_run_holder out = CLI_RUN_HOLDER_REUSED;
    if (!no) {
        const char *v = cli_verdict(e);
        say(r,
            "wtproxy: %s is already served on front :%d by pid %lld (%s, port %lld), which "
            "outlived the daemon it was registered with%s%s; reusing it. This command "
            "waits while it runs; to stop it: wtproxy stop %s --front %d",
            cli_run_folder(r->worktree), r->front, pid, str(e, "command"),
            json_integer_value(json_object_get(e, "port")), v[0] ? ", " : "", v, r->worktree,
            r->front);
        r->reused = (pid_t)pid;
        r->reused_start = (unsigned long long)json_integer_value(json_object_get(e, "pid_start"));
    } else {
        say(r,
            "wtproxy: %s's server on front :%d (pid %lld, %s) outlived the daemon it was "
            "registered with, and %s; stopping it to run this one",
            cli_run_folder(r->worktree), r->front, pid, str(e, "command"), no);
        out = stop_holder(r, e) == 0 ? CLI_RUN_HOLDER_GONE : CLI_RUN_HOLDER_KEPT;
    }
    json_decref(e);
    return out;
}

/* SIGTERM, SIGINT, SIGHUP: the test runner's teardown, a terminal's ^C. */
static volatile sig_atomic_t follow_ended;

static void end_follow(int sig)
{
    follow_ended = sig;
}

int cli_run_follow(const struct cli_run *r)
{
    struct sigaction sa = {.sa_handler = end_follow};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    while (!follow_ended) {
        unsigned long long start = host_pid_start(r->reused);
        if (start == 0 || (r->reused_start && start != r->reused_start)) {
            fprintf(stderr, "wtproxy: pid %d, which served %s, exited\n", (int)r->reused,
                    cli_run_folder(r->worktree));
            return 0;
        }
        sleep_ms(FOLLOW_POLL_MS);
    }
    fprintf(stderr, "wtproxy: stopped waiting for pid %d; it serves %s on\n", (int)r->reused,
            cli_run_folder(r->worktree));
    return 0;
}
