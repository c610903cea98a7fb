/* run.h - what the parts of `wtproxy run` share: the wrapper's state, and
 * the calls run.c (the supervision: ready, restart, stop, main) makes into
 * run_cmd.c (CMD's process: its argv, fork, exec, signals) and run_reg.c
 * (the daemon's entry: reserve, register, ready, restarting, unregister).
 * Internal to cli/. */
#ifndef WTP_CLI_RUN_H
#define WTP_CLI_RUN_H

#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/types.h>

#include "cli.h"
#include "registry.h"

/* What the daemon is yet to hear of CMD: a tell it could not be reached
 * for (it died; the one started next loaded the entry as its state file
 * had it), told again until a daemon answers (cli_run_retell). */
enum cli_run_untold {
    CLI_RUN_TOLD,
    CLI_RUN_UNTOLD_READY,
    CLI_RUN_UNTOLD_RESTARTING,
    CLI_RUN_UNTOLD_FAILED,
};

/* The processes of CMD's tree that held its listening socket when it was
 * last seen serving (run_died.c). */
#define CLI_RUN_HOLDERS_MAX 16
struct cli_run_holders {
    size_t n;
    pid_t pid[CLI_RUN_HOLDERS_MAX];
    unsigned long long start[CLI_RUN_HOLDERS_MAX];
    long long next_ms; /* the next look */
    long long dead_ms; /* since when one is seen dead, the port listening; 0 none */
    size_t ntree;      /* the tree then: a process new since is a new server starting */
    pid_t tree[CLI_TREE_MAX];
    pid_t ended; /* the last holder seen gone with nothing listening, 0 none: for run_fail.c */
};

/* A server listening on another port than its own (run_port.c). */
struct cli_run_port {
    long long since_ms; /* when it was first seen listening elsewhere; 0 not */
    long long next_ms;  /* the next look */
    int told;           /* told to the daemon since its (re)start */
};

struct cli_run {
    int front, port;
    int restart_on_stale;
    const char *service; /* --service, or NULL */
    const char *health;  /* --health /PATH: what must answer 2xx/3xx, or NULL */
    char worktree[PATH_MAX];
    char **argv; /* CMD ARGS with {port} substituted, NULL-terminated */
    char **args; /* CMD ARGS as given ({port} in them), nargs of them */
    int nargs;
    char command[1024];       /* argv joined, for people */
    char shell_command[1024]; /* CMD ARGS as given, each word quoted for a shell; "" too long */
    char rerun[1024];         /* this `wtproxy run` line, {port} as given: what starts it again */
    struct cli_run_log log;
    /* A server that outlived its daemon, reused instead of CMD (run_orphan.c):
     * its wrapper's pid and start time; 0 when CMD runs. */
    pid_t reused;
    unsigned long long reused_start;
    enum cli_run_untold untold;
    /* Its failure as last told (cli_run_tell_failed), for a retell. */
    char failed_lines[REG_START_FAILED_MAX];
    const char *failed_reloader;
    enum reg_failed_when failed_when;
    struct cli_run_port wrong_port;
    struct cli_run_holders holders;
    int moves;  /* starts on another port since it was last ready (run_taken.c) */
    int exited; /* CMD ended by itself (not stopped): exit_status is its wait status */
    int exit_status;
    /* How its end came, for the daemon's log and the server's own
     * (cli_run_end_words): CMD's pid when it exited; whether a SIGTERM stopped it, and
     * its sender (0 unknown); why its worktree went when that stopped it
     * ("" not). */
    pid_t cmd_pid;
    int stopped;
    pid_t stopped_by;
    char gone[2 * PATH_MAX + 256];
    int keeper; /* the pipe to run_keeper.c's process, -1 none */
    int pin;    /* the worktree's folder held open (host_worktree_pin), -1 none */
};

/* The worktree's folder name, as people (and Host routing) call it. */
static inline const char *cli_run_folder(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* --- run_keeper.c --- */

/* Fork the keeper, which stops the tree of the last CMD told when the
 * wrapper dies without doing it. Call before any thread starts. Returns
 * the pipe to tell it by, or -1 (none: CMD gets PR_SET_PDEATHSIG). */
int cli_run_keeper_start(const char *worktree);

/* Tell the keeper (-1: none) that CMD, just forked, is cmd. */
void cli_run_keeper_tell(int keeper, pid_t cmd);

/* --- run_cmd.c --- */

/* Fill r->argv and r->command from CMD ARGS. Returns 0 or -1 (no memory). */
int cli_run_build_argv(struct cli_run *r, int argc, char **argv);

void cli_run_free_argv(struct cli_run *r);

/* Fill r->shell_command with CMD ARGS (argc, argv) as given, each quoted
 * for a POSIX shell where it needs it, and r->rerun: `wtproxy run` with r's
 * front and flags, then that, so that a message may print it as the
 * command that starts it again. */
void cli_run_build_rerun(struct cli_run *r, int argc, char **argv);

/* Start CMD with SIGINT/SIGHUP forwarded to it, SIGTERM to on_term (with
 * its sender, SA_SIGINFO). Signals stay blocked across the fork so none is
 * lost or forwarded to no one. Returns its pid, or -1. */
pid_t cli_run_start_cmd(const struct cli_run *r, void (*on_term)(int, siginfo_t *, void *));

/* CMD as its author wrote it, for people: the START of the daemon's
 * `/bin/sh -c START` (a .wtproxy's server), else CMD ARGS. */
const char *cli_run_cmd_shown(const struct cli_run *r);
/* Whether the wrapper got SIGINT or SIGHUP (Ctrl-C, a closed terminal),
 * which CMD got too: its end was asked for, not a failure to tell. */
int cli_run_cmd_interrupted(void);

/* --- run_reg.c --- */

/* Reserve a port and register the wrapper under it, CMD's argv built in
 * between (it names the port). Returns 0, or the exit status with the
 * reason printed (the holder of a conflict). */
int cli_run_claim(struct cli_run *r, int start_daemon, int argc, char **argv);

/* Tell the daemon CMD is ready; the first time (again 0) say so. A
 * daemon that cannot be reached leaves the entry starting: the first
 * time warns, and r->untold has the caller ask again (a daemon started
 * after a crash has reloaded the entry as starting). */
void cli_run_mark_ready(struct cli_run *r, int again);

/* Tell the daemon what CMD's --health path answered, other than 2xx or
 * 3xx, while CMD listens (the `not-ready` op): a start that times out
 * says it, not "did not listen, or". Unanswered, nothing is said. */
void cli_run_tell_not_ready(const struct cli_run *r, const char *said);

/* Tell the daemon CMD is restarting, so that it holds requests meanwhile;
 * one that cannot be told gets a warning, and r->untold has it told again. */
void cli_run_tell_restarting(struct cli_run *r);

/* The same, for a restart the daemon asked for (SIGUSR1): why gets what
 * the daemon's reply says made it ask (the files that changed), "" when
 * it does not say (a `wtproxy restart`, an older daemon). */
void cli_run_tell_restart(struct cli_run *r, char *why, size_t whylen);

/* Say line (a "wtproxy: " sentence of the wrapper's own about CMD's
 * failure) where the user reads, then tell the daemon (below) with it
 * first, whole, and CMD's last lines after it as far as they fit: the
 * reader of the 503 gets ours before the server's (run_port.c,
 * run_died.c). */
void cli_run_tell_said(struct cli_run *r, const char *line, const char *reloader,
                       enum reg_failed_when when);

/* Tell the daemon CMD failed and lives on (run_fail.c, run_port.c), with
 * its last lines and what restarts it: at its start, on another port than
 * its own, or (REG_FAILED_EDIT) after it was ready, an edit having broken
 * it, told as a restart first (the entry starting, its verdict dropped).
 * One that cannot be told gets a warning, and r->untold has it told
 * again. */
void cli_run_tell_failed(struct cli_run *r, const char *lines, const char *reloader,
                         enum reg_failed_when when);

/* Tell a daemon what r->untold says it has not heard, silently while
 * none answers; says so once one does. */
void cli_run_retell(struct cli_run *r);

/* Remove the entry; when CMD exited by itself (r->exited), with its last
 * lines and exit status, which the next request's 503 quotes. not-found
 * is fine: the daemon dropped it already (its worktree went away).
 * Anything else is a warning; the daemon drops the entry anyway once it
 * sees this wrapper's pid gone. */
void cli_run_release(struct cli_run *r);

/* --- run_end.c --- */
/* How CMD ended, as far as the wrapper saw it, into out: it exited by
 * itself (its pid, its command and host_exit_words' words), a SIGTERM
 * stopped it (and whose), its worktree went, or SIGINT/SIGHUP interrupted
 * it; subject ("its server", "the server") begins the sentence. Returns 0
 * with out "" when the wrapper knows nothing to say (it gave up). */
int cli_run_end_words(const struct cli_run *r, const char *subject, char *out, size_t len);
/* --- run_fail.c --- */

/* The fix outside the app's files CMD's last lines call for, into fix:
 * this wtproxy's /__whoami package linked where the app lacks it, the
 * app's own dependencies, declared and not installed in CMD's folder, or
 * its PostgreSQL server started (reg_db_refused). 0: none of them. */
int cli_run_install_fix(const struct cli_run *r, const char *lines, char *fix, size_t len);

/* Before the relay starts. */
void cli_run_fail_init(struct cli_run_fail *f);

/* Whether the command line cmd runs Bun (a word bun or bunx, or a path
 * ending in /bun): Bun's own failed-start marker then counts. */
int cli_run_fail_bun(const char *cmd);

/* The relay read buf's n bytes of CMD's output. */
void cli_run_fail_saw(struct cli_run_fail *f, const char *buf, size_t n);

/* The wrapper starts CMD again: what it printed before is not this start's. */
void cli_run_fail_restart(struct cli_run_fail *f);

/* Every poll: a failed start that its output shows is said and told to
 * the daemon once; output after it withdraws it (the `restarting` op).
 * While CMD is ready (ready 1), only once nothing answers on its port
 * (none listens, or one listens that none accepts for), as a restart that
 * failed: returns 1 then, and CMD is starting again. */
int cli_run_fail_poll(struct cli_run *r, int ready);

/* Whether its port's listener does not say it is ready: the failure was
 * told while that port listened, held by a reloader whose server died
 * (uvicorn --reload), and no output since says a new server starts. */
int cli_run_fail_held(const struct cli_run *r);

/* A failure told by another part (run_died.c) while the port listens:
 * held like failed_when_ready's, so that the listener is not taken for a
 * ready server, and withdrawn as it is, by output after it (its reloader
 * saw a change and starts a new server) or a restart. */
void cli_run_fail_hold(struct cli_run *r);

/* Its server listens (ready, or a new process holds its socket after its
 * reloader started it anew): a failure after this is an edit's only when
 * its reloader says a file changed after it. */
void cli_run_fail_serving(struct cli_run_fail *f);

/* CMD's output's last lines (those a failed start is told with), once
 * the relay is done. */
void cli_run_fail_last(struct cli_run_fail *f, char *out, size_t len);

/* Reserve another port and move the daemon's entry there, starting:
 * r->port, r->argv and r->command become the new port's (run_taken.c).
 * Returns 0, or -1 with err (the daemon did not answer, or has no port
 * left). */
int cli_run_move(struct cli_run *r, char *err, size_t errlen);

/* --- run_taken.c --- */

/* CMD, not ready, exited (exited 1) or listens elsewhere only: when
 * another process listens on its port, which was taken between the
 * daemon's reservation and CMD's bind, say so and move r to another port
 * (cli_run_move), a few times at most between two readies. Returns 1 when
 * CMD is to start again, on r->port; 0 otherwise, said nothing. */
int cli_run_taken(struct cli_run *r, int exited);

/* --- run_orphan.c --- */

/* What the register's conflict holder is to this run (cli_run_orphan). */
enum cli_run_holder {
    CLI_RUN_HOLDER_KEPT,   /* a holder of this daemon's: report the conflict */
    CLI_RUN_HOLDER_REUSED, /* a verified server that outlived its daemon: r->reused is set */
    CLI_RUN_HOLDER_GONE,   /* it was stopped, or exited: register again */
};

/* holder is the conflict's: when it outlived the daemon it registered
 * with ("restored"), wait for the daemon's /__whoami verdict on it, then
 * reuse it when verified, else stop it through its wrapper. Says what it
 * did. */
enum cli_run_holder cli_run_orphan(struct cli_run *r, json_t *holder);

/* Stay while the reused server's wrapper runs (a test runner's webServer
 * command must not end while its server serves); a signal ends only this
 * command. Returns the exit status, 0. */
int cli_run_follow(const struct cli_run *r);

/* --- run_died.c --- */

/* CMD was just marked ready: take the processes of its tree that hold its
 * listening socket (d: a sock_diag handle, may be NULL). */
void cli_run_died_take(struct cli_run *r, struct host_diag *d);

/* While CMD is ready, every few polls: when a process that held its
 * listening socket died and the port still listens (a reloader holds it)
 * with nobody answering there, say so and tell the daemon ("when":
 * "died"). Returns 1 when told: CMD is not ready any more. */
int cli_run_died_poll(struct cli_run *r, struct host_diag *d);

/* The process that held CMD's listening socket when it was ready and no
 * longer runs, 0 none known. */
pid_t cli_run_died_ended(const struct cli_run *r);

/* --- run_port.c --- */

/* While CMD is not ready: whether its process tree listens on another
 * port, for long enough, and not on its own; then said, and told to the
 * daemon as a failed start ("when": "port"), once per start. Returns 1
 * when it told; 2 when another process had taken its port and r moved
 * (cli_run_taken): CMD is to start again, on r->port. */
int cli_run_port_poll(struct cli_run *r);

/* Forget what was seen: CMD starts again. */
void cli_run_port_restart(struct cli_run_port *p);

#endif
