/* reg_client.h - internal to the command line (reg_cli.c, reg_ls.c,
 * reg_run.c, reg_client.c): talking to the daemon and the helpers the
 * subcommands share. Nothing outside registry/ includes it. */
#ifndef WTP_REG_CLIENT_H
#define WTP_REG_CLIENT_H

#include <jansson.h>
#include <stddef.h>

#define WTP_CLIENT_REPLY_MAX (1024 * 1024) /* a list of thousands of entries fits */
#define WTP_CLIENT_TIMEOUT_MS 10000        /* one request and its reply */
#define WTP_AUTOSTART_WAIT_MS 5000         /* for a started daemon to answer ping */
#define WTP_CLIENT_POLL_MS 50              /* autostart and readiness checks */
#define WTP_DEFAULT_FRONT 8000

/* --- reg_client.c --- */

/* Whether a daemon may be started: not when no_autostart_flag is set nor
 * when $WTPROXY_NO_AUTOSTART is 1. */
int reg_client_may_autostart(int no_autostart_flag);

/* Send req (one JSON object) to the daemon and read its one-line reply.
 * When no daemon listens and autostart is set, start one first (saying so
 * on stderr). Returns 0 with *reply (a new reference; "ok" may be false),
 * or -1 with a message in err: no daemon (naming the command that starts
 * one), a timeout, or a reply that is not a JSON object. */
int reg_client_call(json_t *req, int autostart, json_t **reply, char *err, size_t errlen);

/* --- reg_cli.c: shared by the subcommands --- */

struct reg_opt {
    const char *name;  /* "port" for --port */
    const char **val;  /* where the value goes; NULL for a switch */
    int *on;           /* set to 1 for a switch */
};

/* Parse argv[1..] (argv[0] is the subcommand) against opts: --NAME VALUE,
 * --NAME=VALUE and switches. With rest NULL no positional argument is
 * allowed; else parsing stops at "--" (skipped) or the first positional
 * argument and *rest is its index (argc when none). Returns 0, 1 for
 * -h/--help, or -1 with a message in err. */
int reg_cli_parse(int argc, char **argv, const struct reg_opt *opts, int *rest, char *err,
                  size_t errlen);

/* A TCP port 1-65535 from a flag's value. Returns 0, or -1 with err. */
int reg_cli_port(const char *flag, const char *v, int *port, char *err, size_t errlen);

/* The worktree an existing entry is named by (unregister, claim, db):
 * dir when given, as is (realpath: the worktree may be gone since), else
 * the worktree of the cwd (host_worktree_of). Returns 0, or -1 with a
 * message in err that suggests --worktree. */
int reg_cli_worktree(const char *dir, char *out, size_t outlen, char *err, size_t errlen);

/* The worktree a server is registered for (run, register): the worktree
 * of dir, or of the cwd, by the same rule the daemon places callers with
 * (host_worktree_of), so that nothing is registered where no caller can
 * be placed. dir must be the worktree's top folder. A moved worktree is
 * accepted with a note on stderr. Returns 0, or -1 with the reason in err
 * (a pruned worktree, a broken .git, no worktree at all). */
int reg_cli_serve_worktree(const char *dir, char *out, size_t outlen, char *err, size_t errlen);

/* Print a daemon's error reply as one or two lines on stderr: what
 * happened and the command that fixes it (the holder of a conflict, with
 * its pid, command, age and worktree). Returns the exit status, 1. */
int reg_cli_report(json_t *reply);

/* A duration flag's value: a number with a unit (ms, s, m, h, d). Returns
 * 0 with *ms, or -1 with err naming --flag. */
int reg_cli_duration(const char *flag, const char *v, long long *ms, char *err, size_t errlen);

/* "5s", "3m", "2h", "4d": a duration for people. */
void reg_cli_age(long long ms, char *buf, size_t len);

/* Unix time in ms. */
long long reg_cli_now_ms(void);

/* --- the subcommands --- */

int reg_run_main(int argc, char **argv); /* reg_run.c */

#define WTP_RESTART_STOP_MS 5000 /* a stale server's SIGTERM, before SIGKILL */

/* SIGTERM root and all its descendants, SIGKILL what still runs after
 * grace_ms, and reap root (reg_stop.c). Returns 0, -1 out of memory. */
int reg_stop_tree(pid_t root, unsigned grace_ms);
int reg_ls_main(int argc, char **argv);  /* reg_ls.c */
int reg_dashboard_main(int argc, char **argv); /* reg_dashboard.c */
int reg_claim_main(int argc, char **argv);  /* reg_claim_cli.c */
int reg_release_main(int argc, char **argv);
int reg_leases_main(int argc, char **argv);

#endif
