/* run.c - `wtproxy run -- CMD ARGS...`: reserve a port, register this
 * wrapper, run CMD on that port, mark it ready once CMD (or a descendant)
 * listens, and unregister when CMD exits, passing on its status.
 *
 * The wrapper's own pid is what gets registered: the daemon drops the
 * entry when the wrapper dies, however it dies. CMD stays in the wrapper's
 * process group, and its tree is stopped by the wrapper's keeper when the
 * wrapper alone dies (run_keeper.c).
 * The wrapper never execs itself away, so the cleanup below always runs
 * when it can. SIGUSR1 restarts CMD (the
 * daemon's gate finds it stale, or `wtproxy restart`); SIGTERM stops its
 * whole process tree (`wtproxy stop`). CMD's output also goes to a log
 * (run_log.c); the daemon's entry is run_reg.c's; a server on the key
 * that outlived its daemon is reused or replaced by run_orphan.c; a start
 * that failed while CMD lives on is read from its output by run_fail.c. This
 * file is the supervision: ready, restart, stop (also once its worktree
 * was removed), and main. */
#include "run.h"
#include "front.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "registry.h"

/* The daemon's gate found CMD stale (SIGUSR1): restart it. */
static volatile sig_atomic_t restart_asked;

static void ask_restart(int sig)
{
    (void)sig;
    restart_asked = 1;
}

/* SIGTERM (wtproxy stop, Playwright's end, systemd): stop CMD's whole
 * tree. Django's autoreloader serves from a child that a SIGTERM to CMD
 * alone would leave holding the port. Its sender is kept: the daemon's log
 * says who stopped the server. */
static volatile sig_atomic_t stop_asked, stop_sender;

static void ask_stop(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)ctx;
    stop_sender = si->si_code == SI_USER || si->si_code == SI_TKILL || si->si_code == SI_QUEUE
                      ? si->si_pid
                      : 0;
    stop_asked = 1;
}

/* Stop CMD and start it again on the same port: the daemon holds requests
 * while the entry is starting. Returns the new pid, or -1. */
static pid_t restart(struct cli_run *r, pid_t pid)
{
    char line[PATH_MAX + 4600], why[3000];
    cli_run_tell_restart(r, why, sizeof why);
    if (why[0]) /* a red test after a restart it did not see is traced to these files */
        snprintf(line, sizeof line,
                 "wtproxy: the daemon asked to restart %s's server, %s (it did not reload its "
                 "code): restarting it; %s",
                 cli_run_folder(r->worktree), cli_run_cmd_shown(r), why);
    else
        snprintf(line, sizeof line,
                 "wtproxy: the daemon asked to restart %s's server, %s (its code "
                 "changed and it did not reload it, or wtproxy restart): restarting it",
                 cli_run_folder(r->worktree), cli_run_cmd_shown(r));
    fprintf(stderr, "%s\n", line);
    cli_run_log_note(&r->log, line);
    cli_stop_tree(pid, WTP_RESTART_STOP_MS, NULL);
    cli_run_fail_restart(&r->log.fail);
    cli_run_port_restart(&r->wrong_port);
    return stop_asked ? 0 : cli_run_start_cmd(r, ask_stop);
}

/* CMD's port was taken before it bound it and r moved to another
 * (run_taken.c): stop what is left of CMD and start it there. Returns the
 * new pid, 0 when a stop was asked meanwhile, or -1. */
static pid_t start_moved(struct cli_run *r, pid_t pid)
{
    cli_stop_tree(pid, WTP_RESTART_STOP_MS, NULL);
    return stop_asked ? 0 : cli_run_start_cmd(r, ask_stop);
}

/* How often the wrapper looks whether its worktree was removed. */
#define RUN_GONE_LOOK_MS 1000

/* Why r's worktree is gone, or NULL while it stands. A removal and an
 * add at the same path within one look leave a .git there: only the
 * folder held since the start tells that CMD's is not the one at the path
 * (host_worktree_replaced). */
static const char *gone_why(const struct cli_run *r, char *buf, size_t len)
{
    char to[PATH_MAX];
    if (host_worktree_moved(r->pin, r->worktree, to, sizeof to)) {
        snprintf(buf, len,
                 "was moved to %s (git worktree move, or a folder above it renamed): its "
                 "server was started and registered at the old path; the next request from %s, "
                 "or `wtproxy run` there, starts one",
                 to, to);
        return buf;
    }
    if (host_worktree_removed(r->worktree))
        return "was removed (its .git or its gitdir is gone: git worktree remove)";
    if (host_worktree_replaced(r->pin, r->worktree))
        return "was removed, and the folder at its path now is another (git worktree remove, "
               "then add at the same path): its server runs in the deleted folder and serves no "
               "one; the next request or wtproxy run starts one in the new folder";
    return NULL;
}

/* Stop CMD's tree because its worktree went (why: gone_why's): no request
 * can be routed to it any more, and left running it held its port, its
 * memory and its database connections for ever (the daemon drops the
 * entry, so idle_stop never came). Returns the exit status, as for
 * `wtproxy stop`. */
static int stop_gone(struct cli_run *r, pid_t pid, const char *why)
{
    char line[4 * PATH_MAX + 1536]; /* why holds two paths */
    int status;
    snprintf(line, sizeof line, "wtproxy: %s %s: stopping its server, %s", r->worktree, why,
             cli_run_cmd_shown(r));
    snprintf(r->gone, sizeof r->gone, "%s", why);
    fprintf(stderr, "%s\n", line);
    cli_run_log_note(&r->log, line); /* its log says why: `wtproxy logs --prune` removes it later */
    cli_stop_tree(pid, WTP_RESTART_STOP_MS, &status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The socket CMD was last seen listening on, and since when. */
struct listener {
    unsigned long inode;
    long long since_ms;
};

/* How long CMD must listen on one socket to be called ready: Vite 8 first
 * listens on 0.0.0.0 and :: and closes at once, to see whether the port
 * is free, then listens for real. Seen on its probe, CMD was called
 * ready, and a request in between was refused (CI, test 145). A probe
 * lives a few milliseconds; this is two polls and more. */
#define RUN_STABLE_MS 100

/* Whether CMD is ready: it listens, on the same socket for RUN_STABLE_MS
 * (*l), and with --health its path answers 2xx or 3xx (a 4xx is a path
 * that is not there yet or is misspelled: not ready; the start then times
 * out naming this log). Says once what it waits for. */
static int is_ready(const struct cli_run *r, pid_t self, int *said, struct host_diag *d,
                    unsigned poll_no, struct listener *l)
{
    unsigned long inode;
    long long now = host_mono_ms();
    int listens = cli_cmd_listens(r->port, self, d, poll_no, &inode);
    if (!listens || inode != l->inode)
        *l = (struct listener){listens ? inode : 0, now};
    /* inode 0: found by a full read of the socket tables, seen seldom */
    if (!listens || (inode && now - l->since_ms < RUN_STABLE_MS))
        return 0;
    char body[200] = "";
    int status = r->health ? cli_http_status(r->port, r->health, body, sizeof body) : 200;
    if (status >= 200 && status < 400)
        return 1;
    char got[32] = "nothing in time", answer[320];
    if (status >= 0)
        snprintf(got, sizeof got, "%d", status);
    if (*said != status) {
        snprintf(answer, sizeof answer, "GET %s answered %s%s%s%s", r->health, got,
                 body[0] ? " (\"" : "", body, body[0] ? "\")" : "");
        fprintf(stderr,
                "wtproxy: %s listens on 127.0.0.1:%d; %s, waiting for 2xx or 3xx (--health)\n",
                cli_run_folder(r->worktree), r->port, answer);
        cli_run_tell_not_ready(r, answer); /* a start that times out says so */
    }
    *said = status;
    return 0;
}

/* Wait for CMD, marking it ready when it is (is_ready), restarting it when
 * the daemon asks, stopping it when its worktree was removed. Returns its exit status, 128+N when
 * signal N killed it. */
static int watch(struct cli_run *r, pid_t pid, struct host_diag *d)
{
    struct timespec tick = {0, WTP_CLIENT_POLL_MS * 1000000L};
    pid_t self = getpid();
    int status, ready = 0, said = 0;
    struct listener listener = {0, 0};
    char why[2 * PATH_MAX + 256];
    unsigned polls = 0, retry = WTP_RUN_READY_RETRY_MS / WTP_CLIENT_POLL_MS, looks = 0;
    for (;;) {
        if (stop_asked) {
            cli_stop_tree(pid, WTP_RESTART_STOP_MS, &status);
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        const char *gone = ++looks % (RUN_GONE_LOOK_MS / WTP_CLIENT_POLL_MS) == 0
                               ? gone_why(r, why, sizeof why)
                               : NULL;
        if (gone)
            return stop_gone(r, pid, gone);
        if (restart_asked) {
            restart_asked = 0;
            if ((pid = restart(r, pid)) < 0)
                return 1;
            if (pid == 0)
                return 128 + SIGTERM; /* stopped while restarting */
            ready = 0;
            said = 0; /* the new one's --health answers are told anew */
        }
        /* Polled, never a blocking wait: a signal that lands between the
         * looks above and the wait would otherwise wait for CMD's end.
         * Orphans the wrapper adopted are reaped here too. */
        pid_t w = cli_tree_reap(pid, &status);
        if (w == pid) {
            /* What it left behind ends with it (a helper it put in the
             * background, a server whose npm died): unregistered, it ran
             * on, holding its port against the next start. */
            cli_stop_tree(pid, WTP_RESTART_STOP_MS, NULL);
            if (!ready && !stop_asked && !cli_run_cmd_interrupted() && cli_run_taken(r, 1)) {
                if ((pid = start_moved(r, pid)) <= 0)
                    return pid < 0 ? 1 : 128 + SIGTERM;
                continue;
            }
            /* by itself, not interrupted: its last words go to the daemon */
            r->exited = !cli_run_cmd_interrupted();
            r->exit_status = status;
            r->cmd_pid = pid;
            break;
        }
        if (w < 0) {
            fprintf(stderr, "wtproxy: waitpid: %s\n", strerror(errno));
            return 1;
        }
        if (!ready && !cli_run_fail_held(r) && is_ready(r, self, &said, d, ++polls, &listener)) {
            ready = 1;
            r->moves = 0;
            cli_run_fail_serving(&r->log.fail);
            /* Before the ready line: from that line on its server may be
             * asked and killed, and one killed before the take is no holder. */
            cli_run_died_take(r, d);
            cli_run_mark_ready(r, 0);
        } else if (r->untold && ++polls % retry == 0) {
            /* The daemon died meanwhile: the one started next reloads the
             * entry as its state file had it (starting, failed or ready),
             * and must hear what changed since. */
            cli_run_retell(r);
        } else {
            /* a failed start it lives on after, or a ready one an edit broke */
            if (cli_run_fail_poll(r, ready) || (ready && cli_run_died_poll(r, d)))
                ready = 0; /* it says ready again once it listens */
            else if (!ready && cli_run_port_poll(r) == 2 && (pid = start_moved(r, pid)) <= 0)
                return pid < 0 ? 1 : 128 + SIGTERM; /* it went elsewhere, its port taken */
            nanosleep(&tick, NULL);
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* watch, with a sock_diag socket for its polls (without one, each poll
 * reads the socket tables in full). */
static int supervise(struct cli_run *r, pid_t pid)
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
    struct cli_run r = {.front = WTP_DEFAULT_FRONT_PORT, .keeper = -1, .pin = -1};
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
        snprintf(err, sizeof err,
                 "give the command to run after --, "
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
    /* Without --front: from the .wtproxy, which may refuse (several fronts,
     * CMD none's start) before anything starts. */
    struct cli_server_cmd self = {"run", argc - 1, argv + 1, argc - rest, argv + rest, ""};
    if (!frontv && (r.front = cli_server_front(r.worktree, r.service, &self,
                                               cli_daemon_start_allowed(no_autostart))) < 0)
        return 2;
    if (self.service[0])
        r.service = self.service;
    if (frontv)
        cli_daemon_listen_also(r.front);         /* its callers call there */
    r.keeper = cli_run_keeper_start(r.worktree); /* before the log's thread */
    cli_run_log_open(&r.log, r.worktree, r.front, r.service);
    for (int i = rest; i < argc && !r.log.fail.bun; i++) /* `bun --hot`, sh -c "... bun ..." */
        r.log.fail.bun = cli_run_fail_bun(argv[i]);
    cli_run_build_rerun(&r, argc - rest, argv + rest);
    rc = cli_run_claim(&r, cli_daemon_start_allowed(no_autostart), argc - rest, argv + rest);
    if (rc == 0 && r.reused) {
        rc = cli_run_follow(&r); /* its server, not ours: no release */
        cli_run_log_close(&r.log);
    } else if (rc == 0) {
        cli_tree_adopt();
        r.pin = host_worktree_pin(r.worktree); /* after the keeper's fork: it holds none */
        pid_t pid = cli_run_start_cmd(&r, ask_stop);
        rc = pid < 0 ? 1 : supervise(&r, pid);
        r.stopped = stop_asked;
        r.stopped_by = stop_sender;
        if (r.pin >= 0)
            close(r.pin);
        /* Closed first: CMD's last output drained into the tail, which
         * the release tells the daemon when CMD exited by itself; then
         * the log's last line says how it ended. */
        char how[REG_UNREGISTER_WHY_MAX];
        cli_run_log_end(&r.log, cli_run_end_words(&r, "the server", how, sizeof how) ? how : NULL);
        cli_run_release(&r);
    } else {
        cli_run_log_close(&r.log);
    }
    cli_run_free_argv(&r);
    return rc;
}
