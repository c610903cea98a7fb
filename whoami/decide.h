/* decide.h - the gate's decision, a pure function: from the server (its
 * target), what it last answered, the disk's fingerprint, the clock and a
 * little memory, the verdict on one request or the next thing to do.
 * gate.c does the I/O each action names and decides again; the unit test
 * (tests/unit/test_gate_decide.c) walks every verdict and grace. Internal
 * to whoami/. */
#ifndef WTP_WHOAMI_DECIDE_H
#define WTP_WHOAMI_DECIDE_H

#include <stddef.h>

#include "fetch.h"
#include "gate.h"
#include "refusal.h"
#include "whoami.h"

/* What whoami_decide returns besides an enum whoami_verdict. */
enum whoami_action {
    WA_FETCH = 100, /* ask /__whoami now (or take the answer on its way) */
    WA_RETRY,       /* wait; ask again in WHOAMI_POLL_MS */
    WA_LISTENER,    /* compare the socket listening now with the one asked, then decide again */
    WA_RESTART,     /* send the restart (SIGUSR1), then wait; if it cannot be sent, decide again */
    WA_DISK,        /* fingerprint want->root under want->patterns, then decide again */
    WA_HOLDERS,     /* find the processes holding the socket the answer came from, then decide
                     * again: a refusal names them all in the kill that stops the server */
    WA_IGNORED,     /* ask git whether it ignores every file that changed, then decide again: a
                     * stale refusal then says how to leave them out of the fingerprint */
};

/* The disk's fingerprint WA_DISK asks for: the checkout the server's
 * answer names (its worktree's top folder, or a folder inside it) under
 * its patterns, or, trusted without an answer, the worktree under the
 * default patterns. */
struct whoami_disk_want {
    const char *root;
    const struct whoami_patterns *patterns;
};

/* The gate's memory of one server. */
struct whoami_memory {
    int have;                        /* an exchange ended: the fields below hold */
    enum whoami_fetch_result result; /* how it ended */
    int status;                      /* its HTTP status, for WF_OK */
    const struct whoami_answer *ans; /* its usable answer; NULL none */
    const char *problem;             /* why there is none, a phrase */
    long long asked_ms;              /* when that exchange began */
    int answered;                    /* the server gave a usable answer before */
    long long restart_ms;            /* when its restart was sent; 0 not */
    long long restart_start_ms;      /* its registration's start then */
    long long prior_restart_ms;      /* when the restart before it was sent; 0 none */
    /* Facts gate.c looks up when asked to (WA_LISTENER, WA_RESTART, WA_HOLDERS, WA_IGNORED). */
    int listener_checked; /* listener_moved holds */
    int listener_moved;   /* another socket listens now than the one asked */
    int restart_failed;   /* the restart cannot be sent */
    int holders_checked;  /* holders holds (n 0: none found, or they cannot be) */
    struct whoami_holders holders;
    int ignored_checked; /* ignored_all holds */
    int ignored_all;     /* git ignores every file changed since the server started */
    /* Its error answer's Python traceback's last lines: its app fails to
     * load (whoami_traceback_tail); NULL none. */
    const char *traceback;
    /* The last usable answer it gave before its newest exchange, which
     * gave none, and when that answer was asked; NULL none. A server that
     * answered until its files changed and now answers an error was broken
     * by the change, not one without a middleware. */
    const struct whoami_answer *good;
    long long good_ms;
    const char *error_head; /* its error answer's first lines (whoami_error_head); "" none */
};

/* The fingerprint of the checkout on disk, once WA_DISK asked for it. */
struct whoami_disk {
    const struct whoami_fp *fp; /* NULL: it cannot be computed (err says why) */
    long long changed_ms;       /* when its hash last changed, 0 never seen to */
    const char *err;
    const char *worktree; /* the top folder of the root's worktree, "" in none */
};

/* One request's case. */
struct whoami_case {
    const struct whoami_gate_config *cfg;
    const struct whoami_target *target;
    const struct whoami_memory *mem;
    const struct whoami_disk *disk; /* NULL until WA_DISK is answered */
    long long since_ms;             /* when the request began to wait */
    long long now_ms;
    /* Asked with no request, after an edit (gate.h, whoami_recheck): a
     * stale server is shown so, never restarted (requests decide that) */
    int no_restart;
};

/* Whether folder is strictly inside worktree (both canonical): the
 * checkout an answer may name besides worktree itself (decide.c). */
int whoami_inside(const char *folder, const char *worktree);

/* Returns an enum whoami_verdict (detail filled for a refusal, st updated
 * with what it found) or an enum whoami_action (*want set for WA_DISK).
 * Writes nothing but st, *want and detail. */
int whoami_decide(const struct whoami_case *c, struct whoami_status *st,
                  struct whoami_disk_want *want, char *detail, size_t detlen);

#endif
