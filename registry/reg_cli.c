/* reg_cli.c - `wtproxy register|unregister` and what every registry
 * subcommand shares: flags, the enclosing worktree, error replies. Exit
 * status: 0 done, 1 the daemon refused or cannot be reached, 2 bad usage. */
#include "reg_client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "reg_db.h"
#include "registry.h"

static const char register_usage[] =
    "usage: wtproxy register --port P (--pid PID | --ttl DURATION) [options]\n"
    "\n"
    "Register a dev server started some other way, so the proxy routes this\n"
    "worktree's requests to it. It is registered ready at once.\n"
    "\n"
    "  --port P          the port the server listens on (required)\n"
    "  --pid PID         the server's pid: the entry goes when it exits\n"
    "  --ttl DURATION    how long the entry lives (30s, 10m, 2h, 1d); required\n"
    "                    without --pid\n"
    "  --front PORT      the proxy port it serves (default 8000)\n"
    "  --worktree DIR    default: the git worktree enclosing the current folder\n"
    "  --host H          the server's address (default 127.0.0.1)\n"
    "  --no-autostart    fail instead of starting a daemon when none answers\n";

static const char unregister_usage[] =
    "usage: wtproxy unregister [--worktree DIR] [--front PORT]\n"
    "\n"
    "Remove this worktree's entry (yours, or any as root).\n"
    "\n"
    "  --worktree DIR    default: the git worktree enclosing the current folder\n"
    "  --front PORT      default 8000\n";

long long reg_cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void reg_cli_age(long long ms, char *buf, size_t len)
{
    long long s = ms < 0 ? 0 : ms / 1000;
    if (s < 60)
        snprintf(buf, len, "%llds", s);
    else if (s < 3600)
        snprintf(buf, len, "%lldm", s / 60);
    else if (s < 86400)
        snprintf(buf, len, "%lldh", s / 3600);
    else
        snprintf(buf, len, "%lldd", s / 86400);
}

/* Match argv[*i] against opts and consume its value. Returns 0, or -1
 * with err for an unknown flag or a missing value. */
static int take_opt(int argc, char **argv, int *i, const struct reg_opt *opts, char *err,
                    size_t errlen)
{
    const char *arg = argv[*i] + 2, *eq = strchr(arg, '=');
    size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    for (const struct reg_opt *o = opts; o->name; o++) {
        if (strlen(o->name) != n || strncmp(o->name, arg, n) != 0)
            continue;
        if (!o->val) {
            if (eq)
                break; /* a switch takes no value */
            *o->on = 1;
            return 0;
        }
        if (eq) {
            *o->val = eq + 1;
        } else if (*i + 1 < argc) {
            *o->val = argv[++*i];
        } else {
            snprintf(err, errlen, "--%s needs a value", o->name);
            return -1;
        }
        return 0;
    }
    snprintf(err, errlen, "unknown option \"%s\"", argv[*i]);
    return -1;
}

int reg_cli_parse(int argc, char **argv, const struct reg_opt *opts, int *rest, char *err,
                  size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return 1;
        if (rest && strcmp(a, "--") == 0) {
            *rest = i + 1;
            return 0;
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            if (rest) {
                *rest = i;
                return 0;
            }
            snprintf(err, errlen, "unexpected argument \"%s\"", a);
            return -1;
        }
        if (take_opt(argc, argv, &i, opts, err, errlen) < 0)
            return -1;
    }
    if (rest)
        *rest = argc;
    return 0;
}

/* A whole decimal number in [lo, hi]. Returns 0 or -1. */
static int parse_long(const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < lo || n > hi)
        return -1;
    *out = n;
    return 0;
}

int reg_cli_port(const char *flag, const char *v, int *port, char *err, size_t errlen)
{
    long n;
    if (parse_long(v, 1, 65535, &n) < 0) {
        snprintf(err, errlen, "--%s \"%s\" is not a port (1-65535)", flag, v);
        return -1;
    }
    *port = (int)n;
    return 0;
}

/* A TTL: a number with a unit (ms, s, m, h, d). A bare number is refused:
 * the config file reads it as ms, a person typing --ttl 30 means seconds. */
int reg_cli_duration(const char *flag, const char *v, long long *ms, char *err, size_t errlen)
{
    static const struct { const char *unit; long long ms; } units[] = {
        {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    for (size_t i = 0; !errno && end != v && n > 0 && i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].unit) == 0 && n <= 365LL * 86400000 / units[i].ms) {
            *ms = n * units[i].ms;
            return 0;
        }
    }
    snprintf(err, errlen, "--%s \"%s\" is not a duration: give a number and a unit, "
             "e.g. --%s 30s, 10m, 2h, 1d", flag, v, flag);
    return -1;
}

int reg_cli_worktree(const char *dir, char *out, size_t outlen, char *err, size_t errlen)
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

int reg_cli_serve_worktree(const char *dir, char *out, size_t outlen, char *err, size_t errlen)
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
        snprintf(err, errlen, "--worktree %s is inside the worktree %s, not its top folder, "
                 "and requests are routed by worktree: pass --worktree %s", path, w.root, w.root);
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

/* Print the conflict: who holds the key, and how to free it. */
static void report_conflict(json_t *holder)
{
    const char *wt = json_string_value(json_object_get(holder, "worktree"));
    const char *cmd = json_string_value(json_object_get(holder, "command"));
    json_int_t pid = json_integer_value(json_object_get(holder, "pid"));
    json_int_t front = json_integer_value(json_object_get(holder, "front"));
    json_int_t reg = json_integer_value(json_object_get(holder, "registered_ms"));
    char age[32];
    reg_cli_age(reg_cli_now_ms() - reg, age, sizeof age);
    wt = wt ? wt : "?";
    fprintf(stderr, "wtproxy: %s is already served on front :%lld by pid %lld (%s), "
            "registered %s ago, uid %lld\n",
            wt, (long long)front, (long long)pid, cmd && *cmd ? cmd : "no command", age,
            (long long)json_integer_value(json_object_get(holder, "uid")));
    /* Often why a test runner starts a second server: the gate refused the
     * one registered (a leftover on a recycled port, or stale code). */
    json_t *who = json_object_get(holder, "whoami");
    const char *state = json_string_value(json_object_get(who, "state"));
    const char *detail = json_string_value(json_object_get(who, "detail"));
    if (state && strcmp(state, "verified") != 0 && strcmp(state, "trusted") != 0)
        fprintf(stderr, "wtproxy: the /__whoami gate refuses that server (%s): %s\n", state,
                detail && *detail ? detail : "see wtproxy ls");
    if (pid > 0)
        fprintf(stderr, "wtproxy: stop it first (kill %lld), or serve another front "
                "port: --front %lld\n", (long long)pid, (long long)front + 1);
    else
        fprintf(stderr, "wtproxy: remove it first: wtproxy unregister --worktree %s "
                "--front %lld\n", wt, (long long)front);
}

int reg_cli_report(json_t *reply)
{
    const char *code = json_string_value(json_object_get(reply, "error"));
    const char *msg = json_string_value(json_object_get(reply, "message"));
    json_t *holder = json_object_get(reply, "holder");
    if (code && strcmp(code, "conflict") == 0 && json_is_object(holder)) {
        report_conflict(holder);
        return 1;
    }
    fprintf(stderr, "wtproxy: %s (%s)\n", msg ? msg : "the daemon refused the request",
            code ? code : "no error code");
    return 1;
}

/* The command line of a running pid, argv joined by spaces; "" when
 * unreadable. */
static void pid_cmdline(long pid, char *out, size_t outlen)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%ld/cmdline", pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, out, outlen - 1);
    if (fd >= 0)
        close(fd);
    n = n < 0 ? 0 : n;
    while (n > 0 && out[n - 1] == '\0')
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (out[i] == '\0')
            out[i] = ' ';
    out[n] = '\0';
}

/* Usage error: one line naming the problem and where help is. */
static int usage_error(const char *cmd, const char *msg)
{
    fprintf(stderr, "wtproxy %s: %s (see wtproxy %s --help)\n", cmd, msg, cmd);
    return 2;
}

struct register_args {
    const char *port, *pid, *front, *ttl, *worktree, *host;
    int no_autostart;
};

/* Turn parsed flags into the register request. Returns it, or NULL with
 * err (bad usage). */
static json_t *register_request(const struct register_args *a, char *err, size_t errlen)
{
    int port, front = WTP_DEFAULT_FRONT;
    long pid = 0;
    long long ttl = 0;
    char wt[PATH_MAX], cmd[1024] = "";
    if (!a->port) {
        snprintf(err, errlen, "give --port P, the port your server listens on");
        return NULL;
    }
    if (!a->pid && !a->ttl) {
        snprintf(err, errlen, "without --pid, an entry needs --ttl DURATION (e.g. --ttl 30m): "
                 "nothing else would tell when the server is gone");
        return NULL;
    }
    if (reg_cli_port("port", a->port, &port, err, errlen) < 0 ||
        (a->front && reg_cli_port("front", a->front, &front, err, errlen) < 0) ||
        (a->ttl && reg_cli_duration("ttl", a->ttl, &ttl, err, errlen) < 0))
        return NULL;
    if (a->pid && parse_long(a->pid, 1, 0x7fffffff, &pid) < 0) {
        snprintf(err, errlen, "--pid \"%s\" is not a process id", a->pid);
        return NULL;
    }
    if (reg_cli_serve_worktree(a->worktree, wt, sizeof wt, err, errlen) < 0)
        return NULL;
    if (pid)
        pid_cmdline(pid, cmd, sizeof cmd);
    json_t *req = json_pack("{s:s, s:i, s:s, s:i, s:I, s:I, s:s, s:b}", "op", "register",
                            "front", front, "worktree", wt, "port", port, "pid", (json_int_t)pid,
                            "ttl_ms", (json_int_t)ttl, "command", cmd, "ready", 1);
    if (req && a->host)
        json_object_set_new(req, "host", json_string(a->host));
    if (!req)
        snprintf(err, errlen, "out of memory");
    return req;
}

/* `wtproxy register`. */
static int cmd_register(int argc, char **argv)
{
    struct register_args a = {0};
    const struct reg_opt opts[] = {
        {"port", &a.port, NULL},   {"pid", &a.pid, NULL},           {"front", &a.front, NULL},
        {"ttl", &a.ttl, NULL},     {"worktree", &a.worktree, NULL}, {"host", &a.host, NULL},
        {"no-autostart", NULL, &a.no_autostart}, {NULL, NULL, NULL}};
    char err[PATH_MAX + 256];
    int r = reg_cli_parse(argc, argv, opts, NULL, err, sizeof err);
    if (r > 0) {
        fputs(register_usage, stdout);
        return 0;
    }
    if (r < 0)
        return usage_error("register", err);
    json_t *req = register_request(&a, err, sizeof err), *reply = NULL;
    if (!req)
        return usage_error("register", err);
    r = reg_client_call(req, reg_client_may_autostart(a.no_autostart), &reply, err, sizeof err);
    json_decref(req);
    if (r < 0) {
        fprintf(stderr, "wtproxy: %s\n", err);
        return 1;
    }
    if (!json_is_true(json_object_get(reply, "ok"))) {
        r = reg_cli_report(reply);
    } else {
        json_t *e = json_object_get(reply, "entry");
        fprintf(stderr, "wtproxy: registered %s on front :%lld -> %s\n",
                json_string_value(json_object_get(e, "worktree")),
                (long long)json_integer_value(json_object_get(e, "front")),
                json_string_value(json_object_get(e, "backend")));
    }
    json_decref(reply);
    return r;
}

/* `wtproxy unregister`. */
static int cmd_unregister(int argc, char **argv)
{
    const char *worktree = NULL, *frontv = NULL;
    const struct reg_opt opts[] = {
        {"worktree", &worktree, NULL}, {"front", &frontv, NULL}, {NULL, NULL, NULL}};
    char err[PATH_MAX + 256], wt[PATH_MAX];
    int front = WTP_DEFAULT_FRONT;
    int r = reg_cli_parse(argc, argv, opts, NULL, err, sizeof err);
    if (r > 0) {
        fputs(unregister_usage, stdout);
        return 0;
    }
    if (r < 0 || (frontv && reg_cli_port("front", frontv, &front, err, sizeof err) < 0) ||
        reg_cli_worktree(worktree, wt, sizeof wt, err, sizeof err) < 0)
        return usage_error("unregister", err);
    json_t *req = json_pack("{s:s, s:i, s:s}", "op", "unregister", "front", front, "worktree", wt);
    json_t *reply = NULL;
    r = req ? reg_client_call(req, 0, &reply, err, sizeof err) : -1;
    json_decref(req);
    if (r < 0) {
        fprintf(stderr, "wtproxy: %s\n", req ? err : "out of memory");
        return 1;
    }
    const char *code = json_string_value(json_object_get(reply, "error"));
    if (json_is_true(json_object_get(reply, "ok"))) {
        fprintf(stderr, "wtproxy: unregistered %s from front :%d\n", wt, front);
    } else if (code && strcmp(code, "not-found") == 0) {
        fprintf(stderr, "wtproxy: nothing is registered for %s on front :%d (see wtproxy ls)\n",
                wt, front);
        r = 1;
    } else {
        r = reg_cli_report(reply);
    }
    json_decref(reply);
    return r;
}

int reg_cli_main(int argc, char **argv)
{
    if (strcmp(argv[0], "run") == 0)
        return reg_run_main(argc, argv);
    if (strcmp(argv[0], "register") == 0)
        return cmd_register(argc, argv);
    if (strcmp(argv[0], "unregister") == 0)
        return cmd_unregister(argc, argv);
    if (strcmp(argv[0], "ls") == 0)
        return reg_ls_main(argc, argv);
    if (strcmp(argv[0], "dashboard") == 0)
        return reg_dashboard_main(argc, argv);
    if (strcmp(argv[0], "claim") == 0)
        return reg_claim_main(argc, argv);
    if (strcmp(argv[0], "release") == 0)
        return reg_release_main(argc, argv);
    if (strcmp(argv[0], "leases") == 0)
        return reg_leases_main(argc, argv);
    if (strcmp(argv[0], "db") == 0)
        return reg_db_main(argc, argv);
    fprintf(stderr, "wtproxy: unknown command \"%s\" (see wtproxy --help)\n", argv[0]);
    return 2;
}
