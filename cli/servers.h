/* servers.h - acting on servers that run (or should): what `wtproxy logs`,
 * `restart`, `stop`, `register` and the MCP tools share. Which servers a
 * command selects (logs.c), the declared services restart starts rather
 * than restarts (restart_declared.c) and those it stops first because their
 * start line changed (restart_changed.c), and the daemon's /__whoami
 * verdict on each, waited for and said (verdict.c). Internal to cli/;
 * apart from cli.h so that each stays readable in one sitting. */
#ifndef WTP_CLI_SERVERS_H
#define WTP_CLI_SERVERS_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "cli.h"

/* --- logs.c: what logs, restart and stop share --- */

struct cli_server_args {
    const char *dir;     /* WORKTREE as given, NULL: the current one */
    const char *service; /* --service, NULL any */
    const char *frontv;
    int front; /* --front, 0 any */
    char worktree[PATH_MAX];
};

/* Parse [WORKTREE] [--service S] [--front F] and extra's flags (NULL or
 * ended by a NULL name), flags before or after WORKTREE. Returns 0, 1 for
 * --help, or -1 with err. */
int cli_server_args(int argc, char **argv, struct cli_server_args *a, const struct cli_opt *extra,
                    char *err, size_t errlen);

/* {"op": op, "worktree", ["service"], ["front"]} for a (new reference). */
json_t *cli_server_request(const char *op, const struct cli_server_args *a);

/* This machine's registrations that a selects (a new JSON array of
 * entries), or NULL with err when no daemon answers. */
json_t *cli_servers_matching(const struct cli_server_args *a, char *err, size_t errlen);

/* --- ls_exited.c: the servers that exited lately --- */

/* The last lines of a server's output s into out, each after "  | ", so
 * that they never read as wtproxy's own words. With to_error they end with
 * the error they name (else they are its last ones) and a note counts the
 * lines after them; without it (a server someone killed: no error of its
 * output ended it) they are its last ones. */
void cli_quote_tail(const char *s, int to_error, char *out, size_t len);

/* x (one of the `list` op's "exited") in words: the worktree and front,
 * how and when its server ended, its last lines, where the whole log is
 * and the command that starts it again. */
void cli_exited_words(json_t *x, char *out, size_t len);

/* The "exited" of a `list` reply (of worktree; NULL: all) whose key has
 * no live entry in the reply, each with "said" (cli_exited_words): a new
 * JSON array, empty from a daemon that keeps none. */
json_t *cli_exited_of(json_t *reply, const char *worktree);

/* --- restart_declared.c: what restart starts rather than restarts --- */

/* The services a's worktree's .wtproxy declares that a selects and that do
 * not run now (a new JSON array of the services op's entries; empty when
 * none, or when the daemon reads no .wtproxy there). */
json_t *cli_declared_stopped(const struct cli_server_args *a);

/* The services a's worktree's .wtproxy declares that a selects, running
 * or not when stopped_only is 0 (a new JSON array, as above). */
json_t *cli_declared_selected(const struct cli_server_args *a, int stopped_only);

/* Whether x (an entry, or a service of the services op) carries its
 * wrapper's word that its server failed and lives on, waiting for a
 * change to its files ("start_failed"): then out says so, and what to do,
 * in a clause (its log's last lines name the error). No wait makes such a
 * server ready. */
int cli_failed_words(json_t *x, char *out, size_t len);

/* Start each of stopped through the daemon (op start), wait up to wait_ms
 * until each is ready, saying what each waits for meanwhile (on stderr),
 * and say what happened: the time each took to be ready and the daemon's
 * /__whoami verdict on it (status 1 when refused, as for a restarted
 * server), or the log's last lines of one that exited. Marks the entries
 * of stopped. Returns
 * the exit status. */
int cli_start_declared(const struct cli_server_args *a, json_t *stopped, long wait_ms);

/* The entry of list (one worktree's servers, as listed) on e's front, or
 * NULL: a worktree has one server a front (restart.c). */
json_t *cli_entry_on_front(json_t *list, json_t *e);

/* --- restart_changed.c: a server started from an older .wtproxy --- */

/* The declared services a selects that the daemon started from an older
 * .wtproxy: they run another command than its start says now, or under
 * another service name. A new JSON array of {front, why}. A restart
 * re-runs a server's own command, under its own name. */
json_t *cli_declared_changed(const struct cli_server_args *a);

/* Stop each server cli_declared_changed(a) names, one after the other,
 * each waited for (through cli_pause) until its wrapper has unregistered
 * it, so that what follows starts it from the file. Before each stop, say
 * gets (with ctx) its front and the sentence that says so: "WT's server on
 * front F runs `OLD`, not the .wtproxy's start now (`NEW`): stopping it,
 * to start it from the file". Returns 0, or -1 with err: no daemon, the
 * daemon's refusal, one still registered after the wrapper's grace, or the
 * wait cancelled. */
int cli_stop_changed(const struct cli_server_args *a,
                     void (*say)(void *ctx, int front, const char *line), void *ctx, char *err,
                     size_t errlen);

/* --- verdict.c: the /__whoami verdict restart and register wait for --- */

/* How long restart (the command and the MCP tool) waits for the daemon's
 * verdict on a restarted server: its /__whoami (whoami_timeout) and, for a
 * stale one, stale_grace, in which an autoreloader may catch up. */
#define CLI_VERDICT_WAIT_MS 15000

/* The gate's state of x, a listed entry ("" when it has none: whoami =
 * off, or x NULL). */
const char *cli_verdict(json_t *x);

/* Whether x's verdict is still to come: "unchecked" (a new or restarted
 * server, not asked yet), "changed" or "taking-in" (its code changed on
 * disk and the daemon asks it again). 1 or 0. */
int cli_verdict_pending(json_t *x);

/* Poll a's servers until the entry of each of asked (on its front) has a
 * verdict, is not "unchecked", or may_answer (NULL: always) says it will
 * not have one soon, for wait_ms at most (less when cli_pause says the
 * wait is cancelled). Returns the last list (a new reference; empty when
 * the daemon did not answer). */
json_t *cli_await_verdicts(const struct cli_server_args *a, json_t *asked, long wait_ms,
                           int (*may_answer)(json_t *x));

enum cli_verdict_kind {
    CLI_VERDICT_OFF,       /* not checked: whoami = off */
    CLI_VERDICT_UNDECIDED, /* no verdict within wait_ms */
    CLI_VERDICT_PASS,      /* verified, or trusted */
    CLI_VERDICT_REFUSED,   /* stale, mismatch, no-whoami, invalid: requests are refused */
};

/* x's verdict in words for a command's line, into out: "verified: serves
 * the code on disk", "but stale: <the gate's detail, with the fix>", ...
 * wait_ms is how long it was waited for. Returns its kind. */
enum cli_verdict_kind cli_verdict_words(json_t *x, long wait_ms, char *out, size_t outlen);

/* " (V)" for a refusal's line ("the /__whoami gate refuses it (mismatch)"),
 * V x's verdict, into out; "" when the detail said after it begins with V
 * ("stale since 12:00:01, when ..."), which then says it once. */
void cli_verdict_named(json_t *x, char *out, size_t outlen);

/* Each of asked (the restart op's "restarted") stamped with when it was
 * asked; then, the first time the wait sees e ready, the time its
 * restart took ("took_ms"), which its line says. */
void cli_restart_asked(json_t *asked);
void cli_restart_seen_ready(json_t *e);

/* The line restart says of e, a server it restarted that is ready, into
 * out: "WT's server on front F restarted and ready in 1.2 s, verified:
 * ..." (the time when cli_restart_seen_ready saw it, else none; or
 * "but stale: ...", "; its /__whoami gave no verdict ..."), with its
 * verdict in now (cli_await_verdicts' list, CLI_VERDICT_WAIT_MS). Returns
 * the verdict's kind. */
enum cli_verdict_kind cli_verdict_restarted(json_t *e, json_t *now, char *out, size_t len);

/* The HTTP status a request to x gets while the gate refuses it, with the
 * refusal's name in *reason ("checkout-mismatch"); 0 when it is not refused. */
int cli_verdict_http(json_t *x, const char **reason);

/* The most recently written log of a's worktree, into path: its .wtproxy
 * servers' (where the daemon writes them) and its `wtproxy run` servers'
 * (in the state folder's servers/). A server that exited before it
 * listened (a crash at start, the case `wtproxy logs` is asked about
 * most) is no longer registered, but its log says why. Returns 0, or -1
 * when there is none. */
int cli_last_log(const struct cli_server_args *a, char *path, size_t len);

/* Print the last n lines of the file at path on out. Returns 0, -1
 * (errno) when it cannot be read. */
int cli_log_tail(const char *path, long n, FILE *out);

/* For a server that did not come (back) up: "its log, PATH, ends with:"
 * and its last CLI_FAIL_LINES lines on stderr; nothing when log is "". */
#define CLI_FAIL_LINES 20
void cli_log_end(const char *log);

#endif
