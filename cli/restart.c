/* restart.c - `wtproxy restart` and `wtproxy stop` [WORKTREE] [--service S]
 * [--front F]: the daemon's restart and stop ops (registry/PROTOCOL.md),
 * then a wait until what they asked for happened, since the wrapper acts
 * on its signal in its own time: restarted servers ready again, stopped
 * ones gone. A server that does not come back is named with its log's
 * last lines, the reason it did not. */
#include "cli.h"
#include "servers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry.h"
#include "wtfile.h"

#define RESTART_WAIT_MS 60000 /* a dev server's start (Django's checks, Vite's deps) */
#define STOP_WAIT_MS (WTP_RESTART_STOP_MS + 5000) /* the wrapper's grace, and its exit */
#define POLL_MS 100

json_t *cli_entry_on_front(json_t *list, json_t *e)
{
    json_t *x;
    size_t i;
    json_array_foreach(list, i, x)
        if (json_integer_value(json_object_get(x, "front")) ==
            json_integer_value(json_object_get(e, "front")))
            return x;
    return NULL;
}

static const char *str(json_t *e, const char *key)
{
    const char *s = json_string_value(json_object_get(e, key));
    return s ? s : "";
}

/* e did not come back (why); say so with the last lines of its log. */
static void report_dead(json_t *e, const char *why)
{
    const char *log = str(e, "log");
    fprintf(stderr, "wtproxy restart: %s's server on front %lld (%s) did not come back: %s\n",
            str(e, "worktree"), json_integer_value(json_object_get(e, "front")), str(e, "command"),
            why);
    if (!log[0])
        return;
    cli_log_end(log);
    fprintf(stderr, "read it all: wtproxy logs %s --front %lld\n", str(e, "worktree"),
            json_integer_value(json_object_get(e, "front")));
}

/* e, a restarted server, is not ready yet: say at once what the restart
 * waits for and how long at most, on stderr. A server that never listens
 * keeps the command silent for wait_ms otherwise, which a person or an
 * agent at a terminal takes for a hang. */
static void say_waiting(json_t *e, long wait_ms)
{
    long long front = json_integer_value(json_object_get(e, "front"));
    fprintf(stderr,
            "wtproxy restart: waiting for %s's server on front %lld to listen (up to %ld s; "
            "its log: wtproxy logs %s --front %lld)\n",
            str(e, "worktree"), front, wait_ms / 1000, str(e, "worktree"), front);
    fflush(stderr);
}

/* The wait of asked ran out (wait_ms): say so of each of late. */
static void say_late(json_t *late, int restart, long wait_ms)
{
    json_t *e;
    size_t i;
    json_array_foreach(late, i, e)
        if (restart) {
            char why[80];
            snprintf(why, sizeof why, "it did not listen within %ld s", wait_ms / 1000);
            report_dead(e, why);
        } else
            fprintf(stderr,
                    "wtproxy stop: %s's server on front %lld is still registered after %ld s; "
                    "see wtproxy ls\n",
                    str(e, "worktree"), json_integer_value(json_object_get(e, "front")),
                    wait_ms / 1000);
}

/* Poll until every entry of asked is ready again (restart) or gone
 * (stop), one restarted failed and waits for a change to its files, or
 * wait_ms pass. Returns the exit status, having said what
 * happened. */
static int await(const struct cli_server_args *a, json_t *asked, int restart, long wait_ms)
{
    struct timespec tick = {0, POLL_MS * 1000000L};
    char err[PATH_MAX + 256];
    for (long waited = 0;; waited += POLL_MS) {
        json_t *now = cli_servers_matching(a, err, sizeof err), *e, *late;
        size_t i;
        int rc = 0;
        if (!now) {
            fprintf(stderr, "wtproxy: %s\n", err);
            return 1;
        }
        late = json_array();
        json_array_foreach(asked, i, e) {
            json_t *x = cli_entry_on_front(now, e);
            char failed[4 * PATH_MAX];
            if (restart && (!x || json_integer_value(json_object_get(x, "pid")) !=
                                      json_integer_value(json_object_get(e, "pid")))) {
                report_dead(e, "it exited (its wrapper unregistered it)");
                rc = 1;
            } else if (restart && cli_failed_words(x, failed, sizeof failed)) {
                report_dead(e, failed); /* no wait makes it ready: said now, not at wait_ms */
                rc = 1;
            } else if (restart ? strcmp(str(x, "state"), "ready") != 0 : x != NULL) {
                json_array_append(late, e);
            } else if (restart) {
                cli_restart_seen_ready(e);
            }
        }
        json_decref(now);
        size_t pending = json_array_size(late);
        if (!rc && pending && waited >= wait_ms) {
            say_late(late, restart, wait_ms);
            rc = 1;
        } else if (!rc && pending && restart && waited == 0) {
            json_array_foreach(late, i, e)
                say_waiting(e, wait_ms);
        }
        json_decref(late);
        if (rc || !pending)
            return rc;
        nanosleep(&tick, NULL);
    }
}

/* Wait (CLI_VERDICT_WAIT_MS at most) until the daemon has verified each
 * restarted server of asked (it asks a new server's /__whoami once it is
 * ready: "unchecked" until then), and say each one's verdict: an edit
 * made while it started leaves it stale, which is what its user must see.
 * Returns 0, or 1 when one is refused (stale, another checkout...). */
static int say_verdicts(const struct cli_server_args *a, json_t *asked)
{
    json_t *now = cli_await_verdicts(a, asked, CLI_VERDICT_WAIT_MS, NULL), *e;
    size_t i;
    int rc = 0;
    json_array_foreach(asked, i, e) {
        char line[PATH_MAX + 1400];
        enum cli_verdict_kind k = cli_verdict_restarted(e, now, line, sizeof line);
        rc |= k == CLI_VERDICT_REFUSED;
        fprintf(k == CLI_VERDICT_REFUSED ? stderr : stdout, "wtproxy: %s\n", line);
    }
    json_decref(now);
    return rc;
}

/* cli_stop_changed's say: each stop said as it begins, for a person
 * watching the terminal. */
static void say_stopping(void *ctx, int front, const char *line)
{
    (void)ctx, (void)front;
    printf("wtproxy: %s\n", line);
    fflush(stdout);
}

/* A restart with no daemon to answer it, in a worktree whose own
 * .wtproxy declares servers: the daemon is started first (as run and
 * claim start it, unless WTPROXY_NO_AUTOSTART=1), so that the restart
 * starts what the file declares, which is what its user asked for. */
static void daemon_for_declared(const struct cli_server_args *a)
{
    char err[1024];
    struct wtfile *file = malloc(sizeof *file);
    if (file && wtfile_read(a->worktree, file, err, sizeof err) == 0 && file->n > 0)
        json_decref(cli_ping(cli_daemon_start_allowed(0)));
    free(file);
}

/* restart or stop: ask the daemon, wait, say what happened. */
static int act(int argc, char **argv, const char *op, const char *key)
{
    struct cli_server_args a = {0};
    char err[PATH_MAX + 256];
    int r = cli_server_args(argc, argv, &a, NULL, err, sizeof err);
    if (r > 0)
        return CLI_HELP;
    if (r < 0) {
        fprintf(stderr, "wtproxy %s: %s (see wtproxy %s --help)\n", op, err, op);
        return 2;
    }
    int restart = strcmp(op, "restart") == 0;
    if (restart)
        daemon_for_declared(&a);
    if (restart && cli_stop_changed(&a, say_stopping, NULL, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy restart: %s\n", err);
        return 1;
    }
    /* Read first: a service the restart below finds dead is not "not running". */
    json_t *stopped = restart ? cli_declared_stopped(&a) : json_array();
    json_t *reply, *e, *req = cli_server_request(op, &a);
    r = req ? cli_call(req, 0, &reply, err, sizeof err) : -1;
    json_decref(req);
    if (r < 0) {
        if (!req)
            snprintf(err, sizeof err, "out of memory");
        fprintf(stderr, "wtproxy %s: %s\n", op, err);
        json_decref(stopped);
        return 1;
    }
    if (!json_is_true(json_object_get(reply, "ok"))) {
        /* Nothing registered matches, but the .wtproxy declares it: start it. */
        int none = strcmp(str(reply, "error"), "not-found") == 0 && json_array_size(stopped) > 0;
        r = none ? cli_start_declared(&a, stopped, RESTART_WAIT_MS) : cli_report(reply);
        json_decref(stopped);
        json_decref(reply);
        return r;
    }
    json_t *asked = json_object_get(reply, key);
    cli_restart_asked(asked);
    /* As long as the daemon gives a start (its start_timeout), when it says. */
    json_int_t timeout = json_integer_value(json_object_get(reply, "start_timeout_ms"));
    long wait_ms = !restart ? STOP_WAIT_MS : timeout > 0 ? (long)timeout : RESTART_WAIT_MS;
    r = await(&a, asked, restart, wait_ms);
    size_t i;
    int refused = 0; /* a restarted server is up, but stale or refused: said, and status 1 */
    if (r == 0 && restart)
        refused = say_verdicts(&a, asked);
    else
        json_array_foreach(asked, i, e)
            if (r == 0)
                printf("wtproxy: %s's server on front %lld stopped\n", str(e, "worktree"),
                       json_integer_value(json_object_get(e, "front")));
    if (r == 0 && json_array_size(stopped) > 0)
        r = cli_start_declared(&a, stopped, RESTART_WAIT_MS);
    r = r ? r : refused;
    json_decref(stopped);
    json_decref(reply);
    return r;
}

int cli_restart_main(int argc, char **argv)
{
    return act(argc, argv, "restart", "restarted");
}

int cli_stop_main(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--daemon") == 0) {
            if (argc == 2)
                return cli_daemon_stop();
            fprintf(stderr, "wtproxy stop: --daemon stops the daemon alone: it takes no "
                            "worktree, --service or --front (see wtproxy stop --help)\n");
            return 2;
        }
    return act(argc, argv, "stop", "stopped");
}
