/* restart_declared.c - `wtproxy restart`'s other half: the services a
 * worktree's .wtproxy declares that do not run now (one that died was
 * unregistered by its wrapper, so the restart op cannot reach it) are
 * started by the daemon's start op, and waited for as the restarted ones
 * are (what each waits for said while it waits, the time each took said
 * once it is ready). Without it, the restart a 502 of a dead service names
 * answers "no server matches", and a plain restart restarts only the live
 * ones. */
#include "cli.h"
#include "host.h"
#include "packages.h"
#include "reg_db.h"
#include "servers.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "registry.h"

#define POLL_MS 100
#define SETTLE_MS 3000 /* a wrapper between its unregistration and its exit */

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* The services op's list for a's worktree, or NULL (no daemon, no file,
 * a bad file, no on-demand starts: nothing to start then). */
static json_t *declared(const struct cli_server_args *a)
{
    char err[PATH_MAX + 256];
    json_t *reply, *list = NULL;
    json_t *req = json_pack("{s:s, s:s}", "op", "services", "worktree", a->worktree);
    int rc = req ? cli_call(req, 0, &reply, err, sizeof err) : -1;
    json_decref(req);
    if (rc < 0)
        return NULL;
    if (json_is_array(json_object_get(reply, "services")))
        list = json_incref(json_object_get(reply, "services"));
    json_decref(reply);
    return list;
}

static int selected(const struct cli_server_args *a, json_t *svc)
{
    return (!a->service || strcmp(str(svc, "name"), a->service) == 0) &&
           (!a->front || json_integer_value(json_object_get(svc, "front")) == a->front);
}

json_t *cli_declared_selected(const struct cli_server_args *a, int stopped_only)
{
    json_t *all = declared(a), *out = json_array(), *svc;
    size_t i;
    json_array_foreach(all, i, svc)
        if (selected(a, svc) && !(stopped_only && json_is_true(json_object_get(svc, "running"))))
            json_array_append(out, svc);
    json_decref(all);
    return out;
}

/* Whether a service a selects is "launched": a wrapper the daemon started
 * and no registration, for a moment only: one starting this instant, or
 * one whose wrapper unregistered it and is exiting. */
static int launching(const struct cli_server_args *a)
{
    json_t *all = declared(a), *svc;
    size_t i;
    int n = 0;
    json_array_foreach(all, i, svc)
        n += selected(a, svc) && strcmp(str(svc, "state"), "launched") == 0;
    json_decref(all);
    return n > 0;
}

/* Read once no selected service is "launched" (up to SETTLE_MS): a
 * service that died a moment ago counted as running while its wrapper
 * exited, and the restart op, finding nothing registered, answered "no
 * server matches" rather than starting it. */
json_t *cli_declared_stopped(const struct cli_server_args *a)
{
    for (long waited = 0; waited < SETTLE_MS && launching(a); waited += POLL_MS)
        if (cli_pause(POLL_MS) < 0)
            break;
    return cli_declared_selected(a, 1);
}

/* svc (an entry of an earlier list) in the daemon's list now, or NULL. */
static json_t *now_of(json_t *now, json_t *svc)
{
    json_t *x;
    size_t i;
    json_array_foreach(now, i, x)
        if (strcmp(str(x, "name"), str(svc, "name")) == 0)
            return x;
    return NULL;
}

/* "service NAME", or "the server" of a .wtproxy without sections (its one
 * service has no name), into out; and " --service NAME" or "" for the
 * commands that pick it. */
static void label(json_t *svc, char *out, size_t len, char *flag, size_t flaglen)
{
    const char *name = str(svc, "name");
    snprintf(out, len, "%s%s", name[0] ? "service " : "the server", name);
    snprintf(flag, flaglen, "%s%s", name[0] ? " --service " : "", name);
}

int cli_failed_words(json_t *x, char *out, size_t len)
{
    json_t *failed = json_object_get(x, "start_failed");
    const char *reloader = str(failed, "reloader");
    char db[REG_DB_NAME_MAX + 1], base[REG_DB_NAME_MAX + 1], pkg[4 * PATH_MAX];
    if (!failed)
        return 0;
    if (strcmp(str(failed, "when"), "port") == 0) {
        snprintf(out, len,
                 "it listens on another port than the one wtproxy gave it: its command ignores "
                 "{port} (its log's last lines say which port); put {port} where it takes its "
                 "port, then run this again");
        return 1;
    }
    if (strcmp(str(failed, "when"), "died") == 0)
        return snprintf(out, len,
                        "the process that served died and its reloader holds the port, "
                        "answering nothing: wtproxy restart --front %lld",
                        (long long)json_integer_value(json_object_get(x, "front"))),
               1;
    if (reg_failed_fixed(str(failed, "lines"), str(x, "worktree"),
                         json_integer_value(json_object_get(failed, "told_ms")), pkg, sizeof pkg))
        return snprintf(out, len,
                        "it failed and lives on without listening; its files changed since it "
                        "failed (%s), yet its reloader did not start it again: wtproxy restart "
                        "--front %lld",
                        pkg, (long long)json_integer_value(json_object_get(x, "front"))),
               1;
    if (strcmp(str(failed, "when"), "edit") != 0 &&
        reg_db_missing_dev(str(failed, "lines"), reg_machine_id(), str(x, "worktree"), db,
                           sizeof db, base, sizeof base))
        return snprintf(out, len,
                        "it failed at start and lives on without listening: its dev database %s "
                        "does not exist (no file needs a change): claim it (cd %s && wtproxy db "
                        "claim --dev %s), migrate it (Django: manage.py migrate), then restart it",
                        db, str(x, "worktree"), base),
               1;
    if (whoami_missing_package(str(failed, "lines"), str(x, "worktree"), pkg, sizeof pkg))
        return snprintf(out, len, "it failed and lives on without listening: %s; then restart it",
                        pkg),
               1;
    if (strcmp(str(failed, "when"), "edit") != 0 &&
        host_deps_missing(str(failed, "lines"), str(x, "command"), str(x, "worktree"), pkg,
                          sizeof pkg))
        return snprintf(out, len,
                        "it failed at start and lives on without listening (no file needs a "
                        "change): %s; then restart it",
                        pkg),
               1;
    if (strcmp(str(failed, "when"), "edit") != 0 &&
        reg_db_refused(str(failed, "lines"), pkg, sizeof pkg))
        return snprintf(out, len,
                        "it failed at start and lives on without listening (no file needs a "
                        "change): %s, then restart it",
                        pkg),
               1;
    snprintf(out, len,
             "%s and lives on without listening, waiting for a change to its files: fix the error "
             "its log's last lines name and save (%s restarts it)",
             strcmp(str(failed, "when"), "edit") == 0 ? "an edit broke it" : "it failed at start",
             reloader[0] ? reloader : "its autoreloader");
    return 1;
}

/* svc did not come up (why): say so with its log's last lines. */
static void report_down(const struct cli_server_args *a, json_t *svc, const char *why)
{
    const char *log = str(svc, "log");
    char what[REG_SERVICE_MAX + 16], flag[REG_SERVICE_MAX + 16];
    label(svc, what, sizeof what, flag, sizeof flag);
    fprintf(stderr, "wtproxy restart: %s of %s (front %lld, %s) did not come up: %s\n", what,
            a->worktree, json_integer_value(json_object_get(svc, "front")), str(svc, "start"), why);
    if (!log[0])
        return;
    cli_log_end(log);
    fprintf(stderr, "read it all: wtproxy logs %s%s\n", a->worktree, flag);
}

/* Ask the daemon to start svc. Returns 0, or 1 having said why not. */
static int start_one(const struct cli_server_args *a, json_t *svc)
{
    char err[PATH_MAX + 256];
    json_t *reply;
    json_t *req = json_pack("{s:s, s:s, s:s}", "op", "start", "worktree", a->worktree, "service",
                            str(svc, "name"));
    int rc = req ? cli_call(req, 0, &reply, err, sizeof err) : -1;
    json_decref(req);
    if (rc < 0) {
        fprintf(stderr, "wtproxy restart: %s\n", req ? err : "out of memory");
        return 1;
    }
    rc = json_is_true(json_object_get(reply, "ok")) ? 0 : cli_report(reply);
    json_decref(reply);
    return rc;
}

/* What svc's start waits for, by its state in the daemon's list now (x):
 * "to listen", or why it has not started yet. */
static void waits_for(json_t *x, char *out, size_t len)
{
    const char *state = str(x, "state");
    json_t *after = json_object_get(x, "after"), *name;
    size_t i, used = 0;
    if (strcmp(state, "waiting") == 0) {
        used = (size_t)snprintf(out, len, "to start: it is started after service");
        json_array_foreach(after, i, name)
            if (used < len)
                used += (size_t)snprintf(out + used, len - used, "%s %s", i ? "," : "",
                                         json_string_value(name) ? json_string_value(name) : "?");
        if (used < len)
            snprintf(out + used, len - used, ", not ready yet");
    } else if (strcmp(state, "waiting-load") == 0) {
        snprintf(out, len,
                 "to start: the machine's load per CPU (%.2f) is above start_max_load, and the "
                 "daemon starts it once the load falls",
                 json_number_value(json_object_get(x, "load")));
    } else if (json_is_string(json_object_get(x, "ready"))) {
        snprintf(out, len, "to listen and GET %s to answer 2xx or 3xx", str(x, "ready"));
    } else {
        snprintf(out, len, "to listen");
    }
}

/* svc is not ready yet: say what the restart waits for, and for how long
 * at most (left_ms), at once and when that changes, as it does for a
 * restarted server (restart.c), so that a start that takes long is never
 * a silent command. */
static void say_waiting(const struct cli_server_args *a, json_t *svc, json_t *x, long left_ms)
{
    char what[REG_SERVICE_MAX + 16], flag[REG_SERVICE_MAX + 16], waits[512];
    waits_for(x, waits, sizeof waits);
    const char *said = str(svc, "said");
    if (strcmp(said, waits) == 0)
        return;
    label(svc, what, sizeof what, flag, sizeof flag);
    fprintf(stderr,
            "wtproxy restart: waiting for %s of %s (front %lld) %s (up to %ld s; its log: "
            "wtproxy logs %s%s)\n",
            what, a->worktree, json_integer_value(json_object_get(svc, "front")), waits,
            left_ms / 1000, a->worktree, flag);
    fflush(stderr);
    json_object_set_new(svc, "said", json_string(waits));
}

/* Poll the services op until every one of started is ready (its
 * "took_ms" set, from since_ms), one ended (its start exited or failed,
 * or its server failed and waits for a change to its files), or wait_ms
 * pass. */
static int await_up(const struct cli_server_args *a, json_t *started, long wait_ms,
                    long long since_ms)
{
    struct timespec tick = {0, POLL_MS * 1000000L};
    for (long waited = 0;; waited += POLL_MS) {
        json_t *now = declared(a), *svc;
        size_t i, pending = 0;
        int rc = 0;
        json_array_foreach(started, i, svc) {
            json_t *x = now_of(now, svc);
            const char *state = x ? str(x, "state") : "gone";
            if (strcmp(state, "ready") == 0) {
                if (!json_object_get(svc, "took_ms"))
                    json_object_set_new(svc, "took_ms", json_integer(host_mono_ms() - since_ms));
                continue;
            }
            char failed[4 * PATH_MAX];
            if (!x || strcmp(state, "stopped") == 0 || strcmp(state, "failed") == 0) {
                report_down(a, svc, "it exited before it was ready");
                rc = 1;
            } else if (cli_failed_words(x, failed, sizeof failed)) {
                report_down(a, svc, failed); /* no wait makes it ready */
                rc = 1;
            } else if (waited >= wait_ms) {
                report_down(a, svc, "it was not ready in time");
                rc = 1;
            } else {
                say_waiting(a, svc, x, wait_ms - waited);
                pending++;
            }
        }
        json_decref(now);
        if (rc || !pending)
            return rc;
        nanosleep(&tick, NULL);
    }
}

/* Each of started, ready: its line, with the time it took and the
 * daemon's /__whoami verdict on it (asked once it is ready), as restart
 * says a restarted server's (verdict.c): a refused one on stderr. Returns
 * 1 when one is refused, else 0. */
static int say_started(const struct cli_server_args *a, json_t *started)
{
    json_t *now = cli_await_verdicts(a, started, CLI_VERDICT_WAIT_MS, NULL), *svc;
    size_t i;
    int rc = 0;
    json_array_foreach(started, i, svc) {
        char words[1280];
        enum cli_verdict_kind k = cli_verdict_words(cli_entry_on_front(now, svc),
                                                    CLI_VERDICT_WAIT_MS, words, sizeof words);
        rc |= k == CLI_VERDICT_REFUSED;
        fprintf(k == CLI_VERDICT_REFUSED ? stderr : stdout,
                "wtproxy: %s's %s%s on front %lld started and ready in %.1f s%s%s\n", a->worktree,
                str(svc, "name")[0] ? "service " : "server", str(svc, "name"),
                json_integer_value(json_object_get(svc, "front")),
                json_integer_value(json_object_get(svc, "took_ms")) / 1000.0,
                k == CLI_VERDICT_OFF         ? ""
                : k == CLI_VERDICT_UNDECIDED ? "; "
                                             : ", ",
                k == CLI_VERDICT_OFF ? "" : words);
    }
    json_decref(now);
    return rc;
}

int cli_start_declared(const struct cli_server_args *a, json_t *stopped, long wait_ms)
{
    json_t *svc;
    size_t i;
    char what[REG_SERVICE_MAX + 16], flag[REG_SERVICE_MAX + 16];
    long long since = host_mono_ms();
    json_array_foreach(stopped, i, svc) {
        label(svc, what, sizeof what, flag, sizeof flag);
        printf("wtproxy: %s of %s does not run; starting it from its .wtproxy\n", what,
               a->worktree);
        fflush(stdout);
        if (start_one(a, svc) != 0)
            return 1;
    }
    int rc = await_up(a, stopped, wait_ms, since);
    return rc ? rc : say_started(a, stopped);
}
