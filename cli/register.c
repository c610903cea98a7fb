/* register.c - `wtproxy register|unregister`, and what every command about
 * registrations shares: the enclosing worktree, the daemon's error
 * replies. Exit status: 0 done, 1 the daemon refused or cannot be reached
 * (or, for register, the /__whoami gate refuses the server it registered),
 * 2 bad usage. */
#include "cli.h"
#include "servers.h"
#include "front.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host.h"
#include "registry.h"

/* How long register waits for the daemon's verdict on its server: one
 * /__whoami exchange (whoami_timeout, 2 s by default) and the fingerprint.
 * A server that does not listen yet is not waited for. */
#define REGISTER_WAIT_MS 3000

int cli_worktree(const char *dir, char *out, size_t outlen, char *err, size_t errlen)
{
    struct host_worktree w;
    char path[PATH_MAX];
    const char *found = path;
    if (dir && !realpath(dir, path)) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    if (!dir && host_worktree_of(".", &w, err, errlen) < 0) {
        size_t n = strlen(err);
        snprintf(err + n, errlen - n, "; run this in a worktree, or pass --worktree DIR");
        return -1;
    }
    if (!dir)
        found = w.root;
    if (strlen(found) >= outlen) {
        snprintf(err, errlen, "worktree path too long: %s", found);
        return -1;
    }
    memcpy(out, found, strlen(found) + 1);
    return 0;
}

int cli_worktree_holding(const char *dir, char *out, size_t outlen, char *err, size_t errlen)
{
    struct host_worktree w;
    if (!dir)
        return cli_worktree(NULL, out, outlen, err, errlen);
    if (host_worktree_of(dir, &w, err, errlen) < 0)
        return -1;
    if (strlen(w.root) >= outlen) {
        snprintf(err, errlen, "worktree path too long: %s", w.root);
        return -1;
    }
    memcpy(out, w.root, strlen(w.root) + 1);
    return 0;
}

int cli_serve_worktree(const char *dir, char *out, size_t outlen, char *err, size_t errlen)
{
    struct host_worktree w;
    char path[PATH_MAX];
    if (host_worktree_of(dir ? dir : ".", &w, err, errlen) < 0) {
        size_t n = strlen(err);
        if (!dir)
            snprintf(err + n, errlen - n, "; run this in a worktree, or pass --worktree DIR");
        return -1;
    }
    /* The daemon places a caller by its worktree's top folder: a server
     * registered under a subfolder would never be found. */
    if (dir && realpath(dir, path) && strcmp(path, w.root) != 0) {
        snprintf(err, errlen,
                 "--worktree %s is inside the worktree %s, not its top folder, "
                 "and requests are routed by worktree: pass --worktree %s",
                 path, w.root, w.root);
        return -1;
    }
    if (strlen(w.root) >= outlen) {
        snprintf(err, errlen, "worktree path too long: %s", w.root);
        return -1;
    }
    if (w.note[0])
        fprintf(stderr, "wtproxy: note: %s\n", w.note);
    memcpy(out, w.root, strlen(w.root) + 1);
    return 0;
}

/* x's "state" ("" when none). */
static const char *state_of(json_t *x)
{
    const char *s = json_string_value(json_object_get(x, "state"));
    return s ? s : "";
}

/* When the holder's server failed and lives on without listening (its
 * entry's start_failed: a failed start, an edit that broke it), say so,
 * with its last lines and their fix: it serves nothing, and killing it
 * only brings back the same error from the next start (a .wtproxy's, a
 * test runner's). Returns 1 when said. */
static int report_failed(json_t *holder, json_int_t front)
{
    char words[2 * PATH_MAX], quote[REG_START_FAILED_MAX + 256];
    if (!cli_failed_words(holder, words, sizeof words))
        return 0;
    const char *lines =
        json_string_value(json_object_get(json_object_get(holder, "start_failed"), "lines"));
    cli_quote_tail(lines ? lines : "", 1, quote, sizeof quote);
    fprintf(stderr, "wtproxy: that server serves nothing: %s; its last lines:\n%s\n", words, quote);
    fprintf(stderr, "wtproxy: all its output: wtproxy logs --front %lld (in its worktree)\n",
            (long long)front);
    return 1;
}

/* The holder is the server its .wtproxy declares, started by the daemon
 * for a request of this worktree (a test runner's readiness check is
 * one), ready and serving its current code: stopping it only has the next
 * request start it again (a PHP user pasted the stop four times). A test
 * runner runs its own command when its url did not answer 2xx, 3xx or
 * 400-403 (Playwright's webServer): most often the app's own error, which
 * GET / through the front shows. Said so only when a runner may have run
 * this (runner): three users who typed `register` read it as theirs. An
 * error of the app is worth saying to anyone. Returns 1 when said. */
static int report_declared_ready(json_t *holder, long long front, int runner)
{
    const char *state =
        json_string_value(json_object_get(json_object_get(holder, "whoami"), "state"));
    char said[256], body[320] = "";
    if (!json_is_true(json_object_get(holder, "daemon_started")) ||
        strcmp(state_of(holder), "ready") != 0 || !state ||
        (strcmp(state, "verified") != 0 && strcmp(state, "trusted") != 0))
        return 0;
    fprintf(stderr,
            "wtproxy: that server is the one its .wtproxy declares, which the daemon started for "
            "a request of this worktree; it is ready and serves its current code (%s), so "
            "stopping it only has the next request start it again\n",
            state);
    int status = cli_http_status((int)front, "/", said, sizeof said);
    if (said[0])
        snprintf(body, sizeof body, " (\"%s\")", said);
    if (status >= 404 && runner)
        fprintf(stderr,
                "wtproxy: GET / through :%lld answers %d%s: a test runner that runs this command "
                "when its url did not answer 2xx, 3xx or 400-403 (Playwright's webServer) met the "
                "app's own error; fix it (its output: wtproxy logs --front %lld, in its "
                "worktree), and the runner uses this server\n",
                front, status, body, front);
    else if (status >= 404)
        fprintf(stderr,
                "wtproxy: GET / through :%lld answers %d%s, the app's own error; fix it (its "
                "output: wtproxy logs --front %lld, in its worktree)\n",
                front, status, body, front);
    else if (runner)
        fprintf(stderr,
                "wtproxy: a test runner that runs this command when its url did not answer 2xx, "
                "3xx or 400-403 (Playwright's webServer) met another answer there than GET / "
                "(%d): ask its url through :%lld with curl -i, and see its output: wtproxy logs "
                "--front %lld (in its worktree)\n",
                status, front, front);
    return 1;
}

/* Print the conflict: who holds the key, and how to free it (runner:
 * report_declared_ready's). */
static void report_conflict(json_t *holder, int runner)
{
    const char *wt = json_string_value(json_object_get(holder, "worktree"));
    const char *cmd = json_string_value(json_object_get(holder, "command"));
    json_int_t pid = json_integer_value(json_object_get(holder, "pid"));
    json_int_t front = json_integer_value(json_object_get(holder, "front"));
    json_int_t reg = json_integer_value(json_object_get(holder, "registered_ms"));
    char age[32], by[1200];
    host_age(host_wall_ms() - reg, age, sizeof age);
    wt = wt ? wt : "?";
    /* Only `wtproxy run` registers a log: its pid is the wrapper's, which
     * `wtproxy stop` ends with its server (a kill of the wrapper only
     * leaves its server running until it notices). */
    int by_run = json_string_length(json_object_get(holder, "log")) > 0;
    if (pid > 0 && by_run)
        snprintf(by, sizeof by, "by the wtproxy run wrapper pid %lld of its server (%s)",
                 (long long)pid, cmd && *cmd ? cmd : "?");
    else if (pid > 0)
        snprintf(by, sizeof by, "by pid %lld (%s)", (long long)pid, cmd && *cmd ? cmd : "?");
    else
        snprintf(by, sizeof by, "by a registration with --ttl (no process)");
    fprintf(stderr,
            "wtproxy: %s is already served on front :%lld %s, registered %s ago, uid %lld\n", wt,
            (long long)front, by, age,
            (long long)json_integer_value(json_object_get(holder, "uid")));
    /* Often why a test runner starts a second server: the gate refused the
     * one registered (a leftover on a recycled port, or stale code). */
    json_t *who = json_object_get(holder, "whoami");
    const char *state = json_string_value(json_object_get(who, "state"));
    const char *detail = json_string_value(json_object_get(who, "detail"));
    char named[64];
    cli_verdict_named(holder, named, sizeof named);
    if (state && strcmp(state, "verified") != 0 && strcmp(state, "trusted") != 0 &&
        !cli_verdict_pending(holder))
        fprintf(stderr, "wtproxy: the /__whoami gate refuses that server%s: %s\n", named,
                detail && *detail ? detail : "see wtproxy ls");
    if (report_failed(holder, front) || report_declared_ready(holder, front, runner))
        return;
    if (pid > 0 && strcmp(state_of(holder), "starting") == 0)
        fprintf(stderr,
                "wtproxy: that server is still starting (it does not listen yet); its output: "
                "wtproxy logs --front %lld (in its worktree)\n",
                (long long)front);
    if (pid > 0 && by_run)
        fprintf(stderr,
                "wtproxy: stop it first, then run this again: cd %s && wtproxy stop --front %lld\n",
                wt, (long long)front);
    else if (pid > 0)
        fprintf(stderr, "wtproxy: stop it first, then run this again: kill %lld\n", (long long)pid);
    else
        fprintf(stderr,
                "wtproxy: remove it first: wtproxy unregister --worktree %s "
                "--front %lld\n",
                wt, (long long)front);
}

static int report(json_t *reply, int runner)
{
    const char *code = json_string_value(json_object_get(reply, "error"));
    const char *msg = json_string_value(json_object_get(reply, "message"));
    json_t *holder = json_object_get(reply, "holder");
    if (code && strcmp(code, "conflict") == 0 && json_is_object(holder)) {
        report_conflict(holder, runner);
        return 1;
    }
    fprintf(stderr, "wtproxy: %s (%s)\n", msg ? msg : "the daemon refused the request",
            code ? code : "no error code");
    return 1;
}

int cli_report(json_t *reply)
{
    return report(reply, 0);
}

int cli_report_run(json_t *reply)
{
    return report(reply, !isatty(STDIN_FILENO));
}

/* Usage error: one line naming the problem and where help is. */
static int usage_error(const char *cmd, const char *msg)
{
    fprintf(stderr, "wtproxy %s: %s (see wtproxy %s --help)\n", cmd, msg, cmd);
    return 2;
}

struct register_args {
    const char *port, *pid, *front, *ttl, *worktree, *host, *service;
    int no_autostart, no_wait;
    int argc; /* the arguments as given, for a refusal to repeat */
    char **argv;
};

/* Turn parsed flags into the register request. Returns it, or NULL with
 * err (bad usage), "" when the refusal is said already. */
static json_t *register_request(const struct register_args *a, char *err, size_t errlen)
{
    int port, front = WTP_DEFAULT_FRONT_PORT;
    long pid = 0;
    long long ttl = 0;
    char wt[PATH_MAX], cmd[1024] = "";
    if (!a->port) {
        snprintf(err, errlen, "give --port P, the port your server listens on");
        return NULL;
    }
    if (!a->pid && !a->ttl) {
        snprintf(err, errlen,
                 "without --pid, an entry needs --ttl DURATION (e.g. --ttl 30m): "
                 "nothing else would tell when the server is gone");
        return NULL;
    }
    if (cli_port("port", a->port, &port, err, errlen) < 0 ||
        (a->front && cli_port("front", a->front, &front, err, errlen) < 0) ||
        (a->ttl && cli_duration("ttl", a->ttl, &ttl, err, errlen) < 0))
        return NULL;
    if (a->front)
        cli_daemon_listen_also(front); /* a daemon started for it listens there */
    if (a->pid && cli_number(a->pid, 1, 0x7fffffff, &pid) < 0) {
        snprintf(err, errlen, "--pid \"%s\" is not a process id", a->pid);
        return NULL;
    }
    if (cli_serve_worktree(a->worktree, wt, sizeof wt, err, errlen) < 0 ||
        (a->service && !reg_service_name_ok(a->service, err, errlen)))
        return NULL;
    if (pid)
        host_pid_cmdline((pid_t)pid, cmd, sizeof cmd);
    struct cli_server_cmd self = {"register", a->argc, a->argv, 0, NULL, ""};
    if (!a->front && (front = cli_server_front(wt, a->service, &self,
                                               cli_daemon_start_allowed(a->no_autostart))) < 0) {
        err[0] = '\0'; /* said, with each service's command */
        return NULL;
    }
    json_t *req = json_pack("{s:s, s:i, s:s, s:i, s:I, s:I, s:s, s:b}", "op", "register", "front",
                            front, "worktree", wt, "port", port, "pid", (json_int_t)pid, "ttl_ms",
                            (json_int_t)ttl, "command", cmd, "ready", 1);
    if (req && a->host)
        json_object_set_new(req, "host", json_string(a->host));
    if (req && a->service)
        json_object_set_new(req, "service", json_string(a->service));
    if (!req)
        snprintf(err, errlen, "out of memory");
    return req;
}

static const char *str(json_t *e, const char *key)
{
    const char *s = json_string_value(json_object_get(e, key));
    return s ? s : "";
}

/* Whether the daemon asked x's server and nothing answered (whoami
 * "silent"): not listening, on whatever host. */
static int silent(json_t *x)
{
    return json_is_true(json_object_get(json_object_get(x, "whoami"), "silent"));
}

/* Whether nothing listens on x's port, as this command can see itself:
 * for a loopback or wildcard address only (sock_diag, microseconds). */
static int local_unheard(json_t *x)
{
    static const char *const local[] = {"127.0.0.1:", "localhost:", "[::1]:", "0.0.0.0:", "[::]:"};
    const char *backend = str(x, "backend");
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++)
        if (strncmp(backend, local[i], strlen(local[i])) == 0)
            return !cli_port_listened((int)json_integer_value(json_object_get(x, "port")));
    return 0;
}

/* Whether x's server may answer its /__whoami soon: something listens on
 * its port, as far as this command sees (local_unheard), and the daemon's
 * first ask did not find it silent (which is how a server on another
 * --host is known not to listen: no 3 s wait for no verdict). */
static int may_answer(json_t *x)
{
    return !local_unheard(x) && !silent(x);
}

/* Say e registered and, with wait, the daemon's verdict on its server,
 * which it asks at once: an agent that registered a server started from
 * another checkout, or one without /__whoami, learns it here rather than
 * from its tests' 421 or 502. The entry stays either way, so that ls and
 * the refusals name it. Returns the exit status: 1 when the gate refuses
 * the server; 0 when it passes, is not checked, or does not answer yet
 * (registering a server before it starts is legitimate). */
static int say_registered(json_t *e, int wait)
{
    char head[3 * PATH_MAX], words[8192];
    snprintf(head, sizeof head, "wtproxy: registered %s on front :%lld -> %s", str(e, "worktree"),
             json_integer_value(json_object_get(e, "front")), str(e, "backend"));
    if (!wait) {
        fprintf(stderr, "%s\n", head);
        return 0;
    }
    struct cli_server_args a = {.service = json_string_value(json_object_get(e, "service")),
                                .front = (int)json_integer_value(json_object_get(e, "front"))};
    snprintf(a.worktree, sizeof a.worktree, "%s", str(e, "worktree"));
    json_t *asked = json_pack("[O]", e);
    json_t *now = cli_await_verdicts(&a, asked, REGISTER_WAIT_MS, may_answer);
    json_t *x = cli_entry_on_front(now, e);
    enum cli_verdict_kind k = cli_verdict_words(x, REGISTER_WAIT_MS, words, sizeof words);
    const char *reason = "";
    int status = cli_verdict_http(x, &reason), rc = 0;
    if (!x) {
        fprintf(stderr,
                "%s, but it is not registered any more: its pid exited, or the daemon "
                "stopped (see: wtproxy ls)\n",
                head);
        rc = 1;
    } else if (k == CLI_VERDICT_REFUSED) {
        char named[64];
        cli_verdict_named(x, named, sizeof named);
        fprintf(stderr,
                "%s, but the /__whoami gate refuses it%s: each request to it gets HTTP %d %s "
                "until this is fixed; the entry stays (wtproxy ls): %s\n",
                head, named, status, reason, str(json_object_get(x, "whoami"), "detail"));
        rc = 1;
    } else if (k == CLI_VERDICT_UNDECIDED && local_unheard(x)) {
        fprintf(stderr,
                "%s; not answering on port %lld yet: the daemon checks its /__whoami when it "
                "does (see: wtproxy ls)\n",
                head, json_integer_value(json_object_get(x, "port")));
    } else if (k == CLI_VERDICT_UNDECIDED && silent(x)) {
        fprintf(stderr, "%s; no verdict yet: %s (see: wtproxy ls)\n", head,
                str(json_object_get(x, "whoami"), "detail"));
    } else {
        fprintf(stderr, "%s; %s\n", head, words);
    }
    json_decref(asked);
    json_decref(now);
    return rc;
}

int cli_register_main(int argc, char **argv)
{
    struct register_args a = {.argc = argc - 1, .argv = argv + 1};
    const struct cli_opt opts[] = {
        {"port", &a.port, NULL},         {"pid", &a.pid, NULL},
        {"front", &a.front, NULL},       {"ttl", &a.ttl, NULL},
        {"worktree", &a.worktree, NULL}, {"host", &a.host, NULL},
        {"service", &a.service, NULL},   {"no-autostart", NULL, &a.no_autostart},
        {"no-wait", NULL, &a.no_wait},   {NULL, NULL, NULL}};
    char err[PATH_MAX + 256];
    int r = cli_parse(argc, argv, opts, NULL, err, sizeof err);
    if (r > 0)
        return CLI_HELP;
    if (r < 0)
        return usage_error("register", err);
    json_t *req = register_request(&a, err, sizeof err), *reply = NULL;
    if (!req)
        return err[0] ? usage_error("register", err) : 2;
    r = cli_call(req, cli_daemon_start_allowed(a.no_autostart), &reply, err, sizeof err);
    json_decref(req);
    if (r < 0) {
        fprintf(stderr, "wtproxy: %s\n", err);
        return 1;
    }
    if (!json_is_true(json_object_get(reply, "ok")))
        r = cli_report(reply);
    else
        r = say_registered(json_object_get(reply, "entry"), !a.no_wait);
    json_decref(reply);
    return r;
}

int cli_unregister_main(int argc, char **argv)
{
    const char *worktree = NULL, *frontv = NULL;
    const struct cli_opt opts[] = {
        {"worktree", &worktree, NULL}, {"front", &frontv, NULL}, {NULL, NULL, NULL}};
    char err[PATH_MAX + 256], wt[PATH_MAX];
    int front = WTP_DEFAULT_FRONT_PORT;
    int r = cli_parse(argc, argv, opts, NULL, err, sizeof err);
    if (r > 0)
        return CLI_HELP;
    if (r < 0 || (frontv && cli_port("front", frontv, &front, err, sizeof err) < 0) ||
        cli_worktree(worktree, wt, sizeof wt, err, sizeof err) < 0)
        return usage_error("unregister", err);
    struct cli_server_cmd self = {"unregister", argc - 1, argv + 1, 0, NULL, ""};
    if (!frontv && (front = cli_server_front(wt, NULL, &self, 0)) < 0)
        return 2;
    json_t *req = json_pack("{s:s, s:i, s:s}", "op", "unregister", "front", front, "worktree", wt);
    json_t *reply = NULL;
    r = req ? cli_call(req, 0, &reply, err, sizeof err) : -1;
    json_decref(req);
    if (r < 0) {
        fprintf(stderr, "wtproxy: %s\n", req ? err : "out of memory");
        return 1;
    }
    const char *code = json_string_value(json_object_get(reply, "error"));
    if (json_is_true(json_object_get(reply, "ok"))) {
        fprintf(stderr, "wtproxy: unregistered %s from front :%d\n", wt, front);
    } else if (code && strcmp(code, "not-found") == 0) {
        fprintf(stderr, "wtproxy: nothing is registered for %s on front :%d (see wtproxy ls)\n", wt,
                front);
        r = 1;
    } else {
        r = cli_report(reply);
    }
    json_decref(reply);
    return r;
}
