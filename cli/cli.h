/* cli.h - the command line (`wtproxy CMD ...`): the subcommands the table
 * in main.c dispatches to, and what they share: flags, the control-socket
 * client, the daemon start, the worktree of the current folder. Nothing
 * below cli/ includes it: the daemon's side (registry/, proxy/) computes,
 * the command line prints.
 *
 * A subcommand's handler takes argv with argv[0] its name and returns its
 * exit status (listed in the table), or CLI_HELP / CLI_USAGE for main to
 * print the table's help text: so `wtproxy CMD --help` and `wtproxy help
 * CMD` print the same text. */
#ifndef WTP_CLI_H
#define WTP_CLI_H

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "host.h"
#include "proxy_limits.h" /* WTP_DEFAULT_FRONT_PORT, the daemon's default too */

#define WTP_CLIENT_REPLY_MAX (1024 * 1024)   /* a list of thousands of entries fits */
#define WTP_CLIENT_TIMEOUT_MS 10000          /* one request and its reply */
#define CLI_LOAD_TIMEOUT_MS (10 * 60 * 1000) /* claim --max-load waits this long at most */
#define WTP_DAEMON_START_WAIT_MS 5000        /* for a started daemon to answer ping */
#define WTP_DAEMON_STOP_WAIT_MS 10000        /* for a stopping daemon to exit */
#define WTP_CLIENT_POLL_MS 50                /* daemon start and readiness checks */
#define WTP_RESTART_STOP_MS 5000             /* a stale server's SIGTERM, before SIGKILL */
#define WTP_RUN_READY_RETRY_MS 1000          /* a `ready` no daemon answered, asked again */

/* What a handler returns instead of an exit status: main prints the
 * command's help on stdout and exits 0 (CLI_HELP), or on stderr and exits
 * 2 (CLI_USAGE, a call too incomplete for a one-line complaint). */
#define CLI_HELP (-1)
#define CLI_USAGE (-2)

/* --- client.c: the control socket --- */

/* Whether a daemon may be started: not when no_autostart_flag is set nor
 * when $WTPROXY_NO_AUTOSTART is 1. */
int cli_daemon_start_allowed(int no_autostart_flag);

/* Send req (one JSON object) to the daemon and read its one-line reply.
 * When no daemon listens and start_daemon is set, start one first (saying
 * so on stderr). Returns 0 with *reply (a new reference; "ok" may be
 * false), CLI_NO_DAEMON with err naming the command that starts one (none
 * listens, and none was started), or -1 with a message in err: a failed
 * start, a timeout, a reply that is not a JSON object. */
#define CLI_NO_DAEMON (-2)
/* Where that err's start command begins: a caller that prints its own
 * start (doctor's, with the ports it checks) cuts err there. */
#define CLI_NO_DAEMON_START "; start one, in the background: "
int cli_call(json_t *req, int start_daemon, json_t **reply, char *err, size_t errlen);

/* --- daemon_hidden.c: a daemon this process cannot reach --- */

/* When path, the control socket this process looks for (from: why there,
 * reg_control_where's), does not exist here, while one of the n ports is
 * held by a live `wtproxy serve` of this user and binary listening on
 * another control socket (a sandbox's own /tmp hides it, or
 * WTPROXY_CONTROL names another path): the sentence naming that daemon and
 * its socket into said, and the way to reach it into fix, never its kill.
 * Returns 1 when so, else 0. Reads /proc: slow like host_port_owner_find. */
int cli_daemon_hidden(const char *path, const char *from, const int *ports, int n, char *said,
                      size_t slen, char *fix, size_t flen);

/* --- daemon_env.c: the environment of a daemon the CLI starts --- */

/* What a started daemon gets: env, an environ-style array (pointers into
 * environ, and own's strings), and line, the one line its log starts with
 * (who started it, what was dropped by name). */
struct cli_daemon_env {
    char **env;
    char **own;
    char line[2 * PATH_MAX + 2048];
};

/* Fill d from this process's environment, by the allow-list in
 * daemon_env.c. Returns 0, or -1 with err; free d with cli_daemon_env_free
 * either way. */
int cli_daemon_env(struct cli_daemon_env *d, char *err, size_t errlen);
void cli_daemon_env_free(struct cli_daemon_env *d);

/* --- daemon_listen.c: where a daemon the CLI starts listens --- */

/* The folder whose worktree's .wtproxy a started daemon takes its ports
 * from: "." unless set (the MCP session's worktree). */
void cli_daemon_listen_for(const char *dir);
/* A front the starting command was given (`run --front`, `register
 * --front`): the started daemon listens on it too, where its server's
 * callers will call. */
void cli_daemon_listen_also(int front);
/* The fronts that .wtproxy declares, the one given and those of the state
 * file's live registrations (the ones the daemon adopts), each once, into
 * ports (WTFILE_MAX_SERVICES + 1); 0 when there are none or WTPROXY_CONFIG
 * names a config with listen lines: the daemon's default or that config
 * decide. */
int cli_daemon_listen(int *ports);
/* The `wtproxy serve` that owns ports, the fronts of the registrations it
 * adopts (cli_state_fronts) and every port the running daemon (ping, NULL
 * for none) owns, into out, so that a restart drops no one's front; its
 * default port only when it is one of those, nothing else is named, or
 * WTPROXY_CONFIG's listen lines chose it. Bare ports: 127.0.0.1 and ::1,
 * as a server on `localhost` may hold ::1 alone and take the browser's
 * requests from wtproxy. Started in the background into the log a daemon
 * the CLI starts writes (as the CLI's own "no daemon answers" says):
 * pasted in an agent's shell, a foreground `wtproxy serve` never
 * returns. */
void cli_serve_cmd(json_t *ping, const int *ports, int n, char *out, size_t outlen);

/* daemon_flags.c: the arguments the daemon ping answered for was started
 * with after `serve` (ping NULL: the daemon that last wrote the state
 * file, cli_state_daemon), but where it listens (and its --config with
 * CLI_DROP_CONFIG, its --control with CLI_DROP_CONTROL), a --registry's
 * password masked, each a word for /bin/sh with a space before it, into
 * out; then `--registry URI` of the registry that daemon ran on (or the
 * one before it ran on, ping's registry_before) when its arguments do not
 * name one and this shell configures none. "" when there are none or its
 * cmdline cannot be read (another user's). */
#define CLI_DROP_CONFIG 1
#define CLI_DROP_CONTROL 2
void cli_daemon_flags(json_t *ping, int drop, char *out, size_t len);
/* The same as serve's flags, " --listen 8420 --listen 8421", else "". */
void cli_daemon_listen_flags(char *out, size_t len);

/* --- builds.c: the daemon's and the wrappers' builds against this one's --- */

/* Whether the daemon of ping (its reply) is another build than this
 * command, or runs a binary replaced on disk since it started (an install
 * over it): 1, with "the daemon (pid N) is wtproxy BUILD, another build
 * than this command's BUILD: it behaves as that build until it is
 * restarted" into said; 0 when both are one build. */
int cli_daemon_other_build(json_t *ping, char *said, size_t len);
/* Whether entry e (of op list) is a `wtproxy run` wrapper on this machine
 * whose binary was replaced on disk since it started: 1, with that
 * binary's path into exe; else 0. An older wrapper lacks the guarantees
 * of a newer one, and `wtproxy restart` restarts its server, not it. */
int cli_wrapper_replaced(json_t *e, char *exe, size_t len);

/* --- state_fronts.c: the fronts a started daemon's adopted servers need --- */

/* Add to ports[0, n) the front of each registration in the state file a
 * daemon started from this shell reads whose server still runs, each once,
 * up to max ports in all. Returns the new count (n when there is no file). */
int cli_state_fronts(int *ports, int n, int max);

/* What the daemon that last wrote that state file ran with (a new
 * reference, NULL when none): {"registry" (masked), "flags"}, as
 * reg_store_daemon reads it. */
json_t *cli_state_daemon(void);

/* Whether one of a ping reply's listen addresses is on port front: 1 yes,
 * 0 no, -1 when it names none (not open yet). */
int cli_listens_on(json_t *ping, int front);

/* The daemon's registrations (op list) as a local table, for commands that
 * reason about them (wtproxy why, wtproxy db). NULL with err when no
 * daemon answers (none is started). */
struct reg_table *cli_table(char *err, size_t errlen);
/* The same, and into *exited (a new array; exited may be NULL) the
 * servers that exited lately, as `wtproxy ls` says them (cli_exited_of). */
struct reg_table *cli_table_exited(char *err, size_t errlen, json_t **exited);

/* --- args.c: flags, shared by the subcommands --- */

struct cli_opt {
    const char *name; /* "port" for --port */
    const char **val; /* where the value goes; NULL for a switch */
    int *on;          /* set to 1 for a switch */
};

/* Parse argv[1..] (argv[0] is the subcommand) against opts: --NAME VALUE,
 * --NAME=VALUE and switches. With rest NULL no positional argument is
 * allowed; else parsing stops at "--" (skipped) or the first positional
 * argument and *rest is its index (argc when none). Returns 0, 1 for
 * -h/--help, or -1 with a message in err. */
int cli_parse(int argc, char **argv, const struct cli_opt *opts, int *rest, char *err,
              size_t errlen);

/* A whole decimal number in [lo, hi]. Returns 0 with *out, or -1. */
int cli_number(const char *v, long lo, long hi, long *out);

/* A TCP port 1-65535 from a flag's value. Returns 0, or -1 with err. */
int cli_port(const char *flag, const char *v, int *port, char *err, size_t errlen);

/* A duration flag's value: a number with a unit (ms, s, m, h, d). Returns
 * 0 with *ms, or -1 with err naming --flag. */
int cli_duration(const char *flag, const char *v, long long *ms, char *err, size_t errlen);

/* --- register.c: registrations --- */

/* The worktree an existing entry is named by (unregister, claim, db):
 * dir when given, as is (realpath: the worktree may be gone since), else
 * the worktree of the cwd (host_worktree_of). Returns 0, or -1 with a
 * message in err that suggests --worktree. */
int cli_worktree(const char *dir, char *out, size_t outlen, char *err, size_t errlen);

/* The worktree a command about a worktree's servers or refusals (logs,
 * restart, stop, refusals) means by dir: the one holding it, its top
 * folder or any folder inside (app/, where an agent cd'ed), as the daemon
 * places a caller whose cwd is there; NULL: the cwd's, as cli_worktree.
 * Returns 0, or -1 with err saying dir is in no worktree. */
int cli_worktree_holding(const char *dir, char *out, size_t outlen, char *err, size_t errlen);

/* The worktree a server is registered for (run, register): the worktree
 * of dir, or of the cwd, by the same rule the daemon places callers with
 * (host_worktree_of), so that nothing is registered where no caller can
 * be placed. dir must be the worktree's top folder. A moved worktree is
 * accepted with a note on stderr. Returns 0, or -1 with the reason in err
 * (a pruned worktree, a broken .git, no worktree at all). */
int cli_serve_worktree(const char *dir, char *out, size_t outlen, char *err, size_t errlen);

/* Print a daemon's error reply as one or two lines on stderr: what
 * happened and the command that fixes it (the holder of a conflict, with
 * its pid, command, age and worktree). Returns the exit status, 1. */
int cli_report(json_t *reply);
/* cli_report for `wtproxy run`, the command a test runner's webServer runs:
 * a conflict with the server its .wtproxy declares, ready, also says what
 * such a runner met at its url, unless stdin is a terminal (typed by
 * hand: no runner asked). */
int cli_report_run(json_t *reply);

/* --- tree_stop.c: the wrapper's process tree --- */

#define CLI_TREE_MAX 256 /* processes of one dev server */

/* Make the calling wrapper its tree's subreaper: orphans of CMD's tree
 * become its children, for cli_stop_tree to stop and reap. */
void cli_tree_adopt(void);

/* The caller's descendants into tree, breadth first, but for its
 * children in another session and theirs. Returns how many. */
size_t cli_tree_descendants(pid_t self, pid_t *tree, size_t max);

/* Reap every child that ended (adopted orphans too); cmd's wait status
 * into *status. Returns cmd when it ended, 0 when it runs, -1 when the
 * caller has no child left (errno ECHILD). */
pid_t cli_tree_reap(pid_t cmd, int *status);

/* SIGTERM every descendant of the caller (root, CMD, among them), and any
 * started meanwhile; SIGKILL what still runs after grace_ms; reap them
 * all, root's wait status into *status when status is not NULL (0 when
 * another waitpid reaped it). Returns 0, -1 out of memory. */
int cli_stop_tree(pid_t root, unsigned grace_ms, int *status);

/* The same for a tree whose wrapper died (run_keeper.c): root, if it still
 * has start time start, and every descendant, SIGKILL after grace_ms;
 * nothing reaped (they are init's). Returns 0, -1 out of memory. */
int cli_stop_orphaned_tree(pid_t root, unsigned long long start, unsigned grace_ms);

/* --- run_log.c: the log of a `wtproxy run` server --- */

/* The first line run_log.c writes into a log it rotated to: where the
 * earlier lines are, and how many bytes the files before this one held
 * (since the wrapper started), by which `wtproxy logs -f` tells a file it
 * never saw (logs.c). */
#define CLI_RUN_LOG_ROTATED_HEAD "--- wtproxy run: earlier lines are in "
#define CLI_RUN_LOG_ROTATED_TAIL " bytes rotated before this file) ---"
#define CLI_RUN_LOG_ROTATED CLI_RUN_LOG_ROTATED_HEAD "%s.1 (%lld" CLI_RUN_LOG_ROTATED_TAIL "\n"

/* A start that failed while the server lives on, as its output shows it
 * (run_fail.c): written by the relay thread under lock, read by the
 * wrapper's supervision. */
struct cli_run_fail {
    pthread_mutex_t lock;
    char tail[20480]; /* the output's last bytes: a relay read and what came before */
    size_t len;
    unsigned long long seq;        /* reads of output so far */
    unsigned long long marker_seq; /* the read (seq, from 1) of the last marker */
    long long marker_ms;           /* when the first marker since this start came (monotonic) */
    unsigned long long again_seq;  /* the read of its reloader's last "starting anew" line */
    unsigned long long since;      /* reads before this start: earlier markers are not its */
    int marker;                    /* which marker, -1 none */
    long long last_ms;             /* when output last came (monotonic) */
    unsigned long long told;       /* the supervision's: seq when the daemon was told, 0 not */
    int held;     /* the supervision's: told while its port listened (a reloader holds its dead
                   * server's socket), which makes it ready again only after new output */
    int bun;      /* the server runs under Bun (cli_run_fail_bun): its markers count too */
    int reloaded; /* a reloader's "starting anew" line came since this start */
    unsigned long long changed_seq; /* the read of its reloader's last "a file changed" line */
    unsigned long long error_seq;   /* the read of the last marker that says an error */
    unsigned long long serving_seq; /* the supervision's: reads before its server last listened */
};

struct cli_run_log {
    int out[2], err[2];  /* CMD's stdout and stderr pipes, -1 when not relayed */
    int fd;              /* the log file, -1 none */
    int to[2];           /* where the relay copies CMD's stdout and stderr too, -1 nowhere */
    char path[PATH_MAX]; /* "" when the server has no log */
    struct host_log cap; /* the log's size cap */
    pthread_t thread;
    char *buf;       /* the relay's */
    atomic_int done; /* the relay saw both pipes end */
    int relaying;
    struct cli_run_fail fail; /* what the relay saw of a failed start */
};

/* Give the server a log (l->path): the wrapper's stdout when it is a file
 * already, else a file under the state folder's servers/, fed by a relay
 * thread that also copies CMD's output to the wrapper's stdout and stderr
 * (those that are not the log) and caps the log's size. Returns 0, or -1
 * after a warning (no log; CMD's output goes straight to the wrapper's, as
 * without one). */
int cli_run_log_open(struct cli_run_log *l, const char *worktree, int front, const char *service);

/* In the forked child, before exec: stdout and stderr into the relay. */
void cli_run_log_child(const struct cli_run_log *l);

/* Append the wrapper's own line to the log (a restart), when it relays. */
void cli_run_log_note(const struct cli_run_log *l, const char *line);

/* CMD has ended: close the relay's write side, let it drain briefly, and
 * close the log. */
void cli_run_log_close(struct cli_run_log *l);

/* cli_run_log_close, the log's last line, after CMD's last output, saying
 * how it ended (how: "the server ... was killed by signal 9 (SIGKILL)")
 * and when; NULL: none. A server that dies leaves no line of its own, and
 * its next run's header read as if nothing had happened between. */
void cli_run_log_end(struct cli_run_log *l, const char *how);

/* --- pause.c: the sleep between a wait's polls --- */

/* Sleep ms, or as `wtproxy mcp` set it (cli_pause_set): read its stdin
 * meanwhile. Returns 0, or -1 when the wait is cancelled (the MCP client
 * cancelled the call, or closed its end): the caller stops waiting at once
 * and leaves nothing half done. */
int cli_pause(long ms);
void cli_pause_set(int (*fn)(long ms));

/* --- lease_client.c: leases, whichever store is in use --- */

struct reg_lease;

/* The store the CLI uses: *pg a connection to the configured PostgreSQL
 * store, or NULL for the daemon's (its embedded store, or the registry
 * it has). A configured store that cannot be reached is an error (fail
 * closed) unless WTPROXY_REGISTRY_OPTIONAL=1, which warns and returns
 * NULL, the lease calls then asking for the daemon's embedded store by
 * name (PROTOCOL.md "Leases": "store"). Returns 0, or -1 with err. */
int cli_lease_open(void **pg, char *err, size_t errlen);
void cli_lease_close(void *pg);

/* Claim c->id for c with ttl_ms. Returns 1 won, 0 refused, both with *info
 * (the lease, or the holder: a new reference), and when refused err the
 * sentence that says whose it is and the command that frees it
 * (reg_lease_held_message); -1 with err. */
int cli_lease_claim(void *pg, const struct reg_lease *c, long long ttl_ms, json_t **info, char *err,
                    size_t errlen);

/* cli_lease_claim, asking again every 250 ms for up to wait_ms (0: once)
 * while another holds c->id: it is claimed as soon as its holder releases
 * it, ends or expires. The first refusal it waits after is said once on
 * stderr ("waiting up to D for R: whose it is"). Returns as
 * cli_lease_claim (refused: the last answer's holder and sentence), and
 * *waited_ms: how long it waited, 0 when the first answer was final; -1
 * with err also when cli_pause says the wait is cancelled (no claim is in
 * flight then: it was not taken). `wtproxy claim --wait` and the MCP
 * claim's wait share it. */
int cli_lease_claim_wait(void *pg, const struct reg_lease *c, long long ttl_ms, long long wait_ms,
                         json_t **info, long long *waited_ms, char *err, size_t errlen);

/* Release r->id for releaser r: its worktree, and its pid (0 for a
 * person's command; the claim's own pid frees what that process holds),
 * reg_lease_may_release says who may; any holder with force. Returns 1
 * released (*holder the lease it was, when the store says), 0 not held or
 * refused (*holder the holder then, else NULL), err saying which (the
 * refusal's sentence, reg_lease_held_message), -1 with err. */
int cli_lease_release(void *pg, const struct reg_lease *r, int force, json_t **holder, char *err,
                      size_t errlen);

/* Every lease (a new JSON array), or NULL with err. */
json_t *cli_lease_list(void *pg, char *err, size_t errlen);

/* --- init_detect.c: reading an app checkout's files (the rest of it,
 * what the app is, is app.h's) --- */

#define CLI_INIT_FILE_MAX (1024 * 1024) /* a settings or config file we read */

/* The text of path (a regular file of at most max bytes, no NUL byte),
 * malloc'd. NULL with err (errno ENOENT when it does not exist). */
char *cli_read_text(const char *path, size_t max, char *err, size_t errlen);

/* dir/name into out. 0, or -1 when it does not fit. */
int cli_join(char *out, size_t len, const char *dir, const char *name);

/* Whether dir/name is a regular file (and executable, with want_exec). */
int cli_is_file(const char *dir, const char *name, int want_exec);

/* The quoted literal ('...' or "...", on one line) starting at p (after
 * blanks), copied into out. Returns the byte after its closing quote, or
 * NULL. */
const char *cli_quoted(const char *p, char *out, size_t outlen);

struct host_worktree;

/* The folder of wt's main checkout (its common dir without "/.git") into
 * out. 0, or -1 when the common dir is not such (a bare repository). */
int cli_main_checkout(const struct host_worktree *wt, char *out, size_t len);

/* The port every listen address of ping (a daemon's ping reply) shares:
 * 18000 for 127.0.0.1:18000 and [::1]:18000; 0 when it has several, or
 * ping is NULL. */
int cli_daemon_port(json_t *ping);

/* The daemon's ping reply (started first when start_daemon and none
 * answers), or NULL when none answers. */
json_t *cli_ping(int start_daemon);

/* --- why.c --- */

struct reg_table;

/* Where a request from process pid (folder NULL), or from a process whose
 * cwd is folder, would be routed on front, and why, given the daemon's
 * registrations t and the servers that exited lately (cli_table_exited's;
 * NULL none): {"pid", "process", "chain", "decided_by"} or {"folder"},
 * then "placed", "worktree", "how", "front", "backend" (the entry, or
 * null), "exited" (with no backend, the one of its worktree on front that
 * exited lately, as ls says it, or absent), "explanation" (the sentence,
 * with the fix) and "ok" (placed with a backend). NULL with err when
 * there is no such process or folder. `wtproxy why` prints it; `wtproxy
 * mcp`'s why tool returns it. */
json_t *cli_why_json(pid_t pid, const char *folder, int front, struct reg_table *t, json_t *exited,
                     char *err, size_t errlen);

/* The same on each of the n fronts: fronts[0]'s decision, and with
 * several, "fronts": [{"front", "ok", "explanation"}] for each and "ok"
 * whether every one serves the requests. */
json_t *cli_why_fronts_json(pid_t pid, const char *folder, const int *fronts, int n,
                            struct reg_table *t, json_t *exited, char *err, size_t errlen);

/* s[0, n) as a JSON string (a new reference): bytes that are not UTF-8
 * (a path, a command line, a log may hold any) become '?'. NULL when out
 * of memory. */
json_t *cli_json_text(const char *s, size_t n);

/* --- claim.c --- */

/* The claimer of resource id for `wtproxy claim` and `wtproxy mcp`: the
 * worktree wt (the cwd's when NULL, else the folder outside git), this
 * machine, this session, purpose (may be NULL); pid 0 (a manual claim).
 * Returns 0, or -1 with err (a bad id, no such worktree). */
int cli_lease_holder(struct reg_lease *c, const char *id, const char *wt, const char *purpose,
                     char *err, size_t errlen);

/* --- load.c --- */

/* Parse a load per CPU ("2", "1.5", "150%") for --name into hundredths.
 * Returns 0, or -1 with err naming the flag and the forms. */
int cli_load(const char *name, const char *v, unsigned *pct, char *err, size_t errlen);

/* Wait while the 1-minute load per CPU is above max_pct (hundredths),
 * saying so once on stderr. Returns 0 once it is not (or unknown), -1
 * with err after timeout_ms. */
int cli_wait_load(unsigned max_pct, long long timeout_ms, char *err, size_t errlen);

/* --- the subcommands (the table in main.c names each with its help) --- */

/* The status GET path answers on 127.0.0.1:port, or -1 when it does not
 * answer in time; for a 4xx or 5xx, the first line of its body into said
 * ("" when none; run_ready.c). */
int cli_http_status(int port, const char *path, char *said, size_t saidlen);

/* Whether an HTTP server answers on 127.0.0.1:port within a second (any
 * status to GET /__whoami). A port that listens may have nobody behind
 * it: uvicorn --reload's reloader holds the socket its dead server
 * accepted on, and connections queue unanswered (run_ready.c). */
int cli_port_answers(int port);

/* Whether something listens on port and is self's descendant; d (may be
 * NULL) is a sock_diag handle, poll_no the caller's poll count; *inode
 * (may be NULL) the listening socket's, 0 when found by a full read of the
 * socket tables (run_ready.c). */
struct host_diag;
int cli_cmd_listens(int port, pid_t self, struct host_diag *d, unsigned poll_no,
                    unsigned long *inode);

/* Whether something listens on port on 127.0.0.1, 0.0.0.0, ::1 or ::
 * (sock_diag; 1 when the kernel offers none: not known) (run_ready.c). */
int cli_port_listened(int port);

int cli_run_main(int argc, char **argv);         /* run.c */
int cli_register_main(int argc, char **argv);    /* register.c */
int cli_unregister_main(int argc, char **argv);  /* register.c */
int cli_ls_main(int argc, char **argv);          /* ls.c */
int cli_dashboard_main(int argc, char **argv);   /* dashboard.c */
int cli_why_main(int argc, char **argv);         /* why.c */
int cli_fingerprint_main(int argc, char **argv); /* fingerprint.c */
int cli_claim_main(int argc, char **argv);       /* claim.c */
int cli_release_main(int argc, char **argv);     /* claim.c */
int cli_leases_main(int argc, char **argv);      /* claim.c */
int cli_db_main(int argc, char **argv);          /* db.c */
int cli_init_main(int argc, char **argv);        /* init.c */
int cli_doctor_main(int argc, char **argv);      /* doctor.c */
int cli_mcp_main(int argc, char **argv);         /* mcp.c */
int cli_logs_main(int argc, char **argv);        /* logs.c */
int cli_logs_prune(void);                        /* logs_prune.c: logs --prune */
int cli_restart_main(int argc, char **argv);     /* restart.c */
int cli_refusals_main(int argc, char **argv);    /* refusals.c */
int cli_stop_main(int argc, char **argv);        /* restart.c */
int cli_daemon_stop(void);                       /* daemon_stop.c: stop --daemon */

#endif
