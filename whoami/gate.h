/* gate.h - the /__whoami gate (PROTOCOL.md): before a
 * request reaches a backend, the backend has proven which checkout it
 * serves and that the code it loaded is the code on disk now.
 *
 * The gate knows no registry: its caller describes each server as a plain
 * whoami_target and keeps, per server, the gate's handle (whoami_server),
 * whose status it copies wherever people read it (ls, the dashboard).
 * Per server the gate keeps its last /__whoami answer; per (checkout,
 * patterns) the fingerprint of the disk (tree.h), computed on a worker
 * thread: the checkout its answer names, the worktree's top or a folder
 * of the worktree's own inside it (decide.c). A verified server's request
 * passes with no round trip: one read of inotify's queue and a string
 * compare. A stale one is re-asked every
 * WHOAMI_POLL_MS for stale_grace (an autoreloading server comes back with
 * the new code), longer while its answer says taking_in (up to
 * start_timeout), or restarted when it was started with --restart-on-stale;
 * then refused. The decision itself is decide.h's, a pure function.
 * When a watched tree's fingerprint moves, its servers shown as serving
 * the older code say "changed" at once and are asked again with no
 * request (recheck.c), so that what people read follows the disk. */
#ifndef WTP_WHOAMI_GATE_H
#define WTP_WHOAMI_GATE_H

#include <limits.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

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

struct event_base;

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
    WHOAMI_APP_ERROR, /* its app fails to load: it answers a Python traceback, past reload_grace */
    WHOAMI_BROKEN,    /* it answered /__whoami until its files changed, now an error status */
};

/* The X-Wtproxy-Refused value of a refusal ("checkout-mismatch", ...). */
const char *whoami_verdict_reason(enum whoami_verdict v);

/* One dev server, as the caller knows it. The strings and addr are not
 * copied: they must stay valid as long as the server's handle. */
struct whoami_target {
    const struct sockaddr *addr; /* where it listens */
    socklen_t addrlen;
    const char *name; /* "HOST:PORT": the Host of /__whoami, and messages */
    int port;
    const char *checkout;         /* the checkout it must serve (canonical path) */
    pid_t pid;                    /* its pid, 0 unknown */
    unsigned long long pid_start; /* the pid's start time (clock ticks): a reused pid differs */
    int restart_on_stale;         /* its wrapper restarts it on SIGUSR1 */
    const char *command;          /* what runs there ("" unknown), for the restart hint */
    long long started_ms;         /* when it started, 0 unknown */
    long long registered_ms;      /* when it was registered */
    int front;                    /* the front port it is registered on, 0 unknown */
    int by_run;                /* a `wtproxy run` wrapper: `wtproxy restart` and `stop` reach it */
    const char *service;       /* its `.wtproxy` service ("" none), for the restart hint */
    const char *shell_command; /* command's words quoted for a shell ("" unknown), for the hint */
    int declared; /* its worktree's .wtproxy declares a server on front: `wtproxy restart` */
    /* Another worktree's live registration of the same port (front 0:
     * none): a server in use there, which a refusal never says to kill. */
    int other_front;
    pid_t other_pid;
};

/* What the gate last found about one server, for ls and the dashboard.
 * state "" means never checked. seq changes whenever anything else does,
 * so the caller copies it only then. */
struct whoami_status {
    /* "verified", "trusted", "stale", "mismatch", "no-whoami", "invalid";
     * "unchecked": its server is new and not asked yet; "changed": the
     * code on disk changed since it was verified and it is asked again
     * (recheck.c), "taking-in" while its answer says taking_in; "app-error":
     * it answers a Python traceback; "broken": it answered until its files
     * changed and now answers an error status (decide.c) */
    char state[16];
    char detail[1024];       /* the reason, a sentence for people */
    char checkout[PATH_MAX]; /* the checkout the server said it serves */
    char hash[72];           /* its fingerprint, "sha256:<hex>" */
    char disk_hash[72];      /* the fingerprint of the files on disk then */
    long long checked_ms;    /* when its /__whoami was last read */
    unsigned long refused;   /* requests the gate refused */
    unsigned long seq;
    int silent; /* "unchecked", and nothing answered its /__whoami when asked (not listening,
                 * or closed without a byte): said at once, so that a command waiting for a
                 * verdict need not wait for reload_grace to learn it */
};

struct whoami_gate;
struct whoami_server;

/* NULL when out of memory or when the fingerprint worker cannot start. */
struct whoami_gate *whoami_gate_new(struct event_base *base, const struct whoami_gate_config *cfg);
/* The servers' handles stay valid (and inert) until released. */
void whoami_gate_free(struct whoami_gate *g);
void whoami_gate_configure(struct whoami_gate *g, const struct whoami_gate_config *cfg);

/* The gate's memory of one server, kept by the caller with whatever
 * describes the server (a registration) and released with it (the last
 * server of a checkout takes its fingerprint and inotify watches along).
 * NULL when out of memory. */
struct whoami_server *whoami_server_new(struct whoami_gate *g);
void whoami_server_release(void *server); /* void *: a release hook's shape */
const struct whoami_status *whoami_server_status(const struct whoami_server *s);

/* Whether s's last /__whoami ask found a server that takes connections and
 * answers nothing whole in time (or cuts its answer short): a
 * WHOAMI_UNREACHABLE of one that hangs, not of one that does not listen. */
int whoami_server_hangs(const struct whoami_server *s);

/* The verdict on a request to server s, described by t. detail gets the
 * refusal's sentence, with the command that fixes it. */
typedef void (*whoami_gate_cb)(void *arg, enum whoami_verdict v, const char *detail);

/* Decided now: returns the verdict (detail filled for a refusal). Not yet
 * (an answer or the disk's fingerprint is awaited): returns -1 with
 * *ticket set, and cb runs later from the loop unless
 * whoami_gate_cancel(ticket) runs first. */
int whoami_gate_check(struct whoami_server *s, const struct whoami_target *t, whoami_gate_cb cb,
                      void *arg, void **ticket, char *detail, size_t detlen);
void whoami_gate_cancel(struct whoami_gate *g, void *ticket);

/* s's server did not answer a request (refused, or closed unanswered): its
 * answer no longer holds, and the next check asks again. With why, the
 * status says "unchecked" and why; while an ask is under way, once it
 * ends without an answer (one means the server listens again). */
void whoami_gate_forget(struct whoami_server *s, const char *why);

/* Another process now serves s (its wrapper restarts it): its answer and
 * its verdict were the old process's. Both are forgotten, an exchange
 * with the old one dropped, and the status says "unchecked" with why, so
 * that ls never shows the old verdict as the new server's. */
void whoami_server_restarted(struct whoami_server *s, const char *why);

/* Why the gate last asked s's wrapper to restart it ("its code changed
 * since it started (1 file: data/notes.json)..."), into out, once: "" when
 * it did not since (a `wtproxy restart`). */
void whoami_server_restart_why(struct whoami_server *s, char *out, size_t outlen);

/* Verify s's server, described by t, with no request waiting: at once
 * (returns the verdict, the status updated) or later (returns -1, the
 * status "unchecked" meanwhile). Nothing is refused or counted; a stale
 * server started with --restart-on-stale is restarted, as for a request.
 * The status changes later are told by the watch below. */
int whoami_gate_probe(struct whoami_server *s, const struct whoami_target *t);

/* fn(arg) runs on the loop after s's status changed outside a check's
 * return (a probe or a request decided later): whoever shows the status
 * copies it then. */
void whoami_server_watch(struct whoami_server *s, void (*fn)(void *arg), void *arg);

#endif
