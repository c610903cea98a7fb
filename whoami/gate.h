/* gate.h - the /__whoami gate (DESIGN.md §6, PROTOCOL.md): before a
 * request reaches a backend, the backend has proven which checkout it
 * serves and that the code it loaded is the code on disk now.
 *
 * Per backend the gate keeps its last /__whoami answer; per (worktree,
 * patterns) the fingerprint of the disk (tree.h). A verified backend's
 * request passes with no round trip: one read of inotify's queue and a
 * string compare. A stale one is re-asked every WHOAMI_POLL_MS for
 * stale_grace (an autoreloading server comes back with the new code), or
 * restarted when it was started with --restart-on-stale; then refused. */
#ifndef WTP_WHOAMI_GATE_H
#define WTP_WHOAMI_GATE_H

#include <event2/event.h>
#include <stddef.h>

#include "registry.h"

#define WHOAMI_POLL_MS 100     /* re-asking a stale or reloading server */
#define WHOAMI_RECHECK_MS 1000 /* a refusal's answer is asked again after this */
/* A verified answer is asked again in the background when a request finds
 * it this old: a server swapped behind a port (same code, other process or
 * checkout) is found within this long, at no cost to the request. */
#define WHOAMI_REVERIFY_MS 2000
/* A verified answer also holds only while the socket listening on the
 * backend's address is the one that was asked: compared (one sock_diag
 * lookup, about 4 µs) at most this often, so a server swapped behind the
 * port is asked before it serves a request, but for this window. */
#define WHOAMI_LISTENER_MS 50

struct whoami_gate_config {
    unsigned timeout_ms;       /* whoami_timeout: one /__whoami exchange */
    unsigned stale_grace_ms;   /* stale_grace: a stale server may reload meanwhile */
    unsigned reload_grace_ms;  /* reload_grace: a server not answering at all */
    unsigned start_timeout_ms; /* start_timeout: a server restarted for being stale */
    int trust_registry;        /* no /__whoami: trust the registration */
    int use_inotify;           /* whoami_watch: 1 inotify, 0 stat scans */
};

enum whoami_verdict {
    WHOAMI_PASS,
    WHOAMI_MISMATCH,    /* checkout-mismatch: it serves another checkout */
    WHOAMI_STALE,       /* stale-code: it loaded older code than the disk's */
    WHOAMI_NO_WHOAMI,   /* no-whoami: it does not answer /__whoami */
    WHOAMI_INVALID,     /* whoami-invalid: its answer is unusable */
    WHOAMI_UNREACHABLE, /* it does not answer at all, past reload_grace */
};

/* The X-Wtproxy-Refused value of a refusal ("checkout-mismatch", ...). */
const char *whoami_verdict_reason(enum whoami_verdict v);

struct whoami_gate;

struct whoami_gate *whoami_gate_new(struct event_base *base, const struct whoami_gate_config *cfg);
void whoami_gate_free(struct whoami_gate *g);
void whoami_gate_configure(struct whoami_gate *g, const struct whoami_gate_config *cfg);

/* The verdict on a request to b from worktree (the checkout b must serve).
 * detail gets the refusal's sentence, with the command that fixes it. */
typedef void (*whoami_gate_cb)(void *arg, enum whoami_verdict v, const char *detail);

/* Decided now: returns the verdict (detail filled for a refusal). Not yet:
 * returns -1 with *ticket set, and cb runs later from the loop unless
 * whoami_gate_cancel(ticket) runs first. */
int whoami_gate_check(struct whoami_gate *g, struct reg_backend *b, const char *worktree,
                      whoami_gate_cb cb, void *arg, void **ticket, char *detail,
                      size_t detlen);
void whoami_gate_cancel(struct whoami_gate *g, void *ticket);

/* b's server did not answer a request (refused, or closed unanswered): its
 * answer no longer holds, and the next check asks again. */
void whoami_gate_forget(struct whoami_gate *g, struct reg_backend *b);

#endif
