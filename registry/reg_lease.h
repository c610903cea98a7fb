/* reg_lease.h - leases of named resources (a device, an emulator, a test
 * database's name): who holds one, the rules that say whether a claim
 * wins, and the two stores that apply them. Internal to registry/.
 *
 * A lease is held by a holder: (machine, worktree, session, pid + its start
 * time). pid 0 is a manual claim, which must carry a TTL. A claim wins
 * when the resource is free, its lease expired, or the claimer is the very
 * same holder (a renewal). A holder on this machine whose pid no longer
 * runs (or runs as another process) is dead: its lease is taken over. */
#ifndef WTP_REG_LEASE_H
#define WTP_REG_LEASE_H

#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#define REG_LEASE_ID_MAX 200       /* bytes of a resource name */
#define REG_LEASE_PURPOSE_MAX 256  /* bytes of a purpose */
#define REG_LEASE_SESSION_MAX 128  /* bytes of a session name */
#define REG_LEASE_MAX 4096         /* leases the embedded store keeps */
#define REG_LEASE_TAKEOVERS 3      /* dead holders replaced in one claim */

struct reg_lease {
    char id[REG_LEASE_ID_MAX];
    char machine[128];
    char worktree[PATH_MAX];
    char session[REG_LEASE_SESSION_MAX];
    pid_t pid;                     /* 0: a manual claim */
    unsigned long long pid_start;  /* the pid's start time, clock ticks */
    char purpose[REG_LEASE_PURPOSE_MAX];
    long long acquired_ms;
    long long expires_ms;          /* 0: while the pid runs */
    char acquired_at[64];          /* PostgreSQL's exact text, for compare-and-swap */
};

/* --- reg_lease.c: the model and its rules --- */

/* Check a resource name: 1..REG_LEASE_ID_MAX-1 printable ASCII bytes, no
 * spaces. Returns 0, or -1 with err. */
int reg_lease_check_id(const char *id, char *err, size_t errlen);

/* Whether a and b are the same holder (every field of the holder equal). */
int reg_lease_same_holder(const struct reg_lease *a, const struct reg_lease *b);

/* Whether l's TTL has passed at now_ms. */
int reg_lease_expired(const struct reg_lease *l, long long now_ms);

/* Whether l's holder is certainly dead: on this machine, with a pid that
 * no longer runs or now belongs to another process. */
int reg_lease_holder_dead(const struct reg_lease *l);

/* The session of this process: $WTPROXY_SESSION, else "sid-<session id>". */
void reg_lease_session(char *out, size_t outlen);

json_t *reg_lease_to_json(const struct reg_lease *l);
/* Returns 0, or -1 with err naming the field. */
int reg_lease_from_json(json_t *o, struct reg_lease *l, char *err, size_t errlen);

/* Print on stderr why a claim of holder's resource was refused: who holds
 * it (machine, worktree, purpose, age) and the commands that free it. */
void reg_lease_report_holder(json_t *holder);

/* --- reg_lease_store.c: the embedded store, inside the daemon --- */

struct reg_lease_store;

/* Load the leases saved at path (missing: none). NULL only out of memory.
 * A file that cannot be parsed is reported in warn and set aside. */
struct reg_lease_store *reg_lease_store_new(const char *path, char *warn, size_t warnlen);
void reg_lease_store_free(struct reg_lease_store *ls);

/* The control ops (PROTOCOL.md "Leases"): claim, release, leases. uid is
 * the peer's. Each returns the reply object. */
json_t *reg_lease_store_op(struct reg_lease_store *ls, const char *op, json_t *req, uid_t uid);

/* The store in leases.json next to state_path (warnings logged). NULL
 * with err only out of memory. */
struct reg_lease_store *reg_lease_store_beside(const char *state_path, char *err, size_t errlen);

/* The claimer a claim request describes (PROTOCOL.md "Leases"), machine
 * and pid start time filled here. Returns NULL, or the error reply. */
json_t *reg_lease_claimer(json_t *req, struct reg_lease *c, long long *ttl_ms);

/* {"ok": false, "error": code, "message": ...} */
json_t *reg_lease_fail(const char *code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Drop leases whose TTL passed or whose holder died. */
void reg_lease_store_sweep(struct reg_lease_store *ls);

#endif

/* --- reg_lease_client.c: the CLI's side, whichever store is in use --- */


/* The store the CLI uses: *pg a connection to the configured PostgreSQL
 * store, or NULL for the daemon's embedded store. A configured store that
 * cannot be reached is an error (fail closed) unless
 * WTPROXY_REGISTRY_OPTIONAL=1, which warns and returns the embedded one.
 * Returns 0, or -1 with err. */
int reg_lease_open(void **pg, char *err, size_t errlen);
void reg_lease_close(void *pg);

/* Claim c->id for c with ttl_ms. Returns 1 won, 0 refused, both with *info
 * (the lease, or the holder: a new reference), -1 with err. */
int reg_lease_claim(void *pg, const struct reg_lease *c, long long ttl_ms, json_t **info,
                    char *err, size_t errlen);

/* Release id held from worktree (any holder with force). Returns 1
 * released, 0 not held or held by another (*holder then, else NULL), -1
 * with err. */
int reg_lease_release(void *pg, const char *id, const char *worktree, int force,
                      json_t **holder, char *err, size_t errlen);

/* Every lease (a new JSON array), or NULL with err. */
json_t *reg_lease_list(void *pg, char *err, size_t errlen);
