/* client_fail.c - a connection's refusal answered (client.c is the
 * connection's life): logged, kept in the refusal log, the error page
 * written, then the connection kept or closed. */
#include "client.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "ondemand.h"
#include "refusal_log.h"

static int gateway_error(enum proxy_error e)
{
    return e == PE_NO_BACKEND || e == PE_BACKEND_UNREACHABLE || e == PE_BACKEND_HANGS ||
           e == PE_BACKEND_TIMEOUT || e == PE_BACKEND_BAD_RESPONSE || e == PE_AMBIGUOUS_WORKTREE ||
           e == PE_BACKEND_NOT_READY || e == PE_BACKEND_EXITED || e == PE_BACKEND_ENDED ||
           e == PE_AFTER_NOT_READY || e == PE_START_FAILED || e == PE_EDIT_FAILED ||
           e == PE_FIXED_UNSEEN || e == PE_WRONG_PORT || e == PE_SERVER_DIED ||
           e == PE_START_NO_DB || e == PE_START_DB_DOWN || e == PE_START_NO_WHOAMI ||
           e == PE_START_NO_DEPS || e == PE_APP_ERROR || e == PE_BROKEN ||
           e == PE_BAD_WTPROXY_FILE || e == PE_CHECKOUT_MISMATCH || e == PE_STALE_CODE ||
           e == PE_NO_WHOAMI || e == PE_WHOAMI_INVALID || e == PE_OUT_OF_FDS;
}

/* Keep c's refusal (status, reason, the detail and the fix the caller was
 * told) in the refusal log, with the caller, the named worktree and the
 * backend. */
static void record_refusal(struct proxy_client *c, enum proxy_error e, const char *detail,
                           const char *fix)
{
    if (!c->srv->refusals)
        return;
    const struct identify_kept *p = c->who;
    const char *space = strchr(c->path, ' ');
    struct refusal_info r = {
        .status = error_page_status(e),
        .reason = error_page_reason(e),
        .detail = detail,
        .fix = fix,
        .request = c->path,
        .peer = c->ip,
        .front = c->listener->port,
        .caller_pid = p ? p->pid : 0,
        .test_worker = p && p->pid > 0 ? caller_test_worker(p->pid, p->uid) : -1,
        .caller_process = p ? p->comm : NULL,
        .caller_worktree = p && c->who->placed ? p->worktree : NULL,
        /* The name is only meaningful once the head was read in full. */
        .named = space ? c->route_name : NULL,
        .backend_worktree = c->backend ? c->backend->worktree : NULL,
        .backend = c->backend ? c->backend->name : NULL,
    };
    refusal_log_add(c->srv->refusals, &r, (long long)proxy_now_ms(c->srv));
}

/* Whether the daemon started b's server from its worktree's .wtproxy:
 * then `wtproxy restart` starts it again after it died, and so does the
 * next request. */
static int started_from_file(struct proxy_client *c, const struct reg_backend *b)
{
    char log[PATH_MAX + 64] = "";
    if (c->srv->ondemand)
        ondemand_exited(c->srv->ondemand, b->worktree, b->front, log, sizeof log);
    return log[0] != '\0';
}

/* A failure of the server itself (unreachable, a bad response, none in
 * time): detail, then whose server it is and where its output is, so that
 * the caller looks at the right one. Returns detail or whose. */
static const char *with_whose(struct proxy_client *c, enum proxy_error e, const char *detail,
                              char *whose, size_t len)
{
    const struct reg_backend *b = c->backend;
    if (!b || !detail ||
        (e != PE_BACKEND_UNREACHABLE && e != PE_BACKEND_HANGS && e != PE_BACKEND_BAD_RESPONSE &&
         e != PE_BACKEND_TIMEOUT))
        return detail;
    if (!b->worktree[0])
        snprintf(whose, len, "%s; it is the default backend (wtproxy serve --backend %s)", detail,
                 b->name);
    else if (b->service[0] && started_from_file(c, b))
        snprintf(whose, len,
                 "%s; it is service `%s` of %s, started from its .wtproxy (pid %d); why it "
                 "stopped answering: wtproxy logs %s --service %s; start it again (also after "
                 "it died): cd %s && wtproxy restart --service %s --front %d (once it has "
                 "exited, the next request starts it too)",
                 detail, b->service, b->worktree, (int)b->pid, b->worktree, b->service, b->worktree,
                 b->service, b->front);
    else if (b->log[0])
        snprintf(whose, len,
                 "%s; it is the dev server of %s (pid %d); its output: wtproxy logs "
                 "%s --front %d",
                 detail, b->worktree, (int)b->pid, b->worktree, b->front);
    else if (b->pid > 0)
        snprintf(whose, len,
                 "%s; it is the dev server of %s (pid %d: %s), registered with "
                 "wtproxy register: its output is wherever it was started",
                 detail, b->worktree, (int)b->pid, b->command);
    else
        snprintf(whose, len,
                 "%s; it is the server registered for %s with wtproxy register "
                 "--ttl (no pid): its output is wherever it was started",
                 detail, b->worktree);
    return whose;
}

/* A detail with whose server it is (with_whose): the detail, and the
 * worktree named thrice. With the fix under it, the longest refusal: its
 * line in the daemon's log is whole (a traceback's last line names the
 * error). */
#define WHOSE_MAX (5 * PATH_MAX + 1024)
_Static_assert(WHOSE_MAX + CONN_FIX_MAX + 512 <= WTP_LOG_LINE_MAX,
               "the longest refusal fits a line of the daemon's log");

/* The refusal's line in the daemon's log, collapsed with the others of
 * its answer (conn_log). */
static void log_refusal(struct proxy_client *c, enum proxy_error e, const char *detail)
{
    char what[64];
    snprintf(what, sizeof what, "%d %s", error_page_status(e), error_page_reason(e));
    conn_log(c, what, "%s: %s from %s%s%s", what, c->path[0] ? c->path : "request", c->ip,
             detail ? ": " : "", detail ? detail : "");
}

void conn_fail_tunnel(struct proxy_client *c, enum proxy_error e, const char *detail,
                      const char *fix)
{
    log_refusal(c, e, detail);
    record_refusal(c, e, detail, fix);
    conn_close(c);
}

void conn_fail(struct proxy_client *c, enum proxy_error e, const char *detail)
{
    conn_fail_fix(c, e, detail, NULL);
}

void conn_fail_fix(struct proxy_client *c, enum proxy_error e, const char *detail, const char *fix)
{
    char whose[WHOSE_MAX];
    detail = with_whose(c, e, detail, whose, sizeof whose);
    /* A fix of its own is part of what was said: the daemon's log quotes
     * it too. */
    size_t n = fix && detail ? strlen(detail) + strlen(fix) + 2 : 0;
    char *said = n ? malloc(n) : NULL;
    if (said)
        snprintf(said, n, "%s\n%s", detail, fix);
    const char *told = said ? said : detail;
    log_refusal(c, e, told);
    if (c->resp_started) {
        /* Part of a response went out: an error page now would be taken
         * for its rest. Closing short is the only honest signal left. */
        free(said);
        conn_close(c);
        return;
    }
    free(said);
    upstream_release(c);
    /* The page's fix, e's own when c has none of its own: the record
     * says what the page said. */
    char own[ERROR_PAGE_FIX_MAX];
    error_page_fix(e, c->listener->port, own, sizeof own);
    record_refusal(c, e, detail, fix ? fix : own);
    int keep = gateway_error(e) && c->req_done && c->keepalive && !c->stopping &&
               !c->srv->stopping && !c->client_eof;
    error_page_write(stream_output(c->bev), e, c->accept[0] ? c->accept : NULL, detail, fix,
                     c->listener->port, !keep, c->is_head);
    c->resp_started = 1;
    if (keep)
        conn_next_request(c);
    else
        conn_close_after_flush(c);
}
