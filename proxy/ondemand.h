/* ondemand.h - the on-demand start: dev servers the daemon starts itself,
 * from the `.wtproxy` file a repository commits at its root (wtfile.h:
 * one unnamed service, or `[service NAME]` sections), for callers whose
 * worktree has none running: Playwright's `port:` recipe, where wtproxy's
 * own answer on the port means Playwright never starts one. A service is
 * started after the services it names in `after`, each ready first; every
 * named one gets its siblings' front ports (WTPROXY_FRONT_<NAME>). They
 * stop again after `idle_stop` without requests.
 * (Not the command line starting the daemon: that is cli_daemon_start in
 * cli/client.c. Users call both "autostart", and the flags and variables
 * keep that word: WTPROXY_NO_AUTOSTART, --no-autostart.) */
#ifndef WTP_ONDEMAND_H
#define WTP_ONDEMAND_H

#include <jansson.h>
#include <stddef.h>

struct proxy_server;
struct ondemand;
struct ondemand_cached;
struct wtfile;

struct ondemand *ondemand_new(struct proxy_server *s, const char *control_path,
                              const char *log_dir);
void ondemand_free(struct ondemand *a);

/* Adopt the servers a dead daemon started from a .wtproxy, loaded from
 * the state file: each whose worktree's .wtproxy (read off the loop)
 * still declares it on its front is stopped at idle_stop as one this
 * daemon started, its idle time counted from now (ondemand_adopt.c). */
void ondemand_adopt(struct ondemand *a);

/* Start worktree's server for service ("" the unnamed one of a file
 * without sections; NULL: the one whose front port is front), after the
 * services it needs (each started unless running, and ready before the
 * next starts), unless one is running; f is worktree's .wtproxy as read
 * (rc and ferr as wtfile_read's). Returns 0 (started, waiting for those it
 * needs, or running: wait for its registration), or -1: err is "" when
 * the worktree has no .wtproxy or declares nothing on front, else says
 * what is wrong (the file's line and the fix, or an unknown service). */
/* Whether f is another user's than the daemon's: its start line would run
 * as the daemon's user (as root, for a daemon run as root), so a request
 * naming that worktree, a caller placed in it or a start op would run that
 * user's code as this one. Nothing is started from such a file; err says
 * so, and how its owner starts it. Returns 1, or 0 when f is ours. */
int ondemand_not_ours(struct ondemand *a, const char *worktree, const struct wtfile *f, char *err,
                      size_t errlen);

int ondemand_ensure_file(struct ondemand *a, const char *worktree, int rc, const struct wtfile *f,
                         const char *ferr, const char *service, int front, char *err,
                         size_t errlen);

/* The worktree folder given to ondemand_read_later does not exist. */
#define ONDEMAND_NO_FOLDER 3
/* ondemand_read_later's read took longer than its timeout (f NULL). */
#define ONDEMAND_TIMED_OUT 4

/* The worktree folder (an absolute path) resolved (realpath(3)) and its
 * .wtproxy read, both by a worker, handed to cb on the loop with the
 * folder's real path (rc and err as wtfile_read's, or
 * ONDEMAND_NO_FOLDER and err saying so), never before this returns (the
 * `services` and `start` ops: a slow filesystem must not stall the loop).
 * When the daemon stops first, cb gets rc -1, f NULL and err saying so;
 * when the read takes longer than timeout_ms, ONDEMAND_TIMED_OUT, f NULL
 * and worktree as given (a hung filesystem: the one who asked hears so).
 * Returns a ticket for ondemand_cancel (the dashboard's start, whose
 * client may go), NULL when out of memory (cb is not called). */
typedef void (*ondemand_file_cb)(void *arg, const char *worktree, int rc, const struct wtfile *f,
                                 const char *err);
void *ondemand_read_later(struct ondemand *a, const char *worktree, unsigned timeout_ms,
                          ondemand_file_cb cb, void *arg);

/* ondemand_ensure_front_later's answer: rc 0 (started, or running: wait
 * for its registration), or one of these, with err saying what. */
#define ONDEMAND_NONE 1            /* no server declared on front: err says why, or "" */
#define ONDEMAND_BAD_FILE (-1)     /* the worktree's .wtproxy is refused: its line and fix */
#define ONDEMAND_START_FAILED (-2) /* declared, but cannot start now (too many, fork) */
#define ONDEMAND_NOT_OURS (-3)     /* the .wtproxy is another user's: never started by us */
#define ONDEMAND_GONE 2 /* the worktree was removed (git worktree remove): nothing starts there */
typedef void (*ondemand_ensured_cb)(void *arg, int rc, const char *err);

/* ondemand_ensure_front for a request, its file read by a worker (a slow
 * filesystem must not stall the loop): cb gets the answer on the loop,
 * never before this returns. Returns a ticket for ondemand_cancel, NULL
 * when out of memory. */
void *ondemand_ensure_front_later(struct ondemand *a, const char *worktree, int front,
                                  ondemand_ensured_cb cb, void *arg);

/* The answer for ticket (NULL: none) is not wanted any more. */
void ondemand_cancel(void *ticket);

/* A caller in worktree connected to front and has sent nothing yet: when
 * no server of worktree runs there, its .wtproxy is read off the loop and
 * the server it declares on front, if any, is started (ondemand_ensure_front,
 * without an answer: the request that follows waits for it or says what
 * is wrong). Playwright's `port` readiness check connects seconds before
 * the browser's first request; the server starts in that time. */
void ondemand_connected(struct ondemand *a, const char *worktree, int front);

/* Whether the server started for (worktree, front) has exited; its log's
 * path into log whenever one was started. */
int ondemand_exited(struct ondemand *a, const char *worktree, int front, char *log, size_t loglen);

/* Say in the daemon's log, once per front, each front f declares that the
 * daemon does not listen on, with the `wtproxy serve` that does. */
void ondemand_check_fronts(struct ondemand *a, const char *worktree, const struct wtfile *f);

/* What a refusal calls the server started for (worktree, front): "service
 * `api` that WT/.wtproxy declares" ("the server that WT/.wtproxy declares"
 * for an unnamed one). */
void ondemand_named(struct ondemand *a, const char *worktree, int front, char *out, size_t len);

/* When the server started for (worktree, front) has exited: 1, with out
 * saying which service, how it ended (its status), that it did before it
 * listened, and where its output is; 2 when it had served (it was ready
 * when it ended, as its wrapper told with its last words: a kill -9 of a
 * server that served for minutes), which out says instead; else 0. */
int ondemand_exit_note(struct ondemand *a, const char *worktree, int front, char *out, size_t len);

/* The log a server of worktree's .wtproxy on front (service "" for a file
 * without sections) writes to, started or not: reg_log_name's, in the
 * daemon's log folder, the one `wtproxy run` of that server writes too. */
void ondemand_log_path(const struct ondemand *a, const char *worktree, int front,
                       const char *service, char *out, size_t len);

/* Why the server for (worktree, front) was not started although asked
 * for (a service it is started after exited or was not ready within
 * start_timeout, or fork failed), naming the log to read; NULL when not so. */
const char *ondemand_failed(struct ondemand *a, const char *worktree, int front);

/* Whether that why is a service it is started after, whose log (not this
 * one's) the refusal must send its reader to. */
int ondemand_failed_after(struct ondemand *a, const char *worktree, int front);

/* A request's start_timeout ended while worktree's start on front still
 * waits for what it needs (the load, a service it comes after): give the
 * start up now and return why (as ondemand_failed then), else NULL. */
const char *ondemand_give_up(struct ondemand *a, const char *worktree, int front);

/* What the daemon knows of its start of the server for (worktree, front),
 * beyond the registry: "waiting" (for those it is started after),
 * "waiting-load" (for the load to fall to start_max_load; *load_pct is the
 * load per CPU seen, in hundredths, else 0), "launched" (its wrapper
 * runs), "failed" (ondemand_failed) or "stopped". */
const char *ondemand_state(struct ondemand *a, const char *worktree, int front, unsigned *load_pct);

/* The starts that wait (for those they are started after, or for the
 * load), for `wtproxy ls`: [{"worktree","service","front","state",
 * "since_ms"[,"load"]}] (op `starts`). */
json_t *ondemand_pending(struct ondemand *a);

/* The services worktree's .wtproxy (f, read: rc and err as wtfile_read's)
 * declares, running or not:
 * {"file":PATH,"services":[{"name","front","start","after":[..],"ready",
 * "idle_stop_ms","running","state"}]}, or {"file":PATH,"error":MSG} for a
 * bad file; NULL when it has none (registry/PROTOCOL.md, op `services`).
 * state: the registration's ("starting", "ready"), else ondemand_state's.
 * (ondemand_services.c) */
json_t *ondemand_services_of(struct proxy_server *s, const char *worktree, int rc,
                             const struct wtfile *f, const char *err);

/* ondemand_services from the file as the daemon last read it, never
 * touching the file (the dashboard: ondemand_cache.h); NULL when it has
 * none or was not read yet (a worker reads it now). (ondemand_services.c) */
json_t *ondemand_services_known(struct proxy_server *s, const char *worktree);

/* What the worker last read of worktree's .wtproxy (ondemand_reader_cached). */
const struct ondemand_cached *ondemand_cached(struct ondemand *a, const char *worktree);

/* Whether worktree (of the repository with this git common dir) is in a
 * repository that declares servers: the worktree's own .wtproxy or its
 * main checkout's, good or bad. Its callers are then placed by their cwd.
 * (ondemand_services.c) */
int ondemand_declared(const char *worktree, const char *common_dir);

#endif
