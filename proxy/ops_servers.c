/* ops_servers.c - the control ops that act on a worktree's running
 * servers: restart, stop and start (registry/PROTOCOL.md, "Ops of the layer
 * above"), for `wtproxy restart/stop`, the dashboard's buttons and
 * `wtproxy mcp`. A server can be restarted or stopped only through its
 * `wtproxy run` wrapper (every on-demand server has one): the wrapper owns
 * the server's process tree, its port and its registration, so a signal to
 * it is all the daemon sends. start needs the worktree's real path and
 * its .wtproxy: a worker finds both while the reply (on the control socket
 * or to the dashboard's button) waits. */
#include "ops.h"

#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host.h"
#include "ondemand.h"
#include "reg_control.h"
#include "server.h"
#include "wtfile.h"

#define MAX_MATCHES 64 /* registrations of one worktree acted on at once */

/* What a request selects: its worktree, and optionally a service and a front. */
struct selector {
    const char *worktree, *service;
    int front; /* 0: any */
};

/* Read req's selectors into sel. Returns NULL, or the bad-request reply. */
static json_t *read_selector(const char *op, json_t *req, struct selector *sel)
{
    json_t *wt = json_object_get(req, "worktree"), *sv = json_object_get(req, "service"),
           *fr = json_object_get(req, "front");
    if (!json_is_string(wt) || json_string_value(wt)[0] != '/' || (sv && !json_is_string(sv)) ||
        (fr &&
         (!json_is_integer(fr) || json_integer_value(fr) < 1 || json_integer_value(fr) > 65535)))
        return reg_fail("bad-request",
                        "%s takes \"worktree\" (an absolute path), and optionally "
                        "\"service\" (a name) and \"front\" (a port)",
                        op);
    sel->worktree = json_string_value(wt);
    sel->service = sv ? json_string_value(sv) : NULL;
    sel->front = fr ? (int)json_integer_value(fr) : 0;
    return NULL;
}

static int selects(const struct selector *sel, const struct reg_backend *b)
{
    return b->state != REG_DEAD && strcmp(b->worktree, sel->worktree) == 0 &&
           (!sel->service || strcmp(b->service, sel->service) == 0) &&
           (!sel->front || b->front == sel->front);
}

/* "front 8000 (service api), front 8001" : what is registered for the
 * worktree, for a not-found message; "nothing" when none. */
static void describe_worktree(struct reg_table *t, const char *wt, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; t && i < reg_table_count(t) && used < len; i++) {
        const struct reg_backend *b = reg_table_at(t, i);
        if (b->state == REG_DEAD || strcmp(b->worktree, wt) != 0)
            continue;
        int n = snprintf(out + used, len - used, "%sfront %d%s%s%s", used ? ", " : "", b->front,
                         b->service[0] ? " (service " : "", b->service, b->service[0] ? ")" : "");
        used = n < 0 ? len : used + (size_t)n;
    }
    if (!out[0])
        snprintf(out, len, "nothing");
}

/* For a not-found: "; its .wtproxy declares ... which does not run: start
 * it ..." when the file as the daemon last read it (never read here)
 * declares a server sel selects that does not run (it crashed, or was
 * never started); else "". */
static void declared_note(struct proxy_server *s, const struct selector *sel, char *out, size_t len)
{
    json_t *d = s->ondemand ? ondemand_services_known(s, sel->worktree) : NULL, *svc;
    size_t i;
    out[0] = '\0';
    json_array_foreach(json_object_get(d, "services"), i, svc) {
        const char *name = json_string_value(json_object_get(svc, "name"));
        int front = (int)json_integer_value(json_object_get(svc, "front"));
        if (json_is_true(json_object_get(svc, "running")) ||
            (sel->service && (!name || strcmp(name, sel->service) != 0)) ||
            (sel->front && front != sel->front))
            continue;
        snprintf(out, len,
                 "; its .wtproxy declares %s%s on front %d, which does not run: start it with "
                 "wtproxy restart %s (it starts the declared servers that do not run), or the "
                 "dashboard's start button",
                 name && *name ? "service " : "a server", name ? name : "", front, sel->worktree);
        break;
    }
    json_decref(d);
}

/* Whether pid runs the daemon's own executable (a wtproxy renamed or
 * outside PATH, as tests and packagers have it). */
static int same_exe(pid_t pid)
{
    char path[64];
    struct stat mine, theirs;
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    return stat("/proc/self/exe", &mine) == 0 && stat(path, &theirs) == 0 &&
           mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino;
}

/* Whether b's pid is (still) a `wtproxy run` wrapper: the same process that
 * registered (start time), whose command line is `wtproxy run ...` (argv[0]
 * named wtproxy*, or the daemon's own executable: a wtproxy rebuilt since
 * the wrapper started is still named so). Small /proc reads: fine on the
 * loop. */
static int is_wrapper(const struct reg_backend *b)
{
    char path[64], cmd[PATH_MAX];
    if (b->pid <= 0 || (b->pid_start && host_pid_start(b->pid) != b->pid_start))
        return 0;
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)b->pid);
    ssize_t n = host_read_small_file(path, cmd, sizeof cmd - 1);
    if (n <= 0)
        return 0;
    cmd[n] = '\0';
    const char *base = strrchr(cmd, '/');
    base = base ? base + 1 : cmd;
    size_t arg0 = strlen(cmd) + 1;
    return (size_t)n > arg0 && strcmp(cmd + arg0, "run") == 0 &&
           (strncmp(base, "wtproxy", 7) == 0 || same_exe(b->pid));
}

/* Collect the caller's registrations sel selects into out. Returns how
 * many, or -1 with *reply the refusal: none (not-found, naming what is
 * registered), another uid's (not-permitted), one without a wrapper
 * (not-restartable, naming it and what to do). */
static int collect(struct proxy_server *s, uid_t uid, const char *op, const struct selector *sel,
                   struct reg_backend **out, json_t **reply)
{
    struct reg_table *t = s->reg ? reg_server_table(s->reg) : NULL;
    int n = 0;
    for (size_t i = 0; t && i < reg_table_count(t) && n < MAX_MATCHES; i++) {
        struct reg_backend *b = reg_table_at(t, i);
        if (!selects(sel, b))
            continue;
        if (uid != 0 && b->uid != uid) {
            *reply = reg_fail("not-permitted",
                              "%s's server on front %d belongs to uid %u; only "
                              "its owner (or root) may %s it: as that user, run "
                              "wtproxy %s %s",
                              sel->worktree, b->front, (unsigned)b->uid, op, op, sel->worktree);
            return -1;
        }
        if (!is_wrapper(b)) {
            *reply = reg_fail("not-restartable",
                              "%s's server on front %d (pid %d, %s) was "
                              "registered with wtproxy register, not started by wtproxy run: "
                              "wtproxy cannot %s it; %s it yourself, or start it with "
                              "`wtproxy run -- CMD {port}` next time",
                              sel->worktree, b->front, (int)b->pid, b->command, op, op);
            return -1;
        }
        out[n++] = b;
    }
    if (n == 0) {
        char have[1024], note[PATH_MAX + 256];
        describe_worktree(t, sel->worktree, have, sizeof have);
        declared_note(s, sel, note, sizeof note);
        *reply = reg_fail("not-found",
                          "no server of %s%s%s matches; registered for it: %s (see "
                          "wtproxy ls)%s",
                          sel->worktree, sel->service ? " with service " : "",
                          sel->service ? sel->service : "", have, note);
        return -1;
    }
    return n;
}

/* Mark b restarting through the registry's own op, so that requests wait
 * for it and a waiting `wtproxy restart` sees it leave ready at once. */
static void mark_restarting(struct proxy_server *s, uid_t uid, const struct reg_backend *b)
{
    json_t *req = json_pack("{s:s, s:i, s:s}", "op", "restarting", "front", b->front, "worktree",
                            b->worktree);
    char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
    free(line ? reg_server_request(s->reg, uid, line, strlen(line)) : NULL);
    free(line);
    json_decref(req);
}

int proxy_restart_wrapper(struct proxy_server *s, struct reg_backend *b, const char *why)
{
    if (b->pid <= 0 || (b->pid_start && host_pid_start(b->pid) != b->pid_start))
        return -1;
    mark_restarting(s, b->uid, b);
    if (kill(b->pid, SIGUSR1) < 0)
        return -1;
    proxy_log("restarting %s's server on front %d (wrapper pid %d): %s", b->worktree, b->front,
              (int)b->pid, why);
    return 0;
}

/* restart and stop: signal every selected wrapper, answer the entries; a
 * stop's who (who asked it) is kept with each for the log line of its
 * drop. */
static json_t *signal_op(struct proxy_server *s, uid_t uid, json_t *req, const char *op, int sig,
                         const char *key, const char *who)
{
    struct selector sel;
    struct reg_backend *found[MAX_MATCHES];
    json_t *reply = read_selector(op, req, &sel);
    int n = reply ? -1 : collect(s, uid, op, &sel, found, &reply);
    if (n < 0)
        return reply;
    json_t *list = json_array();
    for (int i = 0; i < n; i++) {
        if (sig == SIGUSR1)
            mark_restarting(s, uid, found[i]);
        else
            snprintf(found[i]->stop_why, sizeof found[i]->stop_why, "%s", who);
        kill(found[i]->pid, sig);
        proxy_log("%s %s's server on front %d (wrapper pid %d), asked by uid %u",
                  sig == SIGUSR1 ? "restarting" : "stopping", found[i]->worktree, found[i]->front,
                  (int)found[i]->pid, (unsigned)uid);
        json_array_append_new(list, reg_backend_to_json(found[i]));
    }
    /* how long a restarted server is waited for: `wtproxy restart` waits as long */
    return sig == SIGUSR1 ? json_pack("{s:b, s:o, s:I}", "ok", 1, key, list, "start_timeout_ms",
                                      (json_int_t)s->cfg.start_timeout_ms)
                          : json_pack("{s:b, s:o}", "ok", 1, key, list);
}

json_t *proxy_op_restart(struct proxy_server *s, uid_t uid, json_t *req)
{
    return signal_op(s, uid, req, "restart", SIGUSR1, "restarted", NULL);
}

json_t *proxy_op_stop(struct proxy_server *s, uid_t uid, json_t *req)
{
    char user[128], who[160];
    host_uid_words(uid, user, sizeof user);
    snprintf(who, sizeof who, "the dashboard's stop, by %s", user);
    return signal_op(s, uid, req, "stop", SIGTERM, "stopped", who);
}

json_t *proxy_op_stop_asked(struct proxy_server *s, uid_t uid, json_t *req, struct reg_peer *peer)
{
    char user[128], cmdline[256] = "", who[512];
    pid_t pid = reg_peer_pid(peer);
    host_uid_words(uid, user, sizeof user);
    if (pid > 0)
        host_pid_cmdline(pid, cmdline, sizeof cmdline);
    snprintf(who, sizeof who, "the stop op from pid %ld%s%s%s, by %s", (long)pid,
             cmdline[0] ? " (" : "", cmdline, cmdline[0] ? ")" : "", user);
    return signal_op(s, uid, req, "stop", SIGTERM, "stopped", who);
}

/* A start waiting for its worktree's .wtproxy (proxy_op_start). */
struct start_wait {
    struct proxy_server *s;
    proxy_op_reply_cb cb;
    void *arg;
    void *ticket; /* the read's, for ondemand_cancel */
    uid_t uid;
    int front;     /* 0: the service's */
    char *service; /* NULL: the one on front */
    int restart;   /* a restart that found none running (proxy_op_restart_or_start) */
};

/* The server for front registered in worktree (started some other way, or
 * by us): the reply saying it runs; NULL when none. */
static json_t *running_reply(struct proxy_server *s, const char *worktree, int front)
{
    struct selector running = {worktree, NULL, front};
    struct reg_table *t = s->reg ? reg_server_table(s->reg) : NULL;
    for (size_t i = 0; t && i < reg_table_count(t); i++)
        if (selects(&running, reg_table_at(t, i)))
            return json_pack("{s:b, s:s, s:i, s:b, s:o}", "ok", 1, "worktree", worktree, "front",
                             front, "running", 1, "entry", reg_backend_to_json(reg_table_at(t, i)));
    return NULL;
}

/* The server would run as the daemon's user: NULL, or the refusal. */
static json_t *not_ours(uid_t uid)
{
    if (uid != 0 && uid != geteuid())
        return reg_fail("not-permitted",
                        "this daemon runs as uid %u: it starts servers for that "
                        "user only; start yours with wtproxy run",
                        (unsigned)geteuid());
    return NULL;
}

/* The start op, worktree's .wtproxy read (rc, f, ferr as wtfile_read's;
 * f NULL: the daemon stops): the service named (NULL: the one on front)
 * started after those it needs, unless running. */
static json_t *start_with_file(struct proxy_server *s, uid_t uid, const char *worktree,
                               const char *service, int front, int rc, const struct wtfile *f,
                               const char *ferr, int restart)
{
    char err[1024] = "";
    json_t *r;
    if (!f)
        return reg_fail("stopping", "%s", ferr);
    const struct wtfile_service *svc = service && rc == 0 ? wtfile_by_name(f, service) : NULL;
    if (restart && rc >= 0 && (service ? !svc : rc == 1 || !wtfile_by_front(f, front)))
        return reg_fail("not-found",
                        "no server of %s%s%s runs, and its .wtproxy declares none to start "
                        "(see wtproxy ls); start one: cd %s && wtproxy run --front %d -- CMD "
                        "{port}",
                        worktree, service ? " with service " : "", service ? service : "", worktree,
                        svc ? svc->front : front);
    if (service && !svc)
        return reg_fail("not-declared",
                        "%s's .wtproxy declares no service `%s` (wtproxy mcp's "
                        "servers tool, or the dashboard, lists the declared ones)",
                        worktree, service);
    if (svc)
        front = svc->front;
    if ((r = not_ours(uid)) || (r = running_reply(s, worktree, front)))
        return r;
    if (rc == 0 && s->ondemand && ondemand_not_ours(s->ondemand, worktree, f, err, sizeof err))
        return reg_fail("not-permitted", "%s", err);
    int ok = s->ondemand ? ondemand_ensure_file(s->ondemand, worktree, rc, f, ferr, service, front,
                                                err, sizeof err)
                         : -1;
    if (ok < 0 && err[0])
        return reg_fail("bad-wtproxy-file", "%s", err);
    if (ok < 0)
        return reg_fail("not-declared",
                        "%s declares no server for front %d: add `start = CMD "
                        "{port}` and `front = %d` to the .wtproxy at its repository's root, or "
                        "run one: wtproxy run --front %d -- CMD {port}",
                        worktree, front, front, front);
    char log[PATH_MAX];
    log[0] = '\0';
    ondemand_exited(s->ondemand, worktree, front, log, sizeof log);
    return json_pack("{s:b, s:s, s:i, s:b, s:s, s:b}", "ok", 1, "worktree", worktree, "front",
                     front, "running", 0, "log", log, "started", restart);
}

static void start_wait_free(struct start_wait *w)
{
    free(w->service);
    free(w);
}

/* The start's .wtproxy read outlived start_timeout. */
static json_t *start_timed_out(const char *worktree, unsigned ms)
{
    return reg_fail("timeout",
                    "reading %s/.wtproxy took longer than start_timeout (%u ms), so "
                    "nothing was started: its filesystem is slow or not answering. Start again "
                    "once it answers, or run the server yourself: wtproxy run -- CMD {port}",
                    worktree, ms);
}

/* ondemand_file_cb: the held reply goes. */
static void start_read(void *arg, const char *worktree, int rc, const struct wtfile *f,
                       const char *err)
{
    struct start_wait *w = arg;
    w->cb(w->arg, rc == ONDEMAND_NO_FOLDER   ? reg_fail("not-found", "%s", err)
                  : rc == ONDEMAND_TIMED_OUT ? start_timed_out(worktree, w->s->cfg.start_timeout_ms)
                                             : start_with_file(w->s, w->uid, worktree, w->service,
                                                               w->front, rc, f, err, w->restart));
    start_wait_free(w);
}

json_t *proxy_op_start(struct proxy_server *s, uid_t uid, json_t *req, proxy_op_reply_cb cb,
                       void *arg, void **pending)
{
    struct selector sel;
    *pending = NULL;
    json_t *reply = read_selector("start", req, &sel);
    if (reply)
        return reply;
    if (!s->ondemand)
        return proxy_op_no_ondemand("starts no servers on demand");
    struct start_wait *w = calloc(1, sizeof *w);
    if (!w)
        return reg_fail("internal", "out of memory");
    *w = (struct start_wait){.s = s,
                             .cb = cb,
                             .arg = arg,
                             .uid = uid,
                             .front = sel.front ? sel.front : WTP_DEFAULT_FRONT_PORT,
                             .service = sel.service ? strdup(sel.service) : NULL};
    if ((sel.service && !w->service) ||
        !(w->ticket = ondemand_read_later(s->ondemand, sel.worktree, s->cfg.start_timeout_ms,
                                          start_read, w))) {
        start_wait_free(w);
        return reg_fail("internal", "out of memory");
    }
    *pending = w;
    return NULL;
}

json_t *proxy_op_restart_or_start(struct proxy_server *s, uid_t uid, json_t *req,
                                  proxy_op_reply_cb cb, void *arg, void **pending)
{
    json_t *reply = proxy_op_restart(s, uid, req);
    const char *error = json_string_value(json_object_get(reply, "error"));
    *pending = NULL;
    if (!error || strcmp(error, "not-found") != 0 || !s->ondemand)
        return reply;
    json_t *start = proxy_op_start(s, uid, req, cb, arg, pending);
    if (*pending) {
        ((struct start_wait *)*pending)->restart = 1;
        json_decref(reply);
        return NULL;
    }
    json_decref(start); /* refused before any read: the restart's not-found says more */
    return reply;
}

void proxy_op_start_cancel(void *pending)
{
    struct start_wait *w = pending;
    if (!w)
        return;
    ondemand_cancel(w->ticket);
    start_wait_free(w);
}

/* proxy_op_reply_cb for the control socket: the peer holds its reply
 * until then, and outlives the reader (ondemand_reader.c). */
static void reply_peer(void *arg, json_t *reply)
{
    reg_server_reply(arg, reply);
}

json_t *proxy_op_start_later(struct proxy_server *s, uid_t uid, json_t *req, struct reg_peer *peer)
{
    void *pending;
    if (!peer)
        return reg_fail("unsupported", "the start op waits for a read of the worktree's "
                                       ".wtproxy, so it is answered on the daemon's control "
                                       "socket only: send it there, or press the dashboard's "
                                       "start button (wtproxy dashboard prints its URL)");
    json_t *reply = proxy_op_start(s, uid, req, reply_peer, peer, &pending);
    return reply ? reply : reg_server_later();
}
