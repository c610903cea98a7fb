/* reg_server_ops.c - what each control op of the registry does
 * (PROTOCOL.md): ping, list, register, claim/release/leases, reserve,
 * ready, restarting, start-failed, unregister; the rest goes to the layer above. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reg_control.h"
#include "reg_lease.h"
#include "reg_pg.h"
#include "registry.h"
#include "host.h"
#include "reg_server_int.h"

/* ---- operations ---- */

/* r, with what a restart would forget when the last save failed. */
json_t *reg_server_unsaved_warning(const struct reg_server *rs, json_t *r)
{
    if (r && rs->unsaved[0])
        json_object_set_new(
            r, "warning",
            json_sprintf("the daemon cannot save its registrations (%s): they are served now "
                         "but forgotten if the daemon restarts; free space there, or restart "
                         "the daemon with --state PATH on a writable disk",
                         rs->unsaved));
    return r;
}

static json_t *ok_entry(const struct reg_server *rs, const struct reg_backend *b)
{
    return reg_server_unsaved_warning(
        rs, json_pack("{s:b, s:o}", "ok", 1, "entry", reg_backend_to_json(b)));
}

static uid_t pid_uid(pid_t pid)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    return stat(path, &st) == 0 ? st.st_uid : (uid_t)-1;
}

static json_t *conflict(const struct reg_backend *h)
{
    char age[32];
    host_age(host_wall_ms() - h->registered_ms, age, sizeof age);
    json_t *r = reg_fail(
        "conflict",
        "%s already has a live server on front :%d: pid %d (%s), port %d, "
        "registered %s ago. Stop it, or remove it: wtproxy unregister --worktree %s "
        "--front %d",
        h->worktree, h->front, (int)h->pid, h->command, h->port, age, h->worktree, h->front);
    json_t *holder = reg_backend_to_json(h);
    /* Its server outlived the daemon it registered with: a `wtproxy run`
     * that found nothing on the front meanwhile (a test runner's) is no
     * second server of its owner's making, and reuses or replaces it. */
    if (holder && h->restored)
        json_object_set_new(holder, "restored", json_true());
    json_object_set_new(r, "holder", holder);
    return r;
}

/* An op about "its" entry from a wrapper that is not b's (its "pid"):
 * one whose registration was replaced, a daemon since having known only
 * a newer wrapper of the worktree. Refused, so that its unregister on its
 * way out (or a late ready, restarting, start-failed) never changes the
 * newer wrapper's live server. NULL when pid is b's own process. */
static json_t *not_its_wrapper(const struct reg_backend *b, const char *op, pid_t pid)
{
    if (pid == b->pid && host_pid_start(pid) == b->pid_start)
        return NULL;
    char age[32];
    host_age(host_wall_ms() - b->registered_ms, age, sizeof age);
    fprintf(stderr,
            "wtproxy: left %s (front :%d, pid %d, port %d) as it is: pid %d, not its wrapper, "
            "sent %s\n",
            b->worktree, b->front, (int)b->pid, b->port, (int)pid, op);
    /* An unregister is the wrapper's last word; any other op comes from
     * one whose server runs on, unlisted. */
    char fix[96] = "";
    if (strcmp(op, "unregister") != 0)
        snprintf(fix, sizeof fix,
                 "; its own server gets no request through wtproxy: stop it: kill %d", (int)pid);
    json_t *r =
        reg_fail("conflict",
                 "%s on front :%d is served by another wrapper now: pid %d (%s), port %d, "
                 "registered %s ago. Pid %d, which sent %s, is not that entry's wrapper "
                 "(its own registration was replaced), so the entry is left as it is%s",
                 b->worktree, b->front, (int)b->pid, b->command, b->port, age, (int)pid, op, fix);
    json_object_set_new(r, "holder", reg_backend_to_json(b));
    return r;
}

/* The entry a ready/unregister names, checked against the peer's uid, and
 * against "pid", the wrapper that sends it (none: a person's command,
 * `wtproxy unregister`, which may change any entry of the uid's). */
static json_t *find_owned(struct reg_server *rs, struct reg_peer *peer, uid_t uid, json_t *req,
                          struct reg_backend **out)
{
    json_int_t front = 0, pid = 0;
    const char *wt = NULL;
    char real[PATH_MAX];
    if (json_unpack(req, "{s:I, s:s, s?I}", "front", &front, "worktree", &wt, "pid", &pid) < 0 ||
        pid < 0 || pid > INT_MAX)
        return reg_fail("bad-request", "give \"front\" (a port), \"worktree\" (a path), and "
                                       "\"pid\", the wrapper's, or none");
    *out = reg_table_get(rs->table, (int)front, wt);
    if (!*out && realpath(wt, real))
        *out = reg_table_get(rs->table, (int)front, real);
    if (!*out)
        return reg_fail("not-found", "nothing is registered for %s on front :%d (see: wtproxy ls)",
                        wt, (int)front);
    if (uid != 0 && uid != (*out)->uid)
        return reg_fail("not-permitted",
                        "%s on front :%d belongs to uid %d; only that user or "
                        "root may change it",
                        (*out)->worktree, (int)front, (int)(*out)->uid);
    /* a sandboxed wrapper's getpid(), as this namespace numbers it (-1:
     * another of its namespace's, never an entry's) */
    pid_t here = pid ? host_pid_of_peer(reg_peer_pid(peer), (pid_t)pid) : 0;
    return pid ? not_its_wrapper(*out, json_string_value(json_object_get(req, "op")),
                                 here > 0 ? here : (pid_t)pid)
               : NULL;
}

static json_t *op_register(struct reg_server *rs, struct reg_peer *peer, uid_t uid, json_t *req)
{
    json_int_t front = 0, port = 0, pid = 0, ttl = 0;
    const char *wt = NULL, *command = "", *host = "127.0.0.1";
    int ready = 0, restart = 0;
    char real[PATH_MAX], name[320], err[256];
    if (json_unpack(req, "{s:I, s:s, s:I, s?I, s?I, s?s, s?s, s?b, s?b}", "front", &front,
                    "worktree", &wt, "port", &port, "pid", &pid, "ttl_ms", &ttl, "command",
                    &command, "host", &host, "ready", &ready, "restart_on_stale", &restart) < 0 ||
        front < 1 || front > 65535 || port < 1 || port > 65535 || pid < 0 || ttl < 0)
        return reg_fail("bad-request", "register needs front and port (1-65535), worktree, and a "
                                       "pid >= 0 or ttl_ms");
    if (!realpath(wt, real))
        return reg_fail("bad-request",
                        "worktree %s: %s; give the folder of a worktree: "
                        "--worktree DIR",
                        wt, strerror(errno));
    if (pid == 0 && ttl == 0)
        return reg_fail("bad-request", "an entry without a pid needs a TTL (--ttl 1h), so that it "
                                       "cannot outlive its server forever");
    if (pid > 0 && peer && reg_peer_pid(peer) == 0)
        return reg_fail("bad-request",
                        "your command runs outside the pid namespace this daemon runs in (it was "
                        "started inside a sandbox or a container, and sees none of your "
                        "processes), so pid %d names no process it can watch, or another's: stop "
                        "this daemon and start one outside the sandbox (wtproxy doctor gives the "
                        "command), then run this again",
                        (int)pid);
    pid_t here = pid > 0 ? host_pid_of_peer(reg_peer_pid(peer), (pid_t)pid) : 0;
    if (here < 0)
        return reg_fail("bad-request",
                        "pid %d is a pid of the pid namespace your command runs in (a sandbox: "
                        "bwrap --unshare-pid, unshare --pid, a container), which this daemon "
                        "cannot see nor name: register it from outside that namespace, or "
                        "start the server with wtproxy run, whose own pid the daemon reads "
                        "from its connection",
                        (int)pid);
    pid = here; /* a sandboxed wtproxy run's getpid(), as this namespace numbers it */
    if (pid > 0 && !host_pid_start((pid_t)pid))
        return reg_fail("bad-request",
                        "pid %d does not run (it exited, or is mistyped); give "
                        "your server's pid (pgrep -f CMD), or register it for a "
                        "time: --ttl 1h",
                        (int)pid);
    if (pid > 0 && uid != 0 && pid_uid((pid_t)pid) != uid)
        return reg_fail("not-permitted",
                        "pid %d belongs to uid %d, not to you (uid %d): "
                        "register a server you run, or register it as its user",
                        (int)pid, (int)pid_uid((pid_t)pid), (int)uid);
    snprintf(name, sizeof name, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, (int)port);
    struct reg_backend *holder = reg_table_get(rs->table, (int)front, real);
    if (holder && !reg_backend_alive(holder, host_wall_ms(), err, sizeof err))
        reg_server_drop(rs, holder, err);
    else if (holder)
        return conflict(holder);
    struct reg_backend *b = reg_backend_new(name, err, sizeof err);
    if (!b)
        return reg_fail("bad-request", "%s", err);
    if (reg_backend_read_labels(b, req, err, sizeof err) < 0) {
        reg_backend_unref(b);
        return reg_fail("bad-request", "%s", err);
    }
    snprintf(b->machine, sizeof b->machine, "%s", reg_machine_id());
    snprintf(b->worktree, sizeof b->worktree, "%s", real);
    snprintf(b->command, sizeof b->command, "%s", command);
    b->front = (int)front;
    b->uid = uid;
    b->port = (int)port;
    b->pid = (pid_t)pid;
    b->pid_start = pid ? host_pid_start((pid_t)pid) : 0;
    b->registered_ms = b->started_ms = host_wall_ms();
    b->expires_ms = ttl ? b->registered_ms + ttl : 0;
    b->state = ready ? REG_READY : REG_STARTING;
    b->been_ready = ready;
    b->restart_on_stale = restart && pid > 0; /* only a wrapper can restart it */
    /* The daemon forks nothing but the wrappers of its on-demand starts;
     * a hand-run `wtproxy run` or `register` is never its child. */
    b->daemon_started = pid > 0 && host_pid_parent((pid_t)pid) == getpid();
    reg_table_put(rs->table, b, &holder);
    reg_last_words_forget(rs, b->front, b->worktree);
    reg_backend_unref(b);
    reg_server_unreserve(rs, b->port);
    reg_server_watch(rs, b);
    reg_server_save(rs);
    fprintf(stderr, "wtproxy: registered %s on front :%d -> %s (pid %d)\n", b->worktree, b->front,
            b->name, (int)b->pid);
    /* Ready at once (`wtproxy register`): as a `ready` op, so the layer
     * above verifies it now, not at its first request. */
    if (b->state == REG_READY && rs->on_state)
        rs->on_state(rs->on_state_arg, b);
    return ok_entry(rs, b);
}

/* The entries, and the servers of uid that exited lately ("exited": what
 * they said last, for `ls` to say where a worktree's server went). */
static json_t *op_list(struct reg_server *rs, struct reg_peer *peer, uid_t uid)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < reg_table_count(rs->table); i++)
        json_array_append_new(arr, reg_backend_to_json(reg_table_at(rs->table, i)));
    json_t *r = json_pack("{s:b, s:o}", "ok", 1, "exited", reg_server_exited(rs, uid));
    if (rs->pg.pgw) /* the other machines' entries, from the store */
        return reg_pgops_list(&rs->pg, peer, arr, reg_server_unsaved_warning(rs, r));
    json_object_set_new(r, "entries", arr);
    return reg_server_unsaved_warning(rs, r);
}

/* start-failed: b's wrapper saw its server fail in its output while the
 * server lives on (an autoreloader waiting for a change): at its start,
 * or after it was ready, an edit having broken it ("when": "edit"). The
 * requests waiting for it are refused at once with its last lines rather
 * than at start_timeout. Only while it starts: a server that listens
 * serves, whatever it printed. Saved with the entry, so that a daemon
 * started after this one died knows it too. */
/* restarting with "port" (and its "command"): the wrapper starts its
 * server again on a port it reserved since, the one it had having been
 * taken by another program before the server bound it (cli/run_taken.c).
 * The entry moves, so that the requests waiting for it go there. NULL, or
 * the refusal. */
static json_t *move_entry(struct reg_server *rs, struct reg_backend *b, json_t *req)
{
    json_int_t port = 0;
    const char *command = NULL;
    if (json_unpack(req, "{s?I, s?s}", "port", &port, "command", &command) < 0 || port < 0 ||
        port > 65535)
        return reg_fail("bad-request", "restarting: \"port\" is a port (1-65535), \"command\" "
                                       "the command line that listens there");
    if (port == 0 || port == b->port)
        return NULL;
    fprintf(stderr,
            "wtproxy: %s (front :%d) moves from port %d to %d: its server starts again "
            "there, its port having been taken\n",
            b->worktree, b->front, b->port, (int)port);
    reg_server_unreserve(rs, (int)port);
    reg_backend_set_port(b, (int)port);
    if (command)
        snprintf(b->command, sizeof b->command, "%s", command);
    return NULL;
}

static json_t *op_start_failed(struct reg_server *rs, struct reg_backend *b, json_t *req)
{
    char err[256];
    if (reg_backend_read_failed(b, req, err, sizeof err) < 0)
        return reg_fail("bad-request", "start-failed: %s", err);
    if (b->state != REG_STARTING) {
        b->start_failed[0] = '\0'; /* a ready entry has none: it is left as it was */
        return ok_entry(rs, b);
    }
    static const char *const how[] = {
        [REG_FAILED_START] = "at start",
        [REG_FAILED_EDIT] = "after an edit, as its reloader restarted it",
        [REG_FAILED_PORT] = "to listen on its port: it listens on another",
        [REG_FAILED_DIED] = "as its serving process died: nothing answers on its port",
    };
    fprintf(stderr, "wtproxy: %s on front :%d failed %s (pid %d lives on, %s)\n", b->worktree,
            b->front, how[b->start_failed_when], (int)b->pid,
            b->reloader[0] ? b->reloader : "waiting");
    /* Requests already waiting for it (a ready server an edit broke: in
     * the gate, or retrying its port for reload_grace) are told now. */
    if (rs->on_state)
        rs->on_state(rs->on_state_arg, b);
    reg_server_save(rs);
    return ok_entry(rs, b);
}

/* Its wrapper's ready path question got something else than 2xx or 3xx
 * ("said"): kept while it is starting, with since when it answers so,
 * for the 503 of a start that times out, why and the dashboard. */
static json_t *op_not_ready(struct reg_server *rs, struct reg_backend *b, json_t *req)
{
    const char *said = json_string_value(json_object_get(req, "said"));
    if (!said || !said[0] || strlen(said) >= sizeof b->not_ready)
        return reg_fail("bad-request",
                        "not-ready: give \"said\", what the ready path answered "
                        "(under %zu bytes)",
                        sizeof b->not_ready);
    if (b->state == REG_STARTING && strcmp(b->not_ready, said) != 0) {
        snprintf(b->not_ready, sizeof b->not_ready, "%s", said);
        b->not_ready_ms = host_wall_ms();
    }
    return ok_entry(rs, b);
}

/* The ping op's reply: who the daemon is, where it listens, its store;
 * "registry_before" when the daemon before it ran on a registry and it
 * runs on none (reg_server.c's registry_lost). */
static json_t *ping(struct reg_server *rs)
{
    json_t *r = reg_mirror_status(
        rs->mirror, json_pack("{s:b, s:s, s:s, s:i, s:s, s:O}", "ok", 1, "version", WTP_VERSION,
                              "build", host_build(), "pid", (int)getpid(), "machine",
                              reg_machine_id(), "listen", rs->listen ? rs->listen : json_null()));
    if (r && rs->registry_before[0])
        json_object_set_new(r, "registry_before", json_string(rs->registry_before));
    return r;
}

/* Why b's entry goes at its unregister, into out, for the daemon's log:
 * the daemon's own stop (b->stop_why), else how its wrapper saw its
 * server end ("why": a kill -9, a removed worktree and a stop all read
 * "unregistered" before), else who unregistered it (wtproxy unregister),
 * by the peer's pid and command line. -1 when "why" is not a string. */
static int unregister_why(const struct reg_backend *b, json_t *req, struct reg_peer *peer,
                          char *out, size_t len)
{
    json_t *why = json_object_get(req, "why");
    char cmdline[256] = "";
    pid_t pid = reg_peer_pid(peer);
    if (why && !json_is_string(why))
        return -1;
    if (b->stop_why[0]) {
        snprintf(out, len, "the daemon stopped it: %s", b->stop_why);
    } else if (why) {
        /* a line of the log: its control characters are not the peer's to write */
        const char *s = json_string_value(why);
        size_t n = 0;
        for (; s[n] && n + 1 < len; n++)
            out[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n];
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
            n--; /* cut short: at a character's first byte */
        out[n] = '\0';
    } else {
        if (pid > 0)
            host_pid_cmdline(pid, cmdline, sizeof cmdline);
        snprintf(out, len, "unregistered by pid %ld%s%s%s", (long)pid, cmdline[0] ? " (" : "",
                 cmdline, cmdline[0] ? ")" : "");
    }
    return 0;
}

/* The reply to req, or NULL when it comes later (through peer). */
json_t *reg_server_handle(struct reg_server *rs, struct reg_peer *peer, uid_t uid, json_t *req)
{
    const char *op = json_is_object(req) ? json_string_value(json_object_get(req, "op")) : NULL;
    struct reg_backend *b = NULL;
    json_t *err;
    if (!op)
        return reg_fail("bad-request", "each line must be a JSON object with an \"op\"");
    if (strcmp(op, "ping") == 0)
        return ping(rs);
    if (strcmp(op, "list") == 0)
        return op_list(rs, peer, uid);
    if (strcmp(op, "register") == 0)
        return op_register(rs, peer, uid, req);
    if (strcmp(op, "claim") == 0 || strcmp(op, "release") == 0 || strcmp(op, "leases") == 0) {
        /* "store":"embedded": a CLI that could not reach the registry
         * either, under WTPROXY_REGISTRY_OPTIONAL=1 (claims on this machine
         * only, which it said) */
        const char *store = json_string_value(json_object_get(req, "store"));
        if (rs->pg.pgw && !(store && strcmp(store, "embedded") == 0))
            return reg_pgops_lease_op(&rs->pg, peer, req);
        rs->line_leases = strcmp(op, "leases") != 0; /* its reply waits for the file */
        return reg_lease_store_op(rs->leases, op, req, uid);
    }
    if (strcmp(op, "reserve") == 0) {
        int port = reg_server_reserve_port(rs);
        return port ? json_pack("{s:b, s:i}", "ok", 1, "port", port)
                    : reg_fail("no-port",
                               "no port is free to reserve in %d-%d (taken by "
                               "servers and other programs, or %d starts at once); "
                               "stop the servers no longer needed (see wtproxy ls): "
                               "wtproxy stop WORKTREE",
                               REG_PORT_FIRST, REG_PORT_FIRST + REG_PORT_COUNT - 1,
                               REG_MAX_RESERVED);
    }
    if (strcmp(op, "ready") == 0 || strcmp(op, "restarting") == 0 ||
        strcmp(op, "unregister") == 0) {
        if ((err = find_owned(rs, peer, uid, req, &b)))
            return err;
        if (strcmp(op, "restarting") == 0 && (err = move_entry(rs, b, req)))
            return err;
        if (strcmp(op, "unregister") != 0) {
            /* restarting: requests wait for it again, as for a new server,
             * one started now (what a trusted server's files are judged
             * against, and what ls and the dashboard count its age from) */
            b->state = strcmp(op, "ready") == 0 ? REG_READY : REG_STARTING;
            b->been_ready |= b->state == REG_READY;
            if (b->state == REG_STARTING)
                b->started_ms = host_wall_ms();
            b->start_failed[0] = '\0'; /* listening, or starting afresh */
            b->not_ready[0] = '\0';
            if (rs->on_state)
                rs->on_state(rs->on_state_arg, b);
            reg_server_save(rs);
            json_t *ok = ok_entry(rs, b);
            if (b->restart_why[0] && ok) /* its wrapper writes it into the server's log */
                json_object_set_new(ok, "why", json_string(b->restart_why));
            b->restart_why[0] = '\0';
            return ok;
        }
        char why[REG_UNREGISTER_WHY_MAX], err[256];
        if (unregister_why(b, req, peer, why, sizeof why) < 0)
            return reg_fail("bad-request", "unregister: \"why\" is a string: how the server ended");
        if (reg_last_words_keep(rs, b, req, err, sizeof err) < 0)
            return reg_fail("bad-request", "unregister: %s", err);
        json_t *r = ok_entry(rs, b); /* before drop: it frees b */
        reg_server_drop(rs, b, why);
        return r;
    }
    if (strcmp(op, "start-failed") == 0) {
        if ((err = find_owned(rs, peer, uid, req, &b)))
            return err;
        return op_start_failed(rs, b, req);
    }
    if (strcmp(op, "not-ready") == 0) {
        if ((err = find_owned(rs, peer, uid, req, &b)))
            return err;
        return op_not_ready(rs, b, req);
    }
    json_t *r = rs->ext ? rs->ext(rs->ext_arg, uid, op, req, peer) : NULL;
    if (r == reg_server_later())
        return NULL; /* the layer above answers through reg_server_reply */
    return r ? r
             : reg_fail("unknown-op", "unknown op \"%s\" (see wtproxy help control-protocol)", op);
}
