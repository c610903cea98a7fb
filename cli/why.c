/* why.c - `wtproxy why [--pid PID] [--front PORT]`: how the daemon would
 * place a process's requests: the ppid chain it walks, the ancestor that
 * decides and by what, the worktree, and the backend that maps to. The
 * decision is built once as data (cli_why_json), which this command prints
 * for people and `wtproxy mcp`'s why tool returns to agents. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "caller.h"
#include "cli.h"
#include "front.h"
#include "reg_db.h"
#include "registry.h"
#include "host.h"
#include "ondemand.h"
#include "packages.h"
#include "servers.h"
#include "wtfile.h"

#define NOT_PLACED                                                                                 \
    "not placed: no process in the chain has WTPROXY_WORKTREE, nor a cwd in a worktree "           \
    "of a repository with a .wtproxy or a registration.\nIts requests go to the default "          \
    "backend, or get 503. Place it: run it from its worktree, set "                                \
    "WTPROXY_WORKTREE=/path/to/worktree, or send X-Wtproxy-Worktree."

/* What the daemon listed: its registrations, and the servers that exited
 * lately, whose worktrees it knows too (route_known_snap). */
struct listed {
    struct reg_table *t;
    json_t *exited;
};

/* Whether folder is a worktree of the repository whose common dir is common. */
static int same_repo(const char *folder, const char *common)
{
    struct host_worktree w;
    return host_worktree_of(folder, &w, NULL, 0) == 0 && strcmp(w.common, common) == 0;
}

/* The daemon's rule (route_known_repo), on what it listed. */
static int known(const char *worktree, const char *common_dir, void *arg)
{
    const struct listed *l = arg;
    size_t i;
    json_t *x;
    if (ondemand_declared(worktree, common_dir))
        return 1;
    for (i = 0; i < reg_table_count(l->t); i++)
        if (same_repo(reg_table_at(l->t, i)->worktree, common_dir))
            return 1;
    json_array_foreach(l->exited, i, x)
        if (same_repo(json_string_value(json_object_get(x, "worktree")), common_dir))
            return 1;
    return 0;
}

/* The one of exited on (front, worktree), or NULL. */
static json_t *exited_on(json_t *exited, int front, const char *worktree)
{
    size_t i;
    json_t *x;
    json_array_foreach(exited, i, x)
        if (json_integer_value(json_object_get(x, "front")) == front &&
            strcmp(json_string_value(json_object_get(x, "worktree")), worktree) == 0)
            return x;
    return NULL;
}

static int parse_int(const char *flag, const char *v, long min, long max, long *out)
{
    char *end;
    errno = 0;
    *out = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || end == v || *end || *out < min || *out > max) {
        fprintf(stderr,
                "wtproxy why: %s needs a number from %ld to %ld (see wtproxy why "
                "--help)\n",
                flag, min, max);
        return -1;
    }
    return 0;
}

json_t *cli_json_text(const char *s, size_t n)
{
    json_t *j = json_stringn(s, n);
    if (j)
        return j;
    char *copy = malloc(n + 1);
    for (size_t i = 0; copy && i < n; i++)
        copy[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
    j = copy ? json_stringn(copy, n) : NULL;
    free(copy);
    return j;
}

/* The chain from pl->pid to the decider (or as far as the walk goes):
 * [{"pid", "cwd" (null when unreadable), "decides"}]. */
static json_t *chain_json(const struct caller_place *pl)
{
    json_t *chain = json_array();
    pid_t pid = pl->pid;
    for (int depth = 0;
         chain && pid > 1 && depth <= (pl->decided_by ? pl->depth : CALLER_MAX_DEPTH - 1);
         depth++) {
        char cwd[PATH_MAX];
        json_t *where =
            host_pid_cwd(pid, cwd, sizeof cwd) == 0 ? cli_json_text(cwd, strlen(cwd)) : json_null();
        json_array_append_new(chain, json_pack("{s:i, s:o, s:b}", "pid", (int)pid, "cwd", where,
                                               "decides", pid == pl->decided_by));
        pid = host_pid_parent(pid);
    }
    return chain;
}

/* The service worktree's own .wtproxy declares on front, into name ("" for
 * the unnamed one). 1 when it declares one, else 0 (no file, a bad one). */
static int declared_on(const char *worktree, int front, char *name, size_t len)
{
    struct wtfile *f = malloc(sizeof *f);
    char err[1024];
    const struct wtfile_service *s = NULL;
    if (f && wtfile_read(worktree, f, err, sizeof err) == 0 && (s = wtfile_by_front(f, front)))
        snprintf(name, len, "%s", s->name);
    free(f);
    return s != NULL;
}

/* "backend: none ..." for a placed caller without a server on front: the
 * daemon starts one its .wtproxy declares there, else requests get 503.
 * Returns 1 in the first case (the request will be served). */
static int no_backend(const char *worktree, int front, char *msg, size_t len)
{
    char svc[REG_SERVICE_MAX + 16] = "", name[REG_SERVICE_MAX];
    if (declared_on(worktree, front, name, sizeof name)) {
        if (name[0])
            snprintf(svc, sizeof svc, " (service %s)", name);
        snprintf(msg, len,
                 "backend: none runs on front :%d yet; the worktree's .wtproxy declares one%s, "
                 "which the daemon starts at the first request",
                 front, svc);
        return 1;
    }
    char run[48] = "wtproxy run"; /* without --front it registers on 8000 */
    if (front != WTP_DEFAULT_FRONT_PORT)
        snprintf(run, sizeof run, "wtproxy run --front %d", front);
    snprintf(msg, len,
             "backend: none on front :%d; requests get 503. Start one from the worktree: "
             "%s -- <server command with {port}>",
             front, run);
    return 0;
}

/* The verdict's fields of a placement pl into o: worktree, decider, the
 * backend entry on front (null when none), and the sentence that says it.
 * Returns 1 when its requests on front are served (a backend, or one its
 * .wtproxy starts), else 0. */
static int verdict(json_t *o, const struct caller_place *pl, int placed, int front,
                   const struct listed *l)
{
    char msg[8 * PATH_MAX + REG_START_FAILED_MAX], fix[4 * PATH_MAX], age[32];
    int served = 0;
    struct reg_backend *b = placed ? reg_table_get(l->t, front, pl->worktree) : NULL;
    json_t *gone = placed && !b ? exited_on(l->exited, front, pl->worktree) : NULL;
    json_object_set_new(o, "placed", json_boolean(placed));
    json_object_set_new(o, "worktree",
                        placed ? cli_json_text(pl->worktree, strlen(pl->worktree)) : json_null());
    json_object_set_new(o, "how",
                        placed
                            ? json_string(strcmp(pl->how, "env") == 0 ? "WTPROXY_WORKTREE" : "cwd")
                            : json_null());
    json_object_set_new(o, "front", json_integer(front));
    json_object_set_new(o, "backend", b ? reg_backend_to_json(b) : json_null());
    if (gone)
        json_object_set(o, "exited", gone);
    if (!placed)
        snprintf(msg, sizeof msg, "%s", NOT_PLACED);
    else if (!b && gone) /* why it has none: what its last server said */
        snprintf(msg, sizeof msg, "backend: none on front :%d; requests get 503. %s", front,
                 json_string_value(json_object_get(gone, "said")));
    else if (!b)
        served = no_backend(pl->worktree, front, msg, sizeof msg);
    else if (b->state == REG_STARTING && b->start_failed[0] &&
             b->start_failed_when == REG_FAILED_PORT)
        snprintf(msg, sizeof msg,
                 "backend: %s (pid %d, it listens on another port than %d, the one wtproxy "
                 "gave it: its command ignores {port}; put {port} where it takes its port, then "
                 "wtproxy restart) on front :%d; what its wrapper saw:\n%s",
                 b->name, (int)b->pid, b->port, front, b->start_failed);
    else if (b->state == REG_STARTING && b->start_failed[0] &&
             b->start_failed_when == REG_FAILED_DIED)
        snprintf(msg, sizeof msg,
                 "backend: %s (pid %d, failed: the process that served died and its reloader "
                 "holds the port, answering nothing; restart it: wtproxy restart --front %d) on "
                 "front :%d; what its wrapper saw:\n%s",
                 b->name, (int)b->pid, b->front, front, b->start_failed);
    else if (b->state == REG_STARTING && b->start_failed[0] &&
             reg_failed_fixed(b->start_failed, b->worktree, b->start_failed_ms, fix, sizeof fix))
        snprintf(msg, sizeof msg,
                 "backend: %s (pid %d, failed: it lives on without listening; its files changed "
                 "since it failed (%s), yet its reloader did not start it again: wtproxy restart "
                 "--front %d) on front :%d; its last lines before:\n%s",
                 b->name, (int)b->pid, fix, b->front, front, b->start_failed);
    else if (b->state == REG_STARTING && b->start_failed[0] &&
             (whoami_missing_package(b->start_failed, b->worktree, fix, sizeof fix) ||
              host_deps_missing(b->start_failed, b->command, b->worktree, fix, sizeof fix) ||
              reg_db_refused(b->start_failed, fix, sizeof fix)))
        snprintf(msg, sizeof msg,
                 "backend: %s (pid %d, failed: it lives on without listening; %s; then wtproxy "
                 "restart) on front :%d; its last lines:\n%s",
                 b->name, (int)b->pid, fix, front, b->start_failed);
    else if (b->state == REG_STARTING && b->start_failed[0])
        snprintf(msg, sizeof msg,
                 "backend: %s (pid %d, %s: it lives on without listening; fix it and save: %s "
                 "restarts it; a fix in a file it does not watch, an .env or a config, needs "
                 "wtproxy restart --front %d) on front :%d; its last lines:\n%s",
                 b->name, (int)b->pid,
                 b->start_failed_when == REG_FAILED_EDIT
                     ? "an edit broke it: its reloader restarted it and the new "
                       "server failed"
                     : "failed at start",
                 b->reloader[0] ? b->reloader : "its autoreloader", b->front, front,
                 b->start_failed);
    else if (b->state == REG_STARTING && b->not_ready[0])
        snprintf(msg, sizeof msg,
                 "backend: %s (pid %d, starting: it listens on port %d, but its ready path did not "
                 "answer 2xx or 3xx: %s, each time for the last %s) on front :%d",
                 b->name, (int)b->pid, b->port, b->not_ready,
                 (host_age(host_wall_ms() - b->not_ready_ms, age, sizeof age), age), front);
    else
        served =
            snprintf(msg, sizeof msg, "backend: %s (pid %d, %s) on front :%d", b->name, (int)b->pid,
                     b->state == REG_READY      ? "ready"
                     : b->state == REG_STARTING ? "starting"
                                                : "dead",
                     front) > 0;
    json_object_set_new(o, "explanation", cli_json_text(msg, strlen(msg)));
    return served;
}

json_t *cli_why_json(pid_t pid, const char *folder, int front, struct reg_table *t, json_t *exited,
                     char *err, size_t errlen)
{
    struct listed l = {t, exited};
    struct caller_place pl;
    struct stat st;
    char path[64];
    json_t *o;
    int placed;
    if (folder) {
        if (stat(folder, &st) < 0 || !S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "%s is not a folder; give a worktree's folder", folder);
            return NULL;
        }
        placed = caller_place_dir(folder, known, &l, &pl) == 0;
        o = json_pack("{s:o}", "folder", cli_json_text(folder, strlen(folder)));
    } else {
        snprintf(path, sizeof path, "/proc/%d", (int)pid);
        if (stat(path, &st) < 0) {
            snprintf(err, errlen,
                     "no process %d (it exited, or the pid is mistyped); give a "
                     "running one: wtproxy why --pid PID",
                     (int)pid);
            return NULL;
        }
        placed = caller_place(pid, st.st_uid, known, &l, &pl) == 0;
        o = json_pack("{s:i, s:o, s:o, s:i}", "pid", (int)pid, "process",
                      cli_json_text(pl.comm, strlen(pl.comm)), "chain", chain_json(&pl),
                      "decided_by", (int)pl.decided_by);
    }
    if (o)
        json_object_set_new(o, "ok", json_boolean(verdict(o, &pl, placed, front, &l)));
    else
        snprintf(err, errlen, "out of memory");
    return o;
}

/* Print the decision of `why` (cli_why_json) for people. */
static void print_why(json_t *o)
{
    size_t i;
    json_t *step;
    printf("process %d: %s\n", (int)json_integer_value(json_object_get(o, "pid")),
           json_string_value(json_object_get(o, "process")));
    json_array_foreach(json_object_get(o, "chain"), i, step) {
        const char *cwd = json_string_value(json_object_get(step, "cwd"));
        printf("  %s pid %-7d cwd %s%s\n", i ? "<-" : "  ",
               (int)json_integer_value(json_object_get(step, "pid")), cwd ? cwd : "?",
               json_is_true(json_object_get(step, "decides")) ? "   <- decides" : "");
    }
    if (json_is_true(json_object_get(o, "placed")))
        printf("worktree %s\n  decided by pid %d (its %s)\n",
               json_string_value(json_object_get(o, "worktree")),
               (int)json_integer_value(json_object_get(o, "decided_by")),
               json_string_value(json_object_get(o, "how")));
    printf("%s\n", json_string_value(json_object_get(o, "explanation")));
}

json_t *cli_why_fronts_json(pid_t pid, const char *folder, const int *fronts, int n,
                            struct reg_table *t, json_t *exited, char *err, size_t errlen)
{
    json_t *o = cli_why_json(pid, folder, fronts[0], t, exited, err, errlen);
    if (!o || n < 2)
        return o;
    json_t *all = json_array();
    int ok = 1;
    for (int i = 0; all && i < n; i++) {
        json_t *f =
            i ? cli_why_json(pid, folder, fronts[i], t, exited, err, errlen) : json_incref(o);
        if (!f) { /* the process exited meanwhile: err says so */
            json_decref(all);
            json_decref(o);
            return NULL;
        }
        ok &= json_is_true(json_object_get(f, "ok"));
        json_array_append_new(all, json_pack("{s:i, s:O, s:O}", "front", fronts[i], "ok",
                                             json_object_get(f, "ok"), "explanation",
                                             json_object_get(f, "explanation")));
        json_decref(f);
    }
    json_object_set_new(o, "fronts", all);
    json_object_set_new(o, "ok", json_boolean(ok));
    return o;
}

/* Explain pid's requests on each of fronts: the walk, then a line for
 * each other front. 0 when every front serves them, else 1. */
static int explain(pid_t pid, const int *fronts, int n, struct reg_table *t, json_t *exited)
{
    char err[PATH_MAX + 256];
    json_t *o = cli_why_fronts_json(pid, NULL, fronts, n, t, exited, err, sizeof err), *f;
    if (!o) {
        fprintf(stderr, "wtproxy why: %s\n", err);
        return 1;
    }
    print_why(o);
    size_t i;
    json_array_foreach(json_object_get(o, "fronts"), i, f)
        if (i > 0)
            printf("%s\n", json_string_value(json_object_get(f, "explanation")));
    int r = !json_is_true(json_object_get(o, "ok"));
    json_decref(o);
    return r;
}

/* The fronts this folder's worktree is judged on (cli/front.c): each its
 * .wtproxy declares, as an app of several servers (a front end and its
 * API) is reached on each. A file the daemon refuses gives none, and is
 * said, with its line. */
static int fronts_here(int *fronts)
{
    struct cli_wtproxy w;
    cli_wtproxy_read(".", &w);
    json_t *ping = w.file && w.file->n ? NULL : cli_ping(0);
    int n = cli_wtproxy_fronts(&w, ping, fronts);
    if (w.err[0])
        fprintf(stderr,
                "wtproxy why: the daemon refuses the .wtproxy, so it starts no server from it and "
                "its fronts are not judged (explained on front %d instead); correct it: %s\n",
                fronts[0], w.err);
    json_decref(ping);
    cli_wtproxy_free(&w);
    return n;
}

int cli_why_main(int argc, char **argv)
{
    long pid = (long)getpid(), front = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return CLI_HELP;
        int is_pid = strcmp(argv[i], "--pid") == 0, is_front = strcmp(argv[i], "--front") == 0;
        if (!is_pid && !is_front) {
            fprintf(stderr, "wtproxy why: unknown option \"%s\" (see wtproxy why --help)\n",
                    argv[i]);
            return 2;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (parse_int(argv[i - (v != NULL)], v, 1, is_pid ? INT_MAX : 65535,
                      is_pid ? &pid : &front) < 0)
            return 2;
    }
    char err[PATH_MAX + 256];
    json_t *exited = NULL;
    struct reg_table *t = cli_table_exited(err, sizeof err, &exited);
    if (!t) {
        fprintf(stderr, "wtproxy why: %s\n", err);
        return 1;
    }
    int fronts[WTFILE_MAX_SERVICES], n = 1;
    if (front)
        fronts[0] = (int)front;
    else
        n = fronts_here(fronts);
    int r = explain((pid_t)pid, fronts, n, t, exited);
    reg_table_free(t);
    json_decref(exited);
    return r;
}
