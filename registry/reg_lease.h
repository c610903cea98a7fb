/* reg_lease.h - leases of named resources (a device, an emulator, a test
 * database's name): who holds one, the rules that say whether a claim
 * wins, and the two stores that apply them. It prints nothing; the one
 * sentence about a held resource is written here (reg_lease_held_message),
 * so that the daemon's refusal and the CLI's own on PostgreSQL are one.
 *
 * A lease is held by a holder: (machine, worktree, session, pid + its start
 * time). pid 0 is a manual claim, which must carry a TTL. A claim wins
 * when the resource is free, its lease expired, or the claimer is the very
 * same holder (a renewal). A holder on this machine whose pid no longer
 * runs (or runs as another process) is dead: its lease is taken over by
 * a claim, freed by a release from anywhere on this machine, and dropped
 * by the stores' sweeps (the embedded store's, and PostgreSQL's listing). */
#ifndef WTP_REG_LEASE_H
#define WTP_REG_LEASE_H

#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#define REG_LEASE_ID_MAX 200                        /* bytes of a resource name */
#define REG_LEASE_PURPOSE_MAX 256                   /* bytes of a purpose */
#define REG_LEASE_SESSION_MAX 128                   /* bytes of a session name */
#define REG_LEASE_MAX 4096                          /* leases the embedded store keeps */
#define REG_LEASE_TAKEOVERS 3                       /* dead holders replaced in one claim */
#define REG_LEASE_MESSAGE_MAX (2 * PATH_MAX + 2048) /* reg_lease_held_message */

struct reg_lease {
    char id[REG_LEASE_ID_MAX];
    char machine[128];
    char worktree[PATH_MAX];
    char session[REG_LEASE_SESSION_MAX];
    pid_t pid;                    /* 0: a manual claim */
    unsigned long long pid_start; /* the pid's start time, clock ticks */
    char purpose[REG_LEASE_PURPOSE_MAX];
    long long acquired_ms;
    long long expires_ms; /* 0: while the pid runs */
    char acquired_at[64]; /* PostgreSQL's exact text, for compare-and-swap */
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

/* Whether a release by r (its machine, worktree, pid + start; pid 0 for a
 * person's command) may free l: with force; a dead holder's (nobody is
 * left to release it); else only from l's machine and worktree, and of a
 * live holder's pid only by that process itself. */
int reg_lease_may_release(const struct reg_lease *l, const struct reg_lease *r, int force);

/* Into out (REG_LEASE_MESSAGE_MAX): why a claim (release 0) or a release
 * (1) of l's resource is refused, for whoever asked, at wall clock now_ms:
 * whose lease it is (machine, worktree, session, pid with its command on
 * this machine, purpose, age, expiry) and what frees it: the end of its
 * pid, to wait for (a release is also told the kill, for the run's owner);
 * a manual claim's release from its worktree; when abandoned, wtproxy
 * release --force. */
void reg_lease_held_message(const struct reg_lease *l, int release, long long now_ms, char *out,
                            size_t outlen);

/* The session of this process: $WTPROXY_SESSION, else "sid-<session id>". */
void reg_lease_session(char *out, size_t outlen);

/* The refusal reply (code: conflict for a claim, not-permitted for a
 * release) of a resource l holds: reg_lease_held_message, and "holder". */
json_t *reg_lease_held(const char *code, const struct reg_lease *l);

json_t *reg_lease_to_json(const struct reg_lease *l);
/* Returns 0, or -1 with err naming the field. */
int reg_lease_from_json(json_t *o, struct reg_lease *l, char *err, size_t errlen);

/* --- reg_lease_store.c: the embedded store, inside the daemon --- */

struct event_base;
struct reg_lease_store;
struct reg_saver;

/* Load the leases saved at path (missing: none), its writes to be done by
 * a writer thread that answers on base. NULL with err when out of memory
 * or the thread cannot be made. A file that cannot be parsed is reported
 * in warn and set aside. */
struct reg_lease_store *reg_lease_store_new(struct event_base *base, const char *path, char *warn,
                                            size_t warnlen, char *err, size_t errlen);
/* The write in flight finished and the pending one written, their
 * waiters answered, then the store freed. */
void reg_lease_store_free(struct reg_lease_store *ls);

/* The writer of ls's file: a claim's or release's reply waits on it
 * (reg_saver_wait) until the change is on disk. */
struct reg_saver *reg_lease_store_saver(struct reg_lease_store *ls);

/* The control ops (PROTOCOL.md "Leases"): claim, release, leases. uid is
 * the peer's. Each returns the reply object. */
json_t *reg_lease_store_op(struct reg_lease_store *ls, const char *op, json_t *req, uid_t uid);

/* The store in leases.json next to state_path (warnings logged), as
 * reg_lease_store_new. */
struct reg_lease_store *reg_lease_store_beside(struct event_base *base, const char *state_path,
                                               char *err, size_t errlen);

/* The releaser a release request describes (PROTOCOL.md "Leases": id,
 * worktree, the releasing pid, force), machine and pid start time filled
 * here. Returns NULL, or the error reply. */
json_t *reg_lease_releaser(json_t *req, struct reg_lease *r, int *force);

/* The claimer a claim request describes (PROTOCOL.md "Leases"), machine
 * and pid start time filled here. Returns NULL, or the error reply. */
json_t *reg_lease_claimer(json_t *req, struct reg_lease *c, long long *ttl_ms);

/* Drop leases whose TTL passed or whose holder died. */
void reg_lease_store_sweep(struct reg_lease_store *ls);

#endif
