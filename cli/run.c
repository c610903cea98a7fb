/* run.c - `wtproxy run -- CMD ARGS...`: reserve a port, register this
 * wrapper, run CMD on that port, mark it ready once CMD (or a descendant)
 * listens, and unregister when CMD exits, passing on its status.
 *
 * The wrapper's own pid is what gets registered: the daemon drops the
 * entry when the wrapper dies, however it dies. CMD stays in the wrapper's
 * process group (a kill of the group, which is how Playwright stops its
 * webServer, takes CMD down too) and gets SIGTERM through PR_SET_PDEATHSIG
 * when the wrapper alone dies. The wrapper never execs itself away, so
 * the cleanup below always runs when it can. SIGUSR1 restarts CMD (the
 * daemon's gate finds it stale, or `wtproxy restart`); SIGTERM stops its
 * whole process tree (`wtproxy stop`). CMD's output also goes to a log
 * (run_log.c). */
#include "cli.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "registry.h"
#include "host.h"


struct run {
    int front, port;
    int restart_on_stale;
    const char *service; /* --service, or NULL */
    const char *health;  /* --health /PATH: what must answer 2xx/3xx, or NULL */
    char worktree[PATH_MAX];
    char **argv;         /* CMD ARGS with {port} substituted, NULL-terminated */
    char command[1024];  /* argv joined, for people */
    struct cli_run_log log;
};

/* The pid signals are forwarded to; set once, before signals are unblocked. */
static volatile pid_t child_pid;

/* The daemon's gate found CMD stale (SIGUSR1): restart it. */
static volatile sig_atomic_t restart_asked;

static void ask_restart(int sig)
{
    (void)sig;
    restart_asked = 1;
}

/* SIGTERM (wtproxy stop, Playwright's end, systemd): stop CMD's whole
 * tree. Django's autoreloader serves from a child that a SIGTERM to CMD
 * alone would leave holding the port. */
static volatile sig_atomic_t stop_asked;

static void ask_stop(int sig)
{
    (void)sig;
    stop_asked = 1;
}

/* Forward SIGINT/SIGHUP to CMD (SIGTERM stops its tree: ask_stop). A
 * signal the terminal sent (Ctrl-C, si_code SI_KERNEL) went to the whole foreground group, CMD included:
 * forwarding it would deliver it twice. */
static void forward(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    if (si->si_code != SI_KERNEL && child_pid > 0)
        kill(child_pid, sig);
}

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

/* s with every "{port}" replaced by port, malloc'd; NULL when out of memory. */
static char *substitute(const char *s, int port)
{
    char num[16];
    int nlen = snprintf(num, sizeof num, "%d", port);
    size_t n = 0, len = strlen(s);
    for (const char *p = s; (p = strstr(p, "{port}")) != NULL; p += 6)
        n++;
    char *out = malloc(len + n * (size_t)nlen + 1), *o = out;
    for (const char *p = s, *hit; out && *p; p = hit + 6) {
        if (!(hit = strstr(p, "{port}"))) {
            memcpy(o, p, strlen(p));
            o += strlen(p);
            break;
        }
        memcpy(o, p, (size_t)(hit - p));
        o += hit - p;
        memcpy(o, num, (size_t)nlen);
        o += nlen;
    }
    if (out)
        *o = '\0';
    return out;
}

/* Fill r->argv and r->command from CMD ARGS. Returns 0 or -1 (no memory). */
static int build_argv(struct run *r, int argc, char **argv)
{
    r->argv = calloc((size_t)argc + 1, sizeof *r->argv);
    size_t used = 0;
    for (int i = 0; r->argv && i < argc; i++) {
        if (!(r->argv[i] = substitute(argv[i], r->port)))
            return -1;
        int n = snprintf(r->command + used, sizeof r->command - used, "%s%s", i ? " " : "",
                         r->argv[i]);
        used = n < 0 || used + (size_t)n >= sizeof r->command ? sizeof r->command - 1
                                                             : used + (size_t)n;
    }
    return r->argv ? 0 : -1;
}

static void free_argv(struct run *r)
{
    for (size_t i = 0; r->argv && r->argv[i]; i++)
        free(r->argv[i]);
    free(r->argv);
}

/* Reserve a port and register the wrapper under it. Returns 0, or the exit
 * status with the reason printed (the holder of a conflict). */
static int claim(struct run *r, int start_daemon, int argc, char **argv)
{
    char err[PATH_MAX + 256];
    json_t *reply;
    int rc = ask(json_pack("{s:s, s:i}", "op", "reserve", "front", r->front), start_daemon, &reply,
                 err, sizeof err);
    if (rc == 0) {
        r->port = (int)json_integer_value(json_object_get(reply, "port"));
        json_decref(reply);
        if (r->port <= 0 || r->port > 65535 || build_argv(r, argc, argv) < 0) {
            snprintf(err, sizeof err, "the daemon reserved no usable port, or out of memory");
            rc = -1;
        } else {
            json_t *req = json_pack("{s:s, s:i, s:s, s:i, s:i, s:i, s:s, s:b, s:b}", "op",
                                    "register", "front", r->front, "worktree", r->worktree,
                                    "port", r->port, "pid", (int)getpid(), "ttl_ms", 0,
                                    "command", r->command, "ready", 0, "restart_on_stale",
                                    r->restart_on_stale);
            unsigned load;
            if (req && r->service)
                json_object_set_new(req, "service", json_string(r->service));
            if (req && host_load_pct(&load, NULL, NULL) == 0) /* to judge a verdict by later */
                json_object_set_new(req, "start_load", json_real(load / 100.0));
            if (req && r->log.path[0])
                json_object_set_new(req, "log", json_string(r->log.path));
            rc = ask(req, 0, &reply, err, sizeof err);
        }
    }
    if (rc < 0) {
        fprintf(stderr, "wtproxy: %s\n", err);
        return 1;
    }
    if (rc > 0)
        rc = cli_report(reply);
    json_decref(reply);
    return rc;
}

/* In the forked child: become CMD. Never returns. */
static void exec_cmd(const struct run *r, pid_t wrapper, const sigset_t *mask)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
    sigaction(SIGHUP, &dfl, NULL);
    sigaction(SIGPIPE, &dfl, NULL);
    sigaction(SIGUSR1, &dfl, NULL);
    cli_run_log_child(&r->log);
    sigprocmask(SIG_SETMASK, mask, NULL);
    /* Told of the wrapper's death; and if it died before the line above
     * took effect, nobody would tell us: stop now. */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != wrapper)
        _exit(1);
    char port[16];
    snprintf(port, sizeof port, "%d", r->port);
    if (setenv("PORT", port, 1) < 0 || setenv("WTPROXY_PORT", port, 1) < 0 ||
        setenv("WTPROXY_WORKTREE", r->worktree, 1) < 0 ||
        (r->service && setenv("WTPROXY_SERVICE", r->service, 1) < 0))
        _exit(1);
    execvp(r->argv[0], r->argv);
    int e = errno;
    fprintf(stderr, "wtproxy: cannot run %s: %s\n", r->argv[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
}

/* Start CMD with SIGINT/SIGHUP forwarded to it, SIGTERM stopping it. Signals stay
 * blocked across the fork so none is lost or forwarded to no one. Returns
 * its pid, or -1. */
static pid_t start_cmd(const struct run *r)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &old);
    struct sigaction sa = {.sa_sigaction = forward, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    /* No SA_RESTART: a sleep returns at once to stop the tree. */
    struct sigaction term = {.sa_handler = ask_stop};
    sigemptyset(&term.sa_mask);
    sigaction(SIGTERM, &term, NULL);
    pid_t self = getpid(), pid = fork();
    if (pid == 0)
        exec_cmd(r, self, &old);
    if (pid < 0)
        fprintf(stderr, "wtproxy: cannot start %s: fork: %s\n", r->argv[0], strerror(errno));
    child_pid = pid;
    sigprocmask(SIG_SETMASK, &old, NULL);
    return pid;
}

/* The worktree's folder name, as people (and Host routing) call it. */
static const char *folder_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* Tell the daemon CMD is ready and say so. A daemon that cannot be told
 * leaves the entry starting: warn, CMD keeps running. */
static void mark_ready(const struct run *r)
{
    char err[PATH_MAX + 256];
    json_t *reply;
    int rc = ask(json_pack("{s:s, s:i, s:s}", "op", "ready", "front", r->front, "worktree",
                           r->worktree),
                 0, &reply, err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "wtproxy: warning: could not mark %s ready: %s\n", r->worktree, err);
    else if (rc > 0)
        fprintf(stderr, "wtproxy: warning: could not mark %s ready: %s\n", r->worktree,
                json_string_value(json_object_get(reply, "message")));
    json_decref(reply);
    fprintf(stderr, "wtproxy: %s is ready on 127.0.0.1:%d (front :%d)\n",
            folder_name(r->worktree), r->port, r->front);
}

/* Remove the entry. not-found is fine: the daemon dropped it already (its
 * worktree went away). Anything else is a warning; the daemon drops the
 * entry anyway once it sees this wrapper's pid gone. */
static void release(const struct run *r)
{
    char err[PATH_MAX + 256];
    json_t *reply;
    int rc = ask(json_pack("{s:s, s:i, s:s}", "op", "unregister", "front", r->front, "worktree",
                           r->worktree),
                 0, &reply, err, sizeof err);
    const char *code = rc > 0 ? json_string_value(json_object_get(reply, "error")) : NULL;
    if (rc < 0)
        fprintf(stderr, "wtproxy: warning: could not unregister %s: %s\n", r->worktree, err);
    else if (rc > 0 && !(code && strcmp(code, "not-found") == 0))
        fprintf(stderr, "wtproxy: warning: could not unregister %s: %s\n", r->worktree,
                json_string_value(json_object_get(reply, "message")));
    json_decref(reply);
}

/* Stop CMD and start it again on the same port: the daemon holds requests
 * while the entry is starting. Returns the new pid, or -1. */
static pid_t restart(const struct run *r, pid_t pid)
{
    char err[PATH_MAX + 256];
    json_t *reply;
    char line[PATH_MAX + 128];
    snprintf(line, sizeof line, "wtproxy: the daemon asked to restart %s's server %s (its code "
             "changed and it did not reload it, or wtproxy restart): restarting it",
             folder_name(r->worktree), r->argv[0]);
    fprintf(stderr, "%s\n", line);
    cli_run_log_note(&r->log, line);
    if (ask(json_pack("{s:s, s:i, s:s}", "op", "restarting", "front", r->front, "worktree",
                      r->worktree),
            0, &reply, err, sizeof err) < 0)
        fprintf(stderr, "wtproxy: warning: could not tell the daemon: %s\n", err);
    json_decref(reply);
    cli_stop_tree(pid, WTP_RESTART_STOP_MS, NULL);
    return stop_asked ? 0 : start_cmd(r);
}

/* Whether CMD is ready: it listens, and with --health its path answers 2xx
 * or 3xx (a 4xx is a path that is not there yet or is misspelled: not
 * ready; the start then times out naming this log). Says once what it
 * waits for. */
static int is_ready(const struct run *r, pid_t self, int *said, struct host_diag *d,
                    unsigned poll_no)
{
    if (!cli_cmd_listens(r->port, self, d, poll_no))
        return 0;
    int status = r->health ? cli_http_status(r->port, r->health) : 200;
    if (status >= 200 && status < 400)
        return 1;
    if (*said != status)
        fprintf(stderr, "wtproxy: %s listens on 127.0.0.1:%d; GET %s answered %s%d, waiting for "
                "2xx or 3xx (--health)\n", folder_name(r->worktree), r->port, r->health,
                status < 0 ? "nothing in time " : "", status < 0 ? 0 : status);
    *said = status;
    return 0;
}

/* Wait for CMD, marking it ready when it is (is_ready), restarting it when
 * the daemon asks. Returns its exit status, 128+N when signal N killed it. */
static int watch(const struct run *r, pid_t pid, struct host_diag *d)
{
    struct timespec tick = {0, WTP_CLIENT_POLL_MS * 1000000L};
    pid_t self = getpid();
    int status, ready = 0, said = 0;
    unsigned polls = 0;
    for (;;) {
        if (stop_asked) {
            cli_stop_tree(pid, WTP_RESTART_STOP_MS, &status);
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        if (restart_asked) {
            restart_asked = 0;
            if ((pid = restart(r, pid)) < 0)
                return 1;
            if (pid == 0)
                return 128 + SIGTERM; /* stopped while restarting */
            ready = 0;
        }
        /* Polled, never a blocking wait: a signal that lands between the
         * looks above and the wait would otherwise wait for CMD's end. */
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            fprintf(stderr, "wtproxy: waitpid: %s\n", strerror(errno));
            return 1;
        }
        if (!ready && is_ready(r, self, &said, d, ++polls)) {
            ready = 1;
            mark_ready(r);
        } else {
            nanosleep(&tick, NULL);
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* watch, with a sock_diag socket for its polls (without one, each poll
 * reads the socket tables in full). */
static int supervise(const struct run *r, pid_t pid)
{
    char why[256];
    struct host_diag *d = host_diag_open(why, sizeof why);
    int rc = watch(r, pid, d);
    host_diag_close(d);
    return rc;
}

/* --health takes an absolute path without spaces or line breaks (it goes
 * into a request line as it is). */
static int health_path_bad(const char *path, char *err, size_t errlen)
{
    if (path[0] == '/' && !strpbrk(path, " \t\r\n") && strlen(path) < 256)
        return 0;
    snprintf(err, errlen, "--health takes a path such as /api/health, not \"%.64s\"", path);
    return 1;
}

int cli_run_main(int argc, char **argv)
{
    const char *frontv = NULL, *worktree = NULL;
    int no_autostart = 0, rest = argc;
    struct run r = {.front = WTP_DEFAULT_FRONT_PORT};
    const struct cli_opt opts[] = {{"front", &frontv, NULL},
                                   {"worktree", &worktree, NULL},
                                   {"restart-on-stale", NULL, &r.restart_on_stale},
                                   {"service", &r.service, NULL},
                                   {"health", &r.health, NULL},
                                   {"no-autostart", NULL, &no_autostart},
                                   {NULL, NULL, NULL}};
    char err[PATH_MAX + 256];
    int rc = cli_parse(argc, argv, opts, &rest, err, sizeof err);
    if (rc > 0)
        return CLI_HELP;
    if (rc == 0 && rest >= argc) {
        snprintf(err, sizeof err, "give the command to run after --, "
                 "e.g. wtproxy run -- python3 manage.py runserver {port}");
        rc = -1;
    }
    if (rc < 0 || (frontv && cli_port("front", frontv, &r.front, err, sizeof err) < 0) ||
        (r.service && !reg_service_name_ok(r.service, err, sizeof err)) ||
        (r.health && health_path_bad(r.health, err, sizeof err)) ||
        cli_serve_worktree(worktree, r.worktree, sizeof r.worktree, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy run: %s (see wtproxy run --help)\n", err);
        return 2;
    }
    /* Before registering: the daemon may ask for a restart from then on.
     * No SA_RESTART, so that a sleep returns to look. */
    struct sigaction usr1 = {.sa_handler = ask_restart};
    sigemptyset(&usr1.sa_mask);
    sigaction(SIGUSR1, &usr1, NULL);
    /* A reader of our output that went must not kill the wrapper. */
    signal(SIGPIPE, SIG_IGN);
    cli_run_log_open(&r.log, r.worktree, r.front, r.service);
    rc = claim(&r, cli_daemon_start_allowed(no_autostart), argc - rest, argv + rest);
    if (rc == 0) {
        pid_t pid = start_cmd(&r);
        rc = pid < 0 ? 1 : supervise(&r, pid);
        release(&r);
    }
    cli_run_log_close(&r.log);
    free_argv(&r);
    return rc;
}
