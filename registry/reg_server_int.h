/* reg_server_int.h - the registry server's state, shared by its files:
 * reg_server.c (saving, a control line and its held reply, life),
 * reg_server_live.c (liveness watches, the sweep, port reservations) and
 * reg_server_ops.c (what each op does). Internal to registry/. */
#ifndef WTP_REG_SERVER_INT_H
#define WTP_REG_SERVER_INT_H

#include <event2/event.h>
#include <jansson.h>
#include <limits.h>
#include <sys/types.h>

#include "reg_control.h"
#include "reg_lease.h"
#include "reg_pg.h"
#include "registry.h"

#define REG_SWEEP_MS 1000    /* TTLs, removed worktrees, reused pids */
#define REG_RESERVE_MS 60000 /* a reserved port is held this long */
/* Ports handed to dev servers: below Linux's ephemeral range (32768+), so
 * an outgoing connection never takes a port between reserve and bind. */
#define REG_PORT_FIRST 20000
#define REG_PORT_COUNT 10000
#define REG_MAX_RESERVED 1024

struct reservation {
    int port;
    long long until_ms;
};

struct reg_server {
    struct event_base *base;
    struct reg_control *control;
    struct event *sweep;
    struct reg_table *table;
    struct reg_lease_store *leases; /* claims on this machine (reg_lease_store.c) */
    struct reg_mirror *mirror;      /* the PostgreSQL store (reg_pg_backends.c), or NULL */
    struct reg_pgops pg;            /* its thread, when the daemon runs on it */
    char socket_path[PATH_MAX];
    char state_path[PATH_MAX];
    struct reservation reserved[REG_MAX_RESERVED];
    size_t nreserved;
    json_t *listen; /* the front addresses, for ping; NULL until told */
    json_t *daemon; /* the registry and flags the state file keeps: the last daemon's that served */
    json_t *mine;   /* this one's, kept there once it serves (reg_server_serving) */
    char registry_before[REG_PG_URI_MAX + 64]; /* the last daemon's, when this one has none */
    struct reg_saver *saver;                   /* writes the state file off the loop */
    int line_saved;     /* the control line being handled changed the table */
    int line_leases;    /* it claimed or released in the embedded store */
    char unsaved[640];  /* why the last save failed; "" once one succeeds */
    reg_server_ext ext; /* the ops of the layer above, or NULL */
    void *ext_arg;
    reg_server_on_state
        on_state; /* the layer above, told of ready, restarting, start-failed, drop */
    void *on_state_arg;
    /* servers that exited, what they said last (reg_last_words.c) */
    struct reg_last_words last_words[REG_LAST_WORDS_KEPT];
    size_t nlast_words;
};

struct watch {
    struct reg_server *rs;
    struct reg_backend *b;
    struct event *ev;
    int pidfd;
};

/* reg_server.c: hand the table to the writer thread and the PostgreSQL
 * mirror; the control line being handled waits for it (line_saved). */
void reg_server_save(struct reg_server *rs);

/* reg_last_words.c: keep what b's wrapper said of its server's end, the
 * `unregister` op's optional "exit" (PROTOCOL.md). Returns 0 (none given,
 * or kept) or -1 with err (a malformed "exit": the op is refused). */
int reg_last_words_keep(struct reg_server *rs, const struct reg_backend *b, json_t *req, char *err,
                        size_t errlen);
/* A server registers on (front, worktree): what its predecessor said is
 * not its own. */
void reg_last_words_forget(struct reg_server *rs, int front, const char *worktree);

/* reg_server_live.c */
void reg_server_unwatch(struct reg_backend *b);
/* Drop b from the table: marked dead first, for requests that hold it. */
void reg_server_drop(struct reg_server *rs, struct reg_backend *b, const char *why);
/* Watch b's pid with a pidfd: its end drops b at once. */
void reg_server_watch(struct reg_server *rs, struct reg_backend *b);
/* The one-second sweep (an event callback; arg is the reg_server). */
void reg_server_sweep(evutil_socket_t fd, short what, void *arg);
/* A port no entry, reservation or listener has; 0 when none is left. */
int reg_server_reserve_port(struct reg_server *rs);
void reg_server_unreserve(struct reg_server *rs, int port);

/* reg_server_ops.c */
/* r, with what a restart would forget when the last save failed. */
json_t *reg_server_unsaved_warning(const struct reg_server *rs, json_t *r);
/* The reply to req, or NULL when it comes later (through peer). */
json_t *reg_server_handle(struct reg_server *rs, struct reg_peer *peer, uid_t uid, json_t *req);

#endif
