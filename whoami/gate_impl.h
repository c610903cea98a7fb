/* gate_impl.h - what gate.c (asking, waiting) and judge.c (deciding, with
 * the facts decide.c asks for) share. Internal to whoami/. */
#ifndef WTP_WHOAMI_GATE_IMPL_H
#define WTP_WHOAMI_GATE_IMPL_H

#include <event2/event.h>
#include <sys/queue.h>

#include "decide.h"
#include "fetch.h"
#include "gate.h"
#include "host.h"
#include "whoami.h"

/* Besides decide.h's: the disk's fingerprint is being computed; a fact
 * is being looked up on a worker, which settles the server once found:
 * the processes holding its socket (holders.c), whether git ignores the
 * files that changed (ignored.c). */
enum { G_DISK = 200, G_LOOKUP };

struct waiter {
    struct whoami_server *s;
    long long since_ms;
    unsigned long disk_ticket; /* tree.h: which fingerprint it may use */
    whoami_gate_cb cb;         /* NULL: a probe (whoami_gate_probe), no request */
    void *arg;
    TAILQ_ENTRY(waiter) link;
};

struct whoami_server {
    struct whoami_gate *g;  /* NULL once the gate is gone */
    struct whoami_target t; /* as of the last check */
    struct whoami_status st;
    struct whoami_fetch *fetch;    /* an exchange in flight */
    struct event *poll;            /* the next exchange, for waiters */
    int have;                      /* an exchange ended: res and the rest hold */
    struct whoami_fetch_reply res; /* body and error not kept: see below */
    char problem[256];             /* why res is not a usable answer */
    char traceback[1024];          /* res's error body's Python traceback's last lines, "" none */
    char forgotten[1024];          /* why its server was found not listening during an ask: told
                                    * unless that ask gets an answer (whoami_gate_forget) */
    struct whoami_answer ans;
    int have_ans;
    long long ans_ms; /* when the exchange behind ans began */
    /* Its last usable answer before the newest, kept while it gives none
     * (decide.h's good): a restart keeps it too. */
    struct whoami_answer good;
    int have_good;
    long long good_ms;
    char error_head[512];       /* res's error body's first lines (whoami_error_head), "" none */
    long long asked_ms;         /* when the exchange behind res began */
    long long restart_ms;       /* when we asked its wrapper to restart it, 0 not */
    long long restart_start_ms; /* its registration's start_ms then */
    long long prior_restart_ms; /* when the restart before it was sent, 0 none */
    unsigned long listener;     /* inode of the socket listening when asked; 0 unknown */
    long long listener_ms;      /* when it was last compared with the one there now */
    int refresh;                /* a background re-ask is due (WHOAMI_REVERIFY_MS) */
    int answered;               /* it has given a usable answer before */
    int disk_wait;              /* a waiter waits for the disk's fingerprint */
    int released;               /* its caller let go while the gate was busy */
    /* Re-asked after an edit, with no request (recheck.c): since when
     * (the disk's change; 0 none under way), its timer, asks so far. */
    long long edit_ms;
    struct event *recheck;
    int edit_ask;              /* the timer asks /__whoami; else it decides */
    unsigned edit_asks;        /* asks since edit_ms: the next waits longer */
    unsigned long edit_ticket; /* tree.h: the fingerprint it may use */
    /* The processes holding the socket its answer came from, as found
     * for that listener's inode and the pid that answered (holders.c);
     * a lookup under way is holders_job. */
    unsigned long holders_of;
    pid_t holders_for;
    pid_t holders[HOST_PORT_HOLDERS_MAX];
    size_t nholders;
    struct whoami_holders_job *holders_job;
    /* Whether git ignores every file changed since ignored_since in the
     * disk whose hash is ignored_of (ignored.c); a lookup under way is
     * ignored_job. */
    char ignored_of[WHOAMI_HASH_SIZE];
    long long ignored_since;
    int ignored_all;
    struct whoami_ignored_job *ignored_job;
    /* What made the gate restart it, told once (whoami_server_restart_why),
     * so that its log says which files; "" none. */
    char restart_why[3000];
    void (*watch)(void *arg); /* told when st changed later (whoami_server_watch) */
    void *watch_arg;
    TAILQ_HEAD(, waiter) waiters;
    LIST_ENTRY(whoami_server) link;
};

struct whoami_gate {
    struct event_base *base;
    struct whoami_gate_config cfg;
    struct whoami_trees *trees;
    struct host_diag *diag; /* NULL without sock_diag: swaps are found by re-asking */
    struct whoami_holders_worker *holders; /* NULL: refusals name the pid that answered */
    struct whoami_ignored_worker *ignored; /* NULL: refusals do not say what git ignores */
    int busy;                              /* running waiters' callbacks: released servers wait */
    LIST_HEAD(, whoami_server) servers;
};

/* The loop's cached clock, unix ms. */
long long whoami_gate_now(struct whoami_gate *g);

/* The inode of the socket listening on s's address now; 0 none, unknown. */
unsigned long whoami_gate_listener(struct whoami_server *s);

/* The verdict for a request of s waiting since since: decide.c's, with
 * the facts it asks for looked up (the listener, a restart sent, the
 * disk). Returns an enum whoami_verdict, WA_FETCH, WA_RETRY or G_DISK
 * (*disk_ticket then says which fingerprint will do, tree.h). no_restart:
 * the recheck's, with no request (decide.h). */
int whoami_gate_judge(struct whoami_server *s, long long since, int no_restart,
                      unsigned long *disk_ticket, char *detail, size_t detlen);

/* (gate.c) Ask s's /__whoami now, unless an exchange is under way; its
 * answer settles s's waiters and its recheck. */
void whoami_gate_ask(struct whoami_server *s);

/* (gate.c) s's server answered nothing within reload_grace: "unchecked",
 * saying so, until a request asks again. */
void whoami_gate_unanswered(struct whoami_server *s);

/* (gate.c) Tell s's watcher when its status moved past seq. */
void whoami_gate_told(struct whoami_server *s, unsigned long seq);

/* (gate.c) Decide again for s's waiters, and its recheck: a fact they
 * waited for is known. */
void whoami_gate_settle(struct whoami_server *s);

/* --- holders.c: the processes holding a server's socket, on a worker --- */

struct whoami_holders_worker;

/* The thread, its finished jobs handed to whoami_gate_settle on g's loop.
 * NULL when it cannot start. */
struct whoami_holders_worker *whoami_holders_worker_new(struct whoami_gate *g);

/* Stop the thread; the servers whose lookups were under way find none. */
void whoami_holders_worker_free(struct whoami_holders_worker *w);

/* The processes holding the socket s's answer came from (s->listener),
 * into out: 1 when known (n 0: none found), -1 when they cannot be
 * looked up (no worker, no listener known, out of memory: out->n 0), 0
 * while a /proc scan finds them (milliseconds, never on the loop): s is
 * settled once they are found. */
int whoami_holders_get(struct whoami_server *s, struct whoami_holders *out);

/* s goes: a lookup under way for it is let go. */
void whoami_holders_drop(struct whoami_server *s);

/* --- ignored.c: whether git ignores every changed file, on a worker --- */

struct whoami_ignored_worker;

/* The thread, its finished jobs handed to whoami_gate_settle on g's loop.
 * NULL when it cannot start. */
struct whoami_ignored_worker *whoami_ignored_worker_new(struct whoami_gate *g);

/* Stop the thread; the servers whose lookups were under way learn nothing. */
void whoami_ignored_worker_free(struct whoami_ignored_worker *w);

/* Whether git ignores every file of disk (fingerprinted at root) changed
 * since since_ms, into *all: 1 when known (*all 0 too when no file
 * changed, more than WHOAMI_IGNORED_MAX did, or git cannot say), 0 while
 * `git check-ignore` runs (never on the loop): s is settled once it ends. */
int whoami_ignored_get(struct whoami_server *s, const char *root, const struct whoami_fp *disk,
                       long long since_ms, int *all);

/* s goes: a lookup under way for it is let go. */
void whoami_ignored_drop(struct whoami_server *s);

/* --- recheck.c: a server asked again after an edit, with no request --- */

/* The trees' changed (tree.h), arg the gate: each server shown as
 * serving root's code under p (verified, or already rechecking, or stale)
 * is shown "changed" at once and asked again. */
void whoami_recheck_changed(void *arg, const char *root, const struct whoami_patterns *p,
                            const char *hash, long long changed_ms);

/* The recheck timer's callback (s->recheck). */
void whoami_recheck_cb(evutil_socket_t fd, short what, void *arg);

/* s's recheck decides again in ms (ask 0), or asks its /__whoami then. */
void whoami_recheck_soon(struct whoami_server *s, unsigned ms, int ask);

/* No recheck under way for s any more (its server restarted, or went). */
void whoami_recheck_stop(struct whoami_server *s);

#endif
