/* reg_pg.h - the PostgreSQL store: where it is, connecting to it (failing
 * closed), its schema, and never showing its password. Internal to
 * registry/.
 *
 * Its tables live in the schema "wtproxy" of the database the URI names
 * (a database of its own, e.g. wtproxy_devtools; never the app's). */
#ifndef WTP_REG_PG_H
#define WTP_REG_PG_H

#include <event2/event.h>
#include <libpq-fe.h>
#include <stddef.h>

#include "reg_lease.h"

#define REG_PG_SCHEMA "wtproxy"
#define REG_PG_URI_MAX 1024           /* bytes of a registry URI or conninfo */
#define REG_PG_CONNECT_TIMEOUT "5"    /* seconds; libpq's default is to wait forever */
#define REG_PG_QUERY_TIMEOUT_MS 4000  /* the daemon's wait for one statement's answer */
#define REG_PG_SCHEMA_LOCK 0x77747078 /* advisory lock key ("wtpx") for creating tables */

/* --- reg_pg.c --- */

/* The registry the CLI uses: $WTPROXY_REGISTRY, else the `registry` key of
 * the config file ($WTPROXY_CONFIG). Returns 1 with it in out, 0 when none
 * is configured (the embedded store), -1 with err (an unreadable file). */
int reg_pg_configured(char *out, size_t outlen, char *err, size_t errlen);

/* Whether the URIs or conninfos a and b (either may be masked) name the
 * same database: host, port, database and user alike. */
int reg_pg_same_server(const char *a, const char *b);

/* The host and port uri connects to (libpq's defaults: PGHOST, PGPORT,
 * else localhost and 5432), for a pg_isready the user can run. */
void reg_pg_where(const char *uri, char *host, size_t hlen, char *port, size_t plen);

/* Whether WTPROXY_REGISTRY_OPTIONAL=1: an unreachable registry falls back
 * to the embedded store instead of failing. */
int reg_pg_optional(void);

/* The fix of msg, a registry's "permission denied" (SQLSTATE 42501) for
 * role on database db at host:port: that it runs, that the role lacks a
 * right, and the psql GRANT that gives it (CONNECT when msg is a refused
 * connection, CREATE on the database when creating the schema was
 * refused, else the use of the schema and its tables), into out. */
void reg_pg_grant_fix(const char *host, const char *port, const char *db, const char *role,
                      const char *msg, char *out, size_t len);
/* The same, with host, port, database and role those uri connects with. */
void reg_pg_uri_grant_fix(const char *uri, const char *msg, char *out, size_t len);
/* Whether msg, a registry's failure, says its role lacks a right. */
int reg_pg_denied(const char *msg);

/* uri (a libpq URI or conninfo string) with any password replaced by ***. */
void reg_pg_mask(const char *uri, char *out, size_t outlen);

/* Connect (PQconnectdb semantics: URI, conninfo, PG* variables) and make
 * sure the tables exist (created race-safely on first use). Returns the
 * connection, or NULL with err naming host, port, the masked URI and
 * libpq's error. */
PGconn *reg_pg_connect(const char *uri, char *err, size_t errlen);

/* Connect without touching any table: for the app's database server
 * (wtproxy db). what names it in err ("the database server"). A connect
 * that timed out (REG_PG_CONNECT_TIMEOUT) is tried once more: a server
 * busy starting many backends at once (16 claims in parallel) misses one
 * deadline, rarely two; a refusal or an authentication error is final. */
PGconn *reg_pg_dial(const char *uri, const char *what, char *err, size_t errlen);

/* Whether msg, libpq's error of a failed connect, says the connect timed
 * out (connect_timeout passed) rather than was refused or denied. */
int reg_pg_connect_timed_out(const char *msg);

/* Run sql with text params; a result that is not ok (COMMAND_OK or
 * TUPLES_OK) is cleared and NULL returned with err (libpq's message and
 * SQLSTATE). */
PGresult *reg_pg_exec(PGconn *c, const char *sql, int n, const char *const *params, char *err,
                      size_t errlen);

/* The SQLSTATE of the last failed reg_pg_exec on this thread, "" if none. */
const char *reg_pg_last_state(void);

/* The message of the last failed reg_pg_exec on this thread, "" if none. */
const char *reg_pg_last_error(void);

/* Whether the last failed reg_pg_exec on this thread ran out of time
 * (reg_pg_set_query_timeout) rather than failed. */
int reg_pg_last_late(void);

/* From now on, reg_pg_exec on this thread gives up on a query after ms
 * (0: waits as long as the server takes, the CLI's way). The daemon's
 * PostgreSQL thread sets REG_PG_QUERY_TIMEOUT_MS: a stopped server keeps
 * its connection open and never answers. */
void reg_pg_set_query_timeout(int ms);

/* --- reg_pg_lease.c: leases on the server (one row per resource) --- */

/* Claim c->id for holder c with ttl_ms (0: while c->pid runs). Returns 1
 * won (*out the lease), 0 refused (*out the holder), -1 with err. A dead
 * holder on this machine is taken over by compare-and-swap first. */
int reg_pg_claim(PGconn *pg, const struct reg_lease *c, long long ttl_ms, struct reg_lease *out,
                 char *err, size_t errlen);

/* Release r->id for releaser r (its machine, worktree and pid: who may,
 * reg_lease_may_release; anyone with force), by compare-and-swap on the
 * lease it read. Returns 1 released (*holder the lease it was), 0 not
 * held (*holder's id empty) or refused (*holder the lease), -1 with err. */
int reg_pg_release(PGconn *pg, const struct reg_lease *r, int force, struct reg_lease *holder,
                   char *err, size_t errlen);

/* Every lease as a JSON array (new reference), or NULL with err. This
 * machine's dead holders' leases are removed first, by compare-and-swap,
 * as the embedded store sweeps them: nobody else can see they are dead. */
json_t *reg_pg_leases(PGconn *pg, char *err, size_t errlen);

/* The control ops claim, release and leases (PROTOCOL.md "Leases") on the
 * server, for a daemon whose store it is. Returns the reply. */
json_t *reg_pg_lease_op(PGconn *pg, const char *op, json_t *req);

/* --- reg_pg_backends.c: the daemon's registrations, mirrored --- */

/* The daemon's link to the PostgreSQL store: it mirrors this machine's
 * registrations into wtproxy.backends (so every machine's `wtproxy ls`
 * sees them) and reads the other machines' back. Routing never reads it. */
struct reg_mirror;

/* Connect to uri. NULL with err when the store cannot be reached. */
struct reg_mirror *reg_mirror_open(const char *uri, char *err, size_t errlen);

/* Remove this machine's rows and disconnect (the daemon stops routing). */
void reg_mirror_close(struct reg_mirror *m);

/* Make this machine's rows equal entries (a JSON array of entries as
 * reg_backend_to_json makes them), in one transaction. A failure is
 * logged loudly and retried (reconnecting) on the next change. */
void reg_mirror_sync(struct reg_mirror *m, json_t *entries);

/* Append the other machines' entries to arr, each with "remote": true. */
void reg_mirror_others(struct reg_mirror *m, json_t *arr);

/* On the loop: add the store's state to a ping reply and return it:
 * "store" ("postgresql" or "embedded"), "registry" (masked),
 * "registry_ok", "registry_error" (as of the last job the loop heard of);
 * "registry_optional": true when a configured store was unreachable and
 * WTPROXY_REGISTRY_OPTIONAL=1 let the daemon run without. */
json_t *reg_mirror_status(const struct reg_mirror *m, json_t *reply);

/* On the loop: whether the daemon runs on the PostgreSQL store (m was
 * reached at start); then every call above but reg_mirror_status runs on
 * the PostgreSQL thread, reg_pg_worker.c. */
int reg_mirror_online(const struct reg_mirror *m);

/* On the PostgreSQL thread, around each job: the job was queued at
 * queued_ms (monotonic); at its end, the store's last failure ("" none)
 * is copied to error, for the loop to pass to reg_mirror_show. The end
 * returns 1 when the job reconnected to a store that had gone away: what
 * was not mirrored meanwhile is to be mirrored now. */
void reg_mirror_job_begin(struct reg_mirror *m, long long queued_ms);
int reg_mirror_job_end(struct reg_mirror *m, char *error, size_t errlen);

/* On the loop: the failure a job ended with, for reg_mirror_status. */
void reg_mirror_show(struct reg_mirror *m, const char *error);

/* A lease op (claim, release, leases) for the daemon: on the PostgreSQL
 * store when the daemon has one, so that a CLI without the registry's URI
 * still claims where the resource lives. NULL: use the embedded store. */
json_t *reg_mirror_lease_op(struct reg_mirror *m, const char *op, json_t *req);

/* The daemon's store at start: registry (the --registry / `registry =`
 * value), else $WTPROXY_REGISTRY; none: *m NULL, the embedded store.
 * Unreachable: -1 with err (the daemon must not start: fail closed),
 * unless WTPROXY_REGISTRY_OPTIONAL=1, which logs loudly and returns 0 with
 * a mirror that only remembers why (the embedded store serves). */
int reg_mirror_start(const char *registry, struct reg_mirror **m, char *err, size_t errlen);

/* --- reg_pg_worker.c: the PostgreSQL thread --- */

/* Every PostgreSQL call of the daemon runs on one thread, never on the
 * event loop: an unreachable or stopped store would hold every proxied
 * request of every worktree for its timeouts. Jobs run in order, one at a
 * time; each carries its own input and hands its answer back to the loop. */
struct reg_pgw;

/* A job's work, on the thread: in is the job's own (freed after); the
 * answer (may be NULL) goes to the job's done callback. */
typedef json_t *(*reg_pgw_fn)(struct reg_mirror *m, json_t *in);

/* On the loop: a job's answer, which the callback owns. */
typedef void (*reg_pgw_done)(void *arg, json_t *answer);

/* Start the thread for m (online). NULL with err. */
struct reg_pgw *reg_pgw_new(struct event_base *base, struct reg_mirror *m, char *err,
                            size_t errlen);

/* Stop the thread once its current job is over. The callbacks of the
 * finished jobs run with their answers, those of the jobs never run with
 * NULL. m is the caller's again. */
void reg_pgw_free(struct reg_pgw *w);

/* Queue fn(m, in) (in is consumed, also on failure); done(arg, answer)
 * runs on the loop when it is over (done NULL: nobody waits). Returns the
 * job, for reg_pgw_cancel, or NULL when out of memory (nothing queued). */
void *reg_pgw_submit(struct reg_pgw *w, reg_pgw_fn fn, json_t *in, reg_pgw_done done, void *arg);

/* The job's callback will not run (its answer is freed); the job may be
 * running, or over and on its way back. */
void reg_pgw_cancel(void *job);

/* fn(arg) runs on the loop after a job reconnected to the store (the
 * registry answers again): the registry mirrors the table again. */
void reg_pgw_on_reconnect(struct reg_pgw *w, void (*fn)(void *arg), void *arg);

/* --- reg_server_pg.c: the control ops that wait for the thread --- */

struct reg_peer;
struct reg_table;

/* What the daemon's registry keeps of its PostgreSQL thread. */
struct reg_pgops {
    struct reg_pgw *pgw; /* NULL: no PostgreSQL store; nothing below is called */
    json_t *sync_out;    /* entries to mirror once the current line is answered */
    int in_line;         /* a control line is being handled */
};

/* Mirror t (every change): now, or, while a control line is handled
 * (in_line), once it is: reg_pgops_line_done then makes its reply wait
 * for the mirror (a later change in the same line supersedes an earlier
 * one). */
void reg_pgops_mirror(struct reg_pgops *o, const struct reg_table *t);

/* The line is handled: mirror its change, if it made one. Returns 1 when
 * done(arg, NULL) runs on the loop once the mirror is over (the line's
 * reply waits for it); 0 when there is nothing to wait for (no change, done
 * NULL, or out of memory: then it is mirrored without a wait, if at all). */
int reg_pgops_line_done(struct reg_pgops *o, reg_pgw_done done, void *arg);

/* The ops claim, release, leases (req is copied), and list (entries: this
 * machine's, consumed; reply: the reply the entries of every machine go
 * in, consumed), answered to peer when the store has answered. Return
 * NULL (later), or the reply now: out of memory, or peer NULL (the
 * fuzzer's reg_server_request, which has no one to answer later). */
json_t *reg_pgops_lease_op(struct reg_pgops *o, struct reg_peer *peer, json_t *req);
json_t *reg_pgops_list(struct reg_pgops *o, struct reg_peer *peer, json_t *entries, json_t *reply);

/* Read the leases for the dashboard: cb(arg, view) on the loop, view as
 * reg_leases_view makes it. Returns the job (reg_pgw_cancel), NULL when
 * out of memory. */
void *reg_pgops_leases(struct reg_pgops *o, reg_pgw_done cb, void *arg);

/* The leases op's reply r (consumed) as {"store", "leases"} or {"store",
 * "error"} (registry.h, reg_server_leases). New reference. */
json_t *reg_leases_view(const char *store, json_t *r);

#endif
