/* run_reg.c - the daemon's entry of a `wtproxy run` wrapper: a port
 * reserved, the wrapper registered under it (its own pid, so that the
 * daemon drops the entry when the wrapper dies, however it dies), marked
 * ready, restarting, failed (at start, or after an edit broke it), and unregistered; what a
 * dead daemon could not hear told again to the next one. Apart from run.c because it is
 * the wrapper's whole conversation with the control socket. */
#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "front.h"
#include "host.h"
#include "wtfile.h"

/* Send req (consumed; NULL means json_pack ran out of memory) without
 * starting a daemon unless asked. Returns 0 when the daemon said ok, 1 when it
 * refused, both with *reply for the caller; -1 with err when it could not
 * be asked. */
static int ask(json_t *req, int start_daemon, json_t **reply, char *err, size_t errlen)
{
    *reply = NULL;
    if (!req) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int r = cli_call(req, start_daemon, reply, err, errlen);
    json_decref(req);
    if (r < 0)
        return -1;
    return json_is_true(json_object_get(*reply, "ok")) ? 0 : 1;
}

/* The op that names the wrapper's entry: front and worktree, and the
 * wrapper's pid, which every op about its entry carries, so that a daemon
 * that knows another wrapper of the worktree (this one's registration
 * replaced) refuses it rather than change that one's entry. NULL when out
 * of memory. */
static json_t *entry_request(const struct cli_run *r, const char *op)
{
    return json_pack("{s:s, s:i, s:s, s:i}", "op", op, "front", r->front, "worktree", r->worktree,
                     "pid", (int)getpid());
}

/* Send the op that names the wrapper's entry. Returns as ask does. */
static int ask_entry(const struct cli_run *r, const char *op, json_t **reply, char *err,
                     size_t errlen)
{
    return ask(entry_request(r, op), 0, reply, err, errlen);
}

/* The register op of the wrapper: its own pid, no TTL, not ready yet;
 * NULL when out of memory. */
static json_t *register_request(const struct cli_run *r)
{
    json_t *req = json_pack("{s:s, s:i, s:s, s:i, s:i, s:i, s:s, s:b, s:b}", "op", "register",
                            "front", r->front, "worktree", r->worktree, "port", r->port, "pid",
                            (int)getpid(), "ttl_ms", 0, "command", r->command, "ready", 0,
                            "restart_on_stale", r->restart_on_stale);
    unsigned load;
    if (req && r->service)
        json_object_set_new(req, "service", json_string(r->service));
    if (req && host_load_pct(&load, NULL, NULL) == 0) /* to judge a verdict by later */
        json_object_set_new(req, "start_load", json_real(load / 100.0));
    if (req && r->log.path[0])
        json_object_set_new(req, "log", json_string(r->log.path));
    if (req && r->shell_command[0]) /* what the daemon's messages paste after `wtproxy run --` */
        json_object_set_new(req, "shell_command", json_string(r->shell_command));
    return req;
}

/* Append " --listen port" to out (used bytes of len) unless it is there. */
static void add_listen(char *out, size_t len, size_t *used, int port)
{
    char flag[24];
    int n = snprintf(flag, sizeof flag, " --listen %d", port);
    for (const char *at = out; (at = strstr(at, flag)) != NULL; at += n)
        if (at[n] == '\0' || at[n] == ' ')
            return;
    if (*used < len)
        *used += (size_t)snprintf(out + *used, len - *used, "%s", flag);
}

/* " --listen P" for each port of a ping's listen list, then front: the
 * `wtproxy serve` arguments that drop none of the daemon's fronts. */
static void serve_args(json_t *listen, int front, char *out, size_t len)
{
    size_t used = 0, i;
    json_t *a;
    out[0] = '\0';
    json_array_foreach(listen, i, a) {
        const char *addr = json_string_value(a), *colon = addr ? strrchr(addr, ':') : NULL;
        if (colon)
            add_listen(out, len, &used, atoi(colon + 1));
    }
    add_listen(out, len, &used, front);
}

/* Whether r's worktree's .wtproxy declares r's front: its tests call
 * that port, so a daemon listening elsewhere is what is wrong. */
static int front_declared(const struct cli_run *r)
{
    struct cli_wtproxy w;
    int fronts[WTFILE_MAX_SERVICES], n = 0;
    if (cli_wtproxy_read(r->worktree, &w) == 0 && w.file)
        n = cli_wtproxy_fronts(&w, NULL, fronts);
    int declared = 0;
    for (int i = 0; i < n && w.file; i++)
        declared |= fronts[i] == r->front;
    cli_wtproxy_free(&w);
    return declared;
}

/* A front port the daemon does not listen on takes the registration but
 * never a request (an app whose URL is on 18000, run without --front
 * 18000): said before the server starts, with the flag that fixes it. A
 * server the daemon started itself (from a .wtproxy: the daemon is its
 * parent), or whose front the .wtproxy declares, has the right front; the
 * daemon's listen is what is wrong (a daemon started on 8711 for 8710:
 * the --front 8711 offered would move the server off the port its tests
 * call, and Playwright waited 60 s on 8710). */
static void warn_unheard_front(const struct cli_run *r)
{
    char err[256];
    json_t *reply = NULL;
    if (ask(json_pack("{s:s}", "op", "ping"), 0, &reply, err, sizeof err) == 0 &&
        cli_listens_on(reply, r->front) == 0) {
        json_t *listen = json_object_get(reply, "listen");
        const char *first = json_string_value(json_array_get(listen, 0));
        const char *port = first && strrchr(first, ':') ? strrchr(first, ':') + 1 : "PORT";
        char *all = json_dumps(listen, JSON_COMPACT);
        long daemon = (long)json_integer_value(json_object_get(reply, "pid"));
        char serve[512];
        serve_args(listen, r->front, serve, sizeof serve);
        if ((long)getppid() == daemon)
            fprintf(stderr,
                    "wtproxy: warning: the daemon (pid %ld) started this server from %s/.wtproxy "
                    "on front %d but listens on %s only: no request reaches it through wtproxy. "
                    "Make the daemon listen on every front: kill %ld && tail --pid=%ld -f "
                    "/dev/null; wtproxy serve%s (or one listen = line per port in its config "
                    "file)\n",
                    daemon, r->worktree, r->front, all ? all : "?", daemon, daemon, serve);
        else if (front_declared(r)) {
            char line[PATH_MAX + 2048];
            cli_serve_cmd(reply, &r->front, 1, line, sizeof line);
            fprintf(stderr,
                    "wtproxy: warning: the daemon (pid %ld) listens on %s, not on port %d, the "
                    "front %s/.wtproxy declares for this server: no request reaches it there. "
                    "Make the daemon listen on it too (its servers are adopted): kill %ld && "
                    "tail --pid=%ld -f /dev/null; %s\n",
                    daemon, all ? all : "?", r->front, r->worktree, daemon, daemon, line);
        } else
            fprintf(stderr,
                    "wtproxy: warning: the daemon (pid %lld) listens on %s, not on port %d: "
                    "no request reaches a server registered on front %d; to serve the "
                    "daemon's port, run: wtproxy run --front %s -- ...\n",
                    json_integer_value(json_object_get(reply, "pid")), all ? all : "?", r->front,
                    r->front, port);
        free(all);
    }
    json_decref(reply);
}

int cli_run_claim(struct cli_run *r, int start_daemon, int argc, char **argv)
{
    char err[PATH_MAX + 256];
    json_t *reply;
    int rc = ask(json_pack("{s:s, s:i}", "op", "reserve", "front", r->front), start_daemon, &reply,
                 err, sizeof err);
    if (rc == 0) {
        r->port = (int)json_integer_value(json_object_get(reply, "port"));
        json_decref(reply);
        warn_unheard_front(r);
        if (r->port <= 0 || r->port > 65535 || cli_run_build_argv(r, argc, argv) < 0) {
            snprintf(err, sizeof err, "the daemon reserved no usable port, or out of memory");
            rc = -1;
        } else {
            rc = ask(register_request(r), 0, &reply, err, sizeof err);
        }
    }
    /* A holder that outlived its daemon is reused, or stopped and the
     * register asked again (run_orphan.c). */
    enum cli_run_holder holder = CLI_RUN_HOLDER_KEPT;
    if (rc > 0 &&
        (holder = cli_run_orphan(r, json_object_get(reply, "holder"))) == CLI_RUN_HOLDER_GONE) {
        json_decref(reply);
        rc = ask(register_request(r), 0, &reply, err, sizeof err);
    }
    if (rc < 0) {
        fprintf(stderr, "wtproxy: %s\n", err);
        return 1;
    }
    if (rc > 0)
        rc = holder == CLI_RUN_HOLDER_REUSED ? 0 : cli_report_run(reply);
    json_decref(reply);
    return rc;
}

/* The command that restarts the daemon on the ports it listens on and
 * front, into out: the daemon's pid and listen list from a ping. */
static void restart_daemon_cmd(int front, char *out, size_t len)
{
    char err[256], serve[512];
    json_t *reply = NULL;
    snprintf(out, len, "wtproxy serve --listen %d", front);
    if (ask(json_pack("{s:s}", "op", "ping"), 0, &reply, err, sizeof err) == 0) {
        long pid = (long)json_integer_value(json_object_get(reply, "pid"));
        serve_args(json_object_get(reply, "listen"), front, serve, sizeof serve);
        snprintf(out, len, "kill %ld && tail --pid=%ld -f /dev/null; wtproxy serve%s", pid, pid,
                 serve);
    }
    json_decref(reply);
}

/* r->port, r->argv and r->command for port. Returns 0 or -1 (no memory). */
static int build_argv_for(struct cli_run *r, int port)
{
    r->port = port;
    cli_run_free_argv(r);
    return cli_run_build_argv(r, r->nargs, r->args);
}

int cli_run_move(struct cli_run *r, char *err, size_t errlen)
{
    json_t *reply;
    int old = r->port;
    int rc =
        ask(json_pack("{s:s, s:i}", "op", "reserve", "front", r->front), 0, &reply, err, errlen);
    int port = rc == 0 ? (int)json_integer_value(json_object_get(reply, "port")) : 0;
    if (rc > 0)
        snprintf(err, errlen, "%s", json_string_value(json_object_get(reply, "message")));
    json_decref(reply);
    if (rc != 0)
        return -1;
    if (port <= 0 || port > 65535 || build_argv_for(r, port) < 0) {
        snprintf(err, errlen, "the daemon reserved no usable port, or out of memory");
        return -1;
    }
    rc = ask(json_pack("{s:s, s:i, s:s, s:i, s:i, s:s}", "op", "restarting", "front", r->front,
                       "worktree", r->worktree, "pid", (int)getpid(), "port", port, "command",
                       r->command),
             0, &reply, err, errlen);
    if (rc > 0)
        snprintf(err, errlen, "%s", json_string_value(json_object_get(reply, "message")));
    /* A daemon older than the move keeps the entry where it was: CMD
     * there would get another program's requests. */
    json_t *moved = json_object_get(json_object_get(reply, "entry"), "port");
    if (rc == 0 && json_integer_value(moved) != port) {
        char again[1024];
        restart_daemon_cmd(r->front, again, sizeof again);
        snprintf(err, errlen,
                 "the daemon, older than this wtproxy, kept its entry on port %d: restart it "
                 "(%s), then run again: %s",
                 old, again, r->rerun[0] ? r->rerun : "this wtproxy run");
        rc = -1;
    }
    json_decref(reply);
    if (rc != 0 && build_argv_for(r, old) < 0) /* CMD may live on, on its own port */
        return -1;
    return rc == 0 ? 0 : -1;
}

void cli_run_mark_ready(struct cli_run *r, int again)
{
    char err[PATH_MAX + 256];
    json_t *reply;
    /* First: once told, the daemon serves it, and a reader of its log
     * (tests, agents) must find the line there by the first response. */
    if (!again)
        fprintf(stderr, "wtproxy: %s is ready on 127.0.0.1:%d (front :%d)\n",
                cli_run_folder(r->worktree), r->port, r->front);
    int rc = ask_entry(r, "ready", &reply, err, sizeof err);
    if (rc < 0 && !again)
        fprintf(stderr, "wtproxy: warning: could not mark %s ready: %s; asking again every %d s\n",
                r->worktree, err, WTP_RUN_READY_RETRY_MS / 1000);
    else if (rc > 0)
        fprintf(stderr, "wtproxy: warning: could not mark %s ready: %s\n", r->worktree,
                json_string_value(json_object_get(reply, "message")));
    else if (rc == 0 && again)
        fprintf(stderr, "wtproxy: the daemon answers again: %s is marked ready\n",
                cli_run_folder(r->worktree));
    json_decref(reply);
    r->untold = rc < 0 ? CLI_RUN_UNTOLD_READY : CLI_RUN_TOLD;
}

/* A first tell's outcome (ask's rc, reply, err), when not ok: said. One
 * no daemon answered is told again (the caller sets r->untold). */
static void say_untold(int rc, json_t *reply, const char *err)
{
    if (rc < 0)
        fprintf(stderr,
                "wtproxy: warning: could not tell the daemon: %s; telling it again every "
                "%d s\n",
                err, WTP_RUN_READY_RETRY_MS / 1000);
    else if (rc > 0)
        fprintf(stderr, "wtproxy: warning: could not tell the daemon: %s\n",
                json_string_value(json_object_get(reply, "message")));
}

void cli_run_tell_not_ready(const struct cli_run *r, const char *said)
{
    char err[PATH_MAX + 256];
    json_t *reply;
    ask(json_pack("{s:s, s:i, s:s, s:i, s:s}", "op", "not-ready", "front", r->front, "worktree",
                  r->worktree, "pid", (int)getpid(), "said", said),
        0, &reply, err, sizeof err); /* a note: a daemon that did not hear it says less */
    json_decref(reply);
}

void cli_run_tell_restart(struct cli_run *r, char *why, size_t whylen)
{
    char err[PATH_MAX + 256];
    json_t *reply;
    int rc = ask_entry(r, "restarting", &reply, err, sizeof err);
    say_untold(rc, reply, err);
    if (why) {
        const char *said = rc == 0 ? json_string_value(json_object_get(reply, "why")) : NULL;
        snprintf(why, whylen, "%s", said ? said : "");
    }
    json_decref(reply);
    r->untold = rc < 0 ? CLI_RUN_UNTOLD_RESTARTING : CLI_RUN_TOLD;
}

void cli_run_tell_restarting(struct cli_run *r)
{
    cli_run_tell_restart(r, NULL, 0);
}

/* The start-failed op of r's failure as last told. Returns as ask does. */
static int send_failed(const struct cli_run *r, json_t **reply, char *err, size_t errlen)
{
    return ask(json_pack("{s:s, s:i, s:s, s:i, s:s, s:s, s:s}", "op", "start-failed", "front",
                         r->front, "worktree", r->worktree, "pid", (int)getpid(), "lines",
                         r->failed_lines, "reloader", r->failed_reloader, "when",
                         reg_failed_when_name(r->failed_when)),
               0, reply, err, errlen);
}

void cli_run_tell_said(struct cli_run *r, const char *line, const char *reloader,
                       enum reg_failed_when when)
{
    char lines[REG_START_FAILED_MAX], tail[REG_START_FAILED_MAX];
    fprintf(stderr, "%s\n", line);
    cli_run_log_note(&r->log, line);
    cli_run_fail_last(&r->log.fail, tail, sizeof tail);
    int used = snprintf(lines, sizeof lines, "%.1200s\n", line + strlen("wtproxy: "));
    snprintf(lines + used, sizeof lines - (size_t)used, "%.*s",
             (int)(sizeof lines - (size_t)used - 1), tail);
    cli_run_tell_failed(r, lines, reloader, when);
}

void cli_run_tell_failed(struct cli_run *r, const char *lines, const char *reloader,
                         enum reg_failed_when when)
{
    char err[PATH_MAX + 256];
    json_t *reply;
    snprintf(r->failed_lines, sizeof r->failed_lines, "%s", lines);
    r->failed_reloader = reloader;
    r->failed_when = when;
    /* its entry is ready: starting first, its verdict the old process's */
    if (when == REG_FAILED_EDIT || when == REG_FAILED_DIED) {
        cli_run_tell_restarting(r);
        if (r->untold != CLI_RUN_TOLD) {
            r->untold = CLI_RUN_UNTOLD_FAILED;
            return;
        }
    }
    int rc = send_failed(r, &reply, err, sizeof err);
    say_untold(rc, reply, err);
    json_decref(reply);
    r->untold = rc < 0 ? CLI_RUN_UNTOLD_FAILED : CLI_RUN_TOLD;
}

void cli_run_retell(struct cli_run *r)
{
    char err[PATH_MAX + 256];
    json_t *reply = NULL;
    if (r->untold == CLI_RUN_UNTOLD_READY) {
        cli_run_mark_ready(r, 1);
        return;
    }
    if (r->untold == CLI_RUN_TOLD)
        return;
    /* A failure as a restart first, too: the next daemon may have loaded
     * the entry ready, and a ready entry is not marked failed. */
    int rc = ask_entry(r, "restarting", &reply, err, sizeof err);
    if (rc == 0 && r->untold == CLI_RUN_UNTOLD_FAILED) {
        json_decref(reply);
        rc = send_failed(r, &reply, err, sizeof err);
    }
    if (rc > 0)
        say_untold(rc, reply, err);
    else if (rc == 0)
        fprintf(stderr, "wtproxy: the daemon answers again: told it that %s's server %s\n",
                cli_run_folder(r->worktree),
                r->untold == CLI_RUN_UNTOLD_RESTARTING ? "is starting again"
                : r->failed_when == REG_FAILED_EDIT    ? "failed after an edit broke it"
                : r->failed_when == REG_FAILED_PORT    ? "listens on another port than its own"
                : r->failed_when == REG_FAILED_DIED    ? "died under its reloader"
                                                       : "failed at start");
    json_decref(reply);
    if (rc >= 0)
        r->untold = CLI_RUN_TOLD;
}

/* The unregister op, with "why", how CMD ended, for the daemon's log;
 * with "exit" when CMD exited by itself: its last lines and its status or
 * signal (PROTOCOL.md). NULL when out of memory. */
static json_t *unregister_request(struct cli_run *r)
{
    json_t *req = entry_request(r, "unregister");
    char lines[REG_START_FAILED_MAX], why[REG_UNREGISTER_WHY_MAX];
    if (req && cli_run_end_words(r, "its server", why, sizeof why))
        json_object_set_new(req, "why", cli_json_text(why, strlen(why)));
    if (!req || !r->exited)
        return req;
    cli_run_fail_last(&r->log.fail, lines, sizeof lines);
    int st = r->exit_status, sig = WIFSIGNALED(st);
    json_object_set_new(req, "exit",
                        json_pack("{s:o, s:i, s:o}", "lines", cli_json_text(lines, strlen(lines)),
                                  sig ? "signal" : "status", sig ? WTERMSIG(st) : WEXITSTATUS(st),
                                  "rerun", cli_json_text(r->rerun, strlen(r->rerun))));
    return req;
}

/* CMD exited for want of the /__whoami middleware package (a new
 * worktree has no node_modules) or of its app's own dependencies (not
 * installed there either), or because another Vite holds its
 * project: said under its error, with the one command that fixes it,
 * before an agent runs npm install (which fetches another package) or
 * adds --bypass-lock. */
static void say_exit_fix(struct cli_run *r)
{
    char lines[REG_START_FAILED_MAX], fix[4 * PATH_MAX];
    cli_run_fail_last(&r->log.fail, lines, sizeof lines);
    if (cli_run_install_fix(r, lines, fix, sizeof fix) ||
        host_dev_lock_holder(lines, fix, sizeof fix))
        fprintf(stderr, "wtproxy: %s's server exited: %s\n", cli_run_folder(r->worktree), fix);
}

void cli_run_release(struct cli_run *r)
{
    char err[PATH_MAX + 256];
    json_t *reply;
    if (r->exited)
        say_exit_fix(r);
    int rc = ask(unregister_request(r), 0, &reply, err, sizeof err);
    const char *code = rc > 0 ? json_string_value(json_object_get(reply, "error")) : NULL;
    if (rc < 0)
        fprintf(stderr, "wtproxy: warning: could not unregister %s: %s\n", r->worktree, err);
    else if (code && strcmp(code, "conflict") == 0) /* another wrapper's now: not ours to drop */
        fprintf(stderr, "wtproxy: %s\n", json_string_value(json_object_get(reply, "message")));
    else if (rc > 0 && strcmp(code ? code : "", "not-found") != 0)
        fprintf(stderr, "wtproxy: warning: could not unregister %s: %s\n", r->worktree,
                json_string_value(json_object_get(reply, "message")));
    json_decref(reply);
}
