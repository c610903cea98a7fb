/* error_page.h - the responses wtproxy writes itself.
 *
 * Each failure on the request path is one named reason with one status and
 * one message; the body says what happened and the one thing to do, in the
 * format the caller asked for (Accept: HTML, JSON, else plain text). */
#ifndef WTP_ERROR_PAGE_H
#define WTP_ERROR_PAGE_H

#include <event2/buffer.h>

enum proxy_error {
    PE_BAD_REQUEST,
    PE_REQUEST_LINE_TOO_LONG,
    PE_HEAD_TOO_LARGE,
    PE_TOO_MANY_HEADERS,
    PE_HEAD_TIMEOUT,
    PE_UNSUPPORTED_TE,
    PE_UNSUPPORTED_METHOD,
    PE_METHOD_TOO_LONG,
    PE_NO_BACKEND,
    PE_AMBIGUOUS_WORKTREE,
    PE_OTHER_USER,
    PE_BACKEND_NOT_READY,
    PE_BACKEND_EXITED,  /* backend-not-ready too, but it exited: said in its headline */
    PE_BACKEND_ENDED,   /* backend-not-ready too: it served, then exited (an edit broke it) */
    PE_AFTER_NOT_READY, /* backend-not-ready too: a service it is started after was not ready */
    PE_START_FAILED,    /* backend-not-ready too: its start failed and it waits for a change */
    PE_EDIT_FAILED,     /* backend-not-ready too: ready, then an edit broke it; it waits */
    PE_WRONG_PORT,      /* backend-not-ready too: it listens, on another port than its own */
    PE_SERVER_DIED,     /* backend-not-ready too: it served; its serving process died under a
                         * reloader that holds the port, and nobody accepts there */
    PE_FIXED_UNSEEN,    /* backend-not-ready too: failed, files changed since, not restarted */
    PE_START_NO_DB,     /* backend-not-ready too: failed at start, its dev database missing */
    PE_START_DB_DOWN,   /* backend-not-ready too: failed at start, its PostgreSQL does not answer */
    PE_START_NO_WHOAMI, /* backend-not-ready too: failed, its /__whoami package missing */
    PE_START_NO_DEPS,   /* backend-not-ready too: failed, a package the app declares missing */
    PE_APP_ERROR,       /* backend-not-ready too: it answers a Python traceback (the gate's) */
    PE_BROKEN,          /* backend-not-ready too: it answered /__whoami until its files changed,
                         * now an error (the gate's) */
    PE_BAD_WTPROXY_FILE,
    PE_BACKEND_UNREACHABLE,
    PE_BACKEND_HANGS, /* backend-unreachable too: it takes the connection, answers nothing */
    PE_BACKEND_BAD_RESPONSE,
    PE_BACKEND_TIMEOUT,
    PE_IDENTIFY_TIMEOUT,
    PE_OUT_OF_FDS,
    /* The /__whoami gate's refusals (whoami/gate.h): they also carry
     * X-Wtproxy-Refused. Like every reason a test runner's request can
     * meet (all but a malformed request's 400), a status of 404 or
     * above, so that a test runner never takes a refused server for a
     * ready one. */
    PE_CHECKOUT_MISMATCH,
    PE_STALE_CODE,
    PE_NO_WHOAMI,
    PE_WHOAMI_INVALID,
};

/* The binary the fixes' `wtproxy` commands mean, when a shell does not
 * find it by that name (run from a build folder: the README's first
 * command): prog its path, other the wtproxy PATH finds instead ("" for
 * none). A page whose fix or detail names a wtproxy command then says so
 * under its fix. Called once at start, before any request. */
void error_page_set_program(const char *prog, const char *other);

int error_page_status(enum proxy_error e);
#define ERROR_PAGE_FIX_MAX 1024 /* an own Fix line, its --front written in */

/* e's own Fix line for a request to front (its commands with --front when
 * that is not the default front), into out. */
void error_page_fix(enum proxy_error e, int front, char *out, size_t len);
const char *error_page_reason(enum proxy_error e);

/* Append a complete response for e to out. accept is the request's Accept
 * value (NULL when unknown); detail is the specific cause (e.g. "connect to
 * 127.0.0.1:8001: Connection refused"), NULL for none; fix is the Fix line
 * when the caller knows a better one than e's (NULL: e's); front is the port the
 * request came to: a fix that names a `wtproxy` command names it with
 * --front when it is not the default one (pasted without it, the command
 * acts on another front); close adds
 * Connection: close; head (the request was HEAD) leaves the body out, as
 * RFC 9110 §9.3.2 requires: a kept-alive client would read it as the
 * start of its next response. */
void error_page_write(struct evbuffer *out, enum proxy_error e, const char *accept,
                      const char *detail, const char *fix, int front, int close, int head);

#endif
