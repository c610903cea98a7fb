/* registry.h - what the proxy routes to: registrations of dev servers, one
 * per (machine, front port, worktree), their liveness, and the store that
 * keeps them across daemon restarts.
 *
 * A reg_backend is one registration (or the configured default backend,
 * which has no worktree). Backends are reference-counted: a request in
 * flight keeps its backend while the table drops or replaces it. */
#ifndef WTP_REGISTRY_H
#define WTP_REGISTRY_H

#include <limits.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

enum reg_state {
    REG_STARTING, /* registered, not yet listening */
    REG_READY,    /* its server listens on its port */
    REG_DEAD,     /* pid gone, worktree gone or TTL passed: about to go */
};

/* A service's name: 1-32 of [a-z0-9_-], starting with a letter or digit,
 * so that it fits an environment variable (WTPROXY_FRONT_<NAME>), a file
 * name and a URL without quoting. */
#define REG_SERVICE_MAX 33
/* The last lines of a server whose start failed while it lives on: the
 * traceback's end, which names the file and line to fix. */
#define REG_START_FAILED_MAX 2048
/* The unregister op's "why": how the server ended, for the daemon's log
 * (a worktree's path may be in it twice). */
#define REG_UNREGISTER_WHY_MAX 1024

/* How a server's start failed while it lives on (the `start-failed` op's
 * "when"). */
enum reg_failed_when {
    REG_FAILED_START, /* "start": its reloader waits for a change to its files */
    REG_FAILED_EDIT,  /* "edit": it served; an edit broke it, and its reloader waits */
    REG_FAILED_PORT,  /* "port": it listens, but not on the port it was given */
    REG_FAILED_DIED,  /* "died": it served; the process serving died, and its reloader holds
                       * the port with nobody accepting (uvicorn --reload's worker killed) */
};

struct reg_backend {
    /* The key. */
    char machine[128];       /* this machine's id (/etc/machine-id, else hostname) */
    int front;               /* front port the entry serves */
    char worktree[PATH_MAX]; /* canonical realpath; "" for the default backend */
    /* Who and what. */
    uid_t uid;                    /* owner: only this uid (or root) may replace or remove it */
    char name[320];               /* "HOST:PORT" of the dev server */
    struct sockaddr_storage addr; /* name, resolved at creation */
    socklen_t addrlen;
    int port;                     /* the dev server's port */
    pid_t pid;                    /* the server's pid; 0 for a manual entry with a TTL */
    unsigned long long pid_start; /* the pid's start time (clock ticks): a reused pid differs */
    char command[1024];           /* what runs there, for people */
    /* The same as its `wtproxy run` wrapper was given it: each word quoted
     * for a POSIX shell, {port} as given; "" unknown (another registrant).
     * What a message pastes after `wtproxy run ... --`: the words of
     * command (joined by spaces) cannot be told apart again. */
    char shell_command[1024];
    char service[REG_SERVICE_MAX]; /* the `.wtproxy` service it serves; "" unnamed */
    char log[PATH_MAX];            /* the file its output goes to; "" unknown */
    int start_load_pct;            /* the load per CPU when it started (hundredths); -1 unknown */
    long long registered_ms;       /* unix time in ms */
    long long started_ms;          /* when the server process started, 0 unknown */
    long long expires_ms;          /* TTL deadline, 0 none */
    enum reg_state state;
    int restart_on_stale; /* its `wtproxy run` wrapper restarts it on SIGUSR1 */
    /* Its start failed and it lives on, waiting for a change to its files
     * (an autoreloader whose server thread died): the last lines it printed
     * and what restarts it, told by its wrapper (the `start-failed` op);
     * "" none. start_failed_when: at its first start, after it was ready
     * (an edit broke it: its reloader's new server failed), or it listens
     * on another port than the one it was given (its start ignores
     * {port}). Cleared by `ready` and `restarting`. Kept in the state file with the
     * entry, which a new daemon loads only while its pid runs with the
     * same start time. */
    char start_failed[REG_START_FAILED_MAX];
    /* Why the layer above asked its wrapper to restart it (the files that
     * changed), set by reg_server_on_state's fn for the `restarting` op's
     * reply, which says it in the server's log; "" none. Daemon memory only. */
    char restart_why[3000];
    long long start_failed_ms; /* when its wrapper told it (wall clock): "told_ms" */
    char reloader[64];
    enum reg_failed_when start_failed_when;
    /* It listens, but its ready path (`ready =`, `--health`) did not
     * answer 2xx or 3xx: what its wrapper's last question got ("GET
     * /admin/stats answered 500 (\"...\")", the `not-ready` op) and since
     * when that answer (wall clock), so that a start that times out says
     * which of its two waits it was; "" none. Cleared by `ready` and
     * `restarting`; not kept in the state file. */
    char not_ready[320];
    long long not_ready_ms;
    /* The daemon asked its wrapper to stop it, and why ("wtproxy stop (pid
     * 812: ...)", "idle for 600000 ms (idle_stop)"): the daemon's log says
     * so when the wrapper unregisters, rather than the wrapper's "SIGTERM
     * from" the daemon; "" none. Memory only. */
    char stop_why[512];
    int daemon_started; /* its pid's parent was the daemon when it registered: a wrapper the
                         * daemon started from a `.wtproxy` (a daemon after it adopts its
                         * idle stop) */
    int restored; /* loaded from the state file: registered with an earlier daemon (memory only) */
    /* It was ready once since it registered (a loaded "ready" was): its
     * server listened, so a later exit is not one "before it listened". */
    int been_ready;
    unsigned long requests;    /* requests relayed to it */
    long long last_request_ms; /* when the last one began or ended (daemon memory only) */
    int active;                /* requests and tunnels in flight to it now */
    int refs;
    void *watch; /* the daemon's liveness watch (owned by reg_server) */
    /* The /__whoami gate's memory of this server: set by proxy/ (the
     * registry does not know the gate), released with the registration. */
    void *gate;
    void (*gate_release)(void *gate);
    /* What the gate last found, copied here by proxy/ for ls and the
     * dashboard; daemon memory only. state "" means never checked. */
    struct reg_whoami {
        char state[16];    /* "verified", "trusted", "stale", "mismatch", "no-whoami", "invalid",
                            * "unchecked", "changed", "taking-in": the gate's words */
        char detail[1024]; /* the reason, a sentence for people */
        char checkout[PATH_MAX]; /* the checkout the server said it serves */
        char hash[72];           /* its fingerprint, "sha256:<hex>" */
        char disk_hash[72];      /* the fingerprint of the files on disk then */
        long long checked_ms;    /* when its /__whoami was last read */
        unsigned long refused;   /* requests the gate refused */
        unsigned long seq;       /* the gate's status this copy is of */
        int silent;              /* unchecked: nothing answered when asked (not listening) */
    } whoami;
};

/* Create a backend from "HOST:PORT" or "[V6]:PORT". The host must be an
 * address literal or a name that resolves locally (localhost); the first
 * address wins. Returns the backend with one reference, every other field
 * zero, or NULL with a message in err. */
struct reg_backend *reg_backend_new(const char *hostport, char *err, size_t errlen);

struct reg_backend *reg_backend_ref(struct reg_backend *b);

/* Move b to port on the same host: its name, address and port. For a
 * server started again on another port than the one it was registered
 * with (its own was taken before it bound it). */
void reg_backend_set_port(struct reg_backend *b, int port);

/* Whether name is a valid service name (REG_SERVICE_MAX); if not, err
 * says why, naming it. */
int reg_service_name_ok(const char *name, char *err, size_t errlen);
void reg_backend_unref(struct reg_backend *b);

/* Split "HOST:PORT" / "[V6]:PORT" into host and port. Returns 0 or -1. */
int reg_split_hostport(const char *s, char *host, size_t hostlen, int *port);

/* The worktree's folder name (after the last '/'): what Host
 * <name>.localhost and X-Wtproxy-Worktree: <name> match. */
const char *reg_worktree_name(const struct reg_backend *b);

/* --- liveness (reg_live.c) --- */

/* Whether b is still alive at now_ms: its pid runs with the same start
 * time (or, for a manual entry, its TTL has not passed), and its worktree
 * folder exists. On 0, why says what ended it ("pid 4242 exited", "worktree
 * /x/wt-a was removed", "TTL passed"). */
int reg_backend_alive(const struct reg_backend *b, long long now_ms, char *why, size_t whylen);

/* This machine's id, computed once: $WTPROXY_MACHINE when set (tests that
 * play two machines), else /etc/machine-id, else the hostname. */
const char *reg_machine_id(void);

/* --- the table (reg_table.c) --- */

struct reg_table;

struct reg_table *reg_table_new(void);
void reg_table_free(struct reg_table *t); /* drops the table's references */

/* Insert b (the table takes a reference) under its key. When a live entry
 * (state not REG_DEAD) holds the key already, nothing changes: returns -1
 * and *holder points at it (no reference taken). A REG_DEAD entry is
 * replaced. Returns 0. */
int reg_table_put(struct reg_table *t, struct reg_backend *b, struct reg_backend **holder);

/* The entry for (front, worktree), or NULL (no reference taken). */
struct reg_backend *reg_table_get(const struct reg_table *t, int front, const char *worktree);

/* Remove the entry for (front, worktree); returns it with the table's
 * reference handed to the caller, or NULL. */
struct reg_backend *reg_table_take(struct reg_table *t, int front, const char *worktree);

/* Entries on front whose worktree folder name is name: the count, with up
 * to max of them in out (no references taken). */
size_t reg_table_by_name(const struct reg_table *t, int front, const char *name,
                         struct reg_backend **out, size_t max);

size_t reg_table_count(const struct reg_table *t);
/* How many entries were put or taken so far: what the table holds changed
 * when this did (the caller identification's memo of processes placed
 * nowhere is judged against it). */
unsigned long reg_table_changes(const struct reg_table *t);
struct reg_backend *reg_table_at(const struct reg_table *t, size_t i); /* in insertion order */

/* --- the embedded store (reg_store.c) --- */

/* One entry as JSON (jansson object, new reference) and back. The JSON
 * holds every field but refs, watch and addr (re-resolved from name).
 * from_json returns a new backend with one reference, or NULL with err. */
struct json_t;
struct json_t *reg_backend_to_json(const struct reg_backend *b);
struct reg_backend *reg_backend_from_json(struct json_t *o, char *err, size_t errlen);

/* A control op's refusal, the one shape every layer answers with
 * (PROTOCOL.md): {"ok":false,"error":code,"message":printf(fmt, ...)}. The
 * message says what happened and the command that fixes it. A new
 * reference, NULL when out of memory. */
struct json_t *reg_fail(const char *code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Set b's optional labels, "service", "log", "shell_command" and
 * "start_load" (the load per CPU when its server started, a number), from
 * o (an entry or a register request): absent means "" or unknown. Returns 0, or -1 with
 * err naming the bad field. */
int reg_backend_read_labels(struct reg_backend *b, struct json_t *o, char *err, size_t errlen);

/* Set b's failed start from o (a `start-failed` request, or an entry's
 * "start_failed"): "lines" (required, not empty; its end kept when longer
 * than b holds), "reloader" and "when" ("start", the default, or "edit").
 * Returns 0, or -1 with err naming the bad field. */
int reg_backend_read_failed(struct reg_backend *b, struct json_t *o, char *err, size_t errlen);
/* "start", "edit" or "port". */
const char *reg_failed_when_name(enum reg_failed_when w);

/* Whether a file that lines (a failed server's last output, told at
 * told_ms) names under worktree changed after that, and longer than
 * REG_RELOADER_GRACE_MS ago: its reloader would have started it again by
 * then (one whose first look at the files came after the save never
 * does: Django's). That file's path into file. (reg_failed_fixed.c) */
#define REG_RELOADER_GRACE_MS 2000
int reg_failed_fixed(const char *lines, const char *worktree, long long told_ms, char *file,
                     size_t filelen);

/* Write the table to path atomically: a temporary file in the same folder,
 * mode 0600, fsync, rename, fsync of the folder. On failure (full or
 * read-only disk) the old file is untouched; returns -1 with err. */
int reg_store_save(const struct reg_table *t, const char *path, char *err, size_t errlen);

/* Replace path with len bytes of data that way (the leases' file uses it
 * too). Returns 0, or -1 with err; path is untouched unless renamed. */
int reg_store_replace_file(const char *path, const char *data, size_t len, char *err,
                           size_t errlen);

/* The table as the state file's text (malloc'd), or NULL when out of
 * memory. reg_store_save writes it; the daemon hands it to its saver.
 * daemon (NULL: none) is kept beside the entries as "daemon": what the
 * daemon that writes it runs with, {"registry" (masked), "flags"}. */
char *reg_store_dump(const struct reg_table *t, struct json_t *daemon);

/* The "daemon" object of the state file at path (new reference), NULL
 * when it has none: the registry (its password masked) and the arguments
 * after `serve` of the daemon that wrote it last. A daemon that died
 * leaves it; the start the CLI prints then repeats them. */
struct json_t *reg_store_daemon(const char *path);

/* --- a file written off the loop (reg_store_worker.c): the state file,
 * and the embedded lease store's leases.json (one saver each) --- */

struct event_base;
struct reg_saver;

/* A write is over: err is "" once the snapshot is on disk, else why not
 * (the previous file is then kept). */
typedef void (*reg_saver_done)(void *arg, const char *err);

/* A thread that writes snapshots to path with reg_store_replace_file.
 * on_write(arg, err) runs on base's loop after each write. Returns NULL
 * with err when the thread cannot start. */
struct reg_saver *reg_saver_new(struct event_base *base, const char *path, reg_saver_done on_write,
                                void *arg, char *err, size_t errlen);

/* Hand the saver data, the file's whole new text (it owns it now). At
 * most one write is in flight and one pending: a snapshot handed while
 * one is pending replaces it. */
void reg_saver_put(struct reg_saver *sv, char *data);

/* Have done(arg, err) run on the loop once the latest snapshot handed so
 * far is written (or failed). Returns 1; 0 when nothing is pending or in
 * flight (what was handed is written already) or out of memory: done is
 * then never called. */
int reg_saver_wait(struct reg_saver *sv, reg_saver_done done, void *arg);

/* Finish the write in flight, write the pending one on this thread, tell
 * their waiters, and stop (at exit: no handed change is lost). */
void reg_saver_free(struct reg_saver *sv);

/* Read path into t. A missing file is an empty table. A truncated or
 * corrupt file (not JSON, wrong shape) is renamed to PATH.corrupt-<unix
 * time> and the table starts empty: returns 0 with a one-line warning in
 * warn. Entries that fail to parse are skipped with a warning. Returns -1
 * only when the file cannot be read at all (err). */
int reg_store_load(struct reg_table *t, const char *path, char *warn, size_t warnlen, char *err,
                   size_t errlen);

/* --- where things live (reg_paths.c) --- */

/* The control socket's folder: $XDG_RUNTIME_DIR/wtproxy, else
 * /tmp/wtproxy-<uid>. Created 0700 when missing; refused (-1, err) when it
 * is not a directory, is owned by another uid, or is open to others. */
int reg_control_dir(char *out, size_t outlen, char *err, size_t errlen);

/* The control socket path: $WTPROXY_CONTROL when set, else
 * <control dir>/control.sock. */
int reg_control_path(char *out, size_t outlen, char *err, size_t errlen);

/* The control socket path reg_control_path gives, without creating its
 * folder, and where it comes from into from ("WTPROXY_CONTROL", "under
 * XDG_RUNTIME_DIR", "the default without XDG_RUNTIME_DIR"): what a
 * process that cannot create that folder (a sandbox's empty /tmp) looked
 * for. */
void reg_control_where(char *out, size_t outlen, const char **from);

/* The state folder: $XDG_STATE_HOME/wtproxy, else ~/.local/state/wtproxy,
 * created 0700 when missing. */
int reg_state_dir(char *out, size_t outlen, char *err, size_t errlen);

/* --- a server's log (reg_server_log.c) --- */

/* Where each run of a server begins in its log: REG_LOG_HEAD "WORKTREE
 * (front F[, service S]), WHEN ---", and again after a rotation's line. */
#define REG_LOG_HEAD "--- wtproxy run of "

/* "<folder>-<hash>-": how every log name of worktree (canonical) begins;
 * the hash is of its whole path, so that two worktrees with one folder
 * name have their own. */
void reg_log_prefix(const char *worktree, char *out, size_t len);

/* "<folder>-<hash>-<front>[-<service>].log": the file name, in the state
 * folder's servers/, of the log of worktree's server on front (service
 * NULL or ""), whoever starts it, the daemon or `wtproxy run`. */
void reg_log_name(const char *worktree, int front, const char *service, char *out, size_t len);

/* The worktree the log at path names in its first line (or, rotated once,
 * its .1's), into out. Returns 0, or -1 when it names none (no
 * such file, or one an older wtproxy wrote, which had no such line). */
int reg_log_whose(const char *path, char *out, size_t len);

/* Whether file (a name in servers/) has reg_log_name's shape: a log whose
 * worktree its first line no longer says (rotated twice) is still this
 * wtproxy's, not an older one's. */
int reg_log_named(const char *file);

/* Whether the file at path was last written before worktree came to be
 * (host_worktree_born): an earlier worktree's at the same path, which the
 * new one must not be shown. 0 when either time is unknown. */
int reg_log_predates(const char *path, const char *worktree);

/* --- the daemon's side (reg_server.c) --- */

struct event_base;
struct reg_server;

/* registry: the PostgreSQL store ("" or NULL: $WTPROXY_REGISTRY, else
 * the embedded store only); unreachable, the daemon must not start (NULL,
 * err) unless WTPROXY_REGISTRY_OPTIONAL=1 (reg_pg.h, reg_mirror_start).
 * Load the registrations saved at state_path (dead ones are dropped, live
 * ones watched again), then serve the control protocol (PROTOCOL.md) on a
 * Unix socket at socket_path. A stale socket file is replaced; one that a
 * running daemon answers on is an error. socket_fd >= 0: that listening
 * socket, already bound to socket_path (socket activation), is served
 * instead, and its file is left to its owner. flags (borrowed; NULL
 * none): the daemon's arguments, kept in the state file with its registry
 * (reg_store_daemon), so that the start printed after its death is its
 * own, once it serves (reg_server_serving). Returns NULL with err. */
struct reg_server *reg_server_new(struct event_base *base, const char *socket_path, int socket_fd,
                                  const char *state_path, const char *registry,
                                  struct json_t *flags, char *err, size_t errlen);

/* The daemon serves (its listeners are open): its registry and flags
 * replace the last daemon's in the state file. A daemon that could not
 * start (a port taken) leaves them, so that the start printed next is
 * the last one's that served. */
void reg_server_serving(struct reg_server *rs);

/* One control request line (len bytes, no LF) from a peer of uid, to its
 * reply line (malloc'd, no LF; never NULL but when out of memory): what
 * the control socket does for each line it reads. Public so that the
 * fuzzer (tests/fuzz/fuzz_control.c) drives exactly this code without a
 * socket. With a PostgreSQL store, the ops that read it (claim, release,
 * leases, list) are answered only on the socket, when its thread is done:
 * here they get an "unsupported" error (and so do the proxy's ops that
 * wait for a file, services and start). */
char *reg_server_request(struct reg_server *rs, uid_t uid, const char *line, size_t len);

/* Stop serving, remove the socket file, drop every watch and the table. */
void reg_server_free(struct reg_server *rs);

/* The daemon's front addresses ("127.0.0.1:8000", "[::1]:8000"), for the
 * ping reply's "listen" (wtproxy dashboard prints the URL from it). The
 * names are copied; calling again replaces them. */
void reg_server_set_listen(struct reg_server *rs, const char *const *names, size_t n);

/* Ops the registry does not know act on running servers (restart, stop,
 * start, log, refusals: PROTOCOL.md lists them), which only the layer
 * above can do: they are passed to fn, on the loop, with the peer's uid.
 * fn returns the reply line's object (new reference); NULL when it does
 * not know op either (the peer then gets "unknown-op"); or
 * reg_server_later() when the reply comes later (a file read on a worker
 * first), through reg_server_reply(peer, ...) exactly once. peer is NULL
 * when no later reply can go (reg_server_request): fn answers now. */
struct reg_peer;
typedef struct json_t *(*reg_server_ext)(void *arg, uid_t uid, const char *op, struct json_t *req,
                                         struct reg_peer *peer);
void reg_server_set_ext(struct reg_server *rs, reg_server_ext fn, void *arg);
struct json_t *reg_server_later(void);

/* What a `wtproxy run` server that exited said last (reg_last_words.c):
 * its wrapper sends its last output lines and exit status with the
 * `unregister` op, and a request for that (front, worktree) that finds no
 * server gets them in its 503 rather than only its log's path. Kept for
 * REG_LAST_WORDS_MS, REG_LAST_WORDS_KEPT at most (the oldest goes), and
 * forgotten when a server registers on the key again. */
#define REG_LAST_WORDS_KEPT 16
#define REG_LAST_WORDS_MS (10 * 60 * 1000)

struct reg_last_words {
    int front;
    char worktree[PATH_MAX];
    uid_t uid;                        /* its entry's owner: only they (or root) list it */
    char command[1024];               /* the server's command, for people */
    char service[REG_SERVICE_MAX];    /* its `.wtproxy` service; "" unnamed */
    char log[PATH_MAX];               /* the file its output went to; "" unknown */
    char rerun[1024];                 /* the `wtproxy run` line that started it; "" unknown */
    char lines[REG_START_FAILED_MAX]; /* its output's last lines */
    int status;                       /* its exit status, or -1 when a signal ended it */
    int signal;                       /* that signal */
    int daemon_started;               /* the daemon started it from the .wtproxy */
    long long ended_ms;               /* wall clock */
    /* Its entry was ready when it ended: it had listened, so it did not
     * end "before it listened" (a kill -9 of a server that served for
     * minutes). */
    int served;
};

/* The last words kept for (front, worktree), or NULL when none is, or
 * they are older than REG_LAST_WORDS_MS. */
const struct reg_last_words *reg_server_last_words(struct reg_server *rs, int front,
                                                   const char *worktree);

/* The last words kept and fresh, of uid's servers (root: everyone's), as
 * the `list` op's "exited" (PROTOCOL.md): [{"front", "worktree", "uid",
 * "command", "service"?, "log"?, "rerun"?, "lines", "status" or "signal",
 * "daemon_started", "ended_ms"}], oldest first. `wtproxy ls`, the MCP
 * servers tool and the dashboard say them where the worktree has no
 * server: "no dev server" alone sent the reader guessing why. */
struct json_t *reg_server_exited(struct reg_server *rs, uid_t uid);
/* One of them (reg_json.c); NULL when out of memory. */
struct json_t *reg_last_words_to_json(const struct reg_last_words *w);

/* The i-th last words kept, fresh or not (from 0), or NULL past the last:
 * their worktrees are known to the caller's identification as a registered
 * one is, so that the request right after an exit is placed there. */
const struct reg_last_words *reg_server_last_words_at(struct reg_server *rs, size_t i);

/* fn(arg, b) runs on the loop after a `ready` or `restarting` op set b's
 * state, or a `register` op made b ready at once: its server listens now
 * (REG_READY), or a new process is about to replace it (REG_STARTING).
 * What the layer above knew of the old process (the /__whoami gate's
 * verdict) is then not the new one's: it forgets it, and verifies the new
 * one once ready. A `start-failed` op runs it too (REG_STARTING with
 * b->start_failed set): the requests waiting for b are refused then; so
 * does a drop (REG_DEAD: its process ended, it unregistered, it expired),
 * before b leaves the table. */
typedef void (*reg_server_on_state)(void *arg, struct reg_backend *b);
void reg_server_set_on_state(struct reg_server *rs, reg_server_on_state fn, void *arg);
/* The held reply (consumed) to peer's line: a peer gone meanwhile is
 * freed now, the reply dropped. */
void reg_server_reply(struct reg_peer *peer, struct json_t *reply);

/* The live registrations, for routing (the server keeps it current:
 * entries it drops are marked REG_DEAD first, for requests holding them). */
struct reg_table *reg_server_table(struct reg_server *rs);

/* The current leases, computed as the `leases` op computes them
 * (CLAIMS.md): from the PostgreSQL store when the daemon has one, else
 * from the embedded store (expired and dead holders swept first), as
 * {"store": "postgresql"|"embedded", "leases": [LEASE, ...]}, or
 * {"store", "error"} when the store cannot be read (PostgreSQL down):
 * never an empty list in its place. The embedded store's are returned
 * (new reference). The PostgreSQL store is read on the daemon's
 * PostgreSQL thread, never on the loop: NULL is returned, *job set, and
 * cb(arg, leases) runs on the loop once they are read (cb owns them),
 * unless reg_server_cancel(rs, *job) comes first. */
typedef void (*reg_server_done)(void *arg, struct json_t *answer);
struct json_t *reg_server_leases(struct reg_server *rs, reg_server_done cb, void *arg, void **job);
void reg_server_cancel(struct reg_server *rs, void *job);

#endif
