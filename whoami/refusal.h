/* refusal.h - the sentences of the gate's refusals (gate.c): what happened,
 * whose server it is, and the command that fixes it. Internal to whoami/. */
#ifndef WTP_WHOAMI_REFUSAL_H
#define WTP_WHOAMI_REFUSAL_H

#include <stddef.h>

#include "gate.h"
#include "whoami.h"

#define WHOAMI_NAMED_FILES 3 /* changed files a stale refusal names */
/* changed files git is asked about (ignored.c): more at once are not a
 * data file the server writes */
#define WHOAMI_IGNORED_MAX 64

/* The processes holding the socket a server's answer came from, as
 * gate.c found them (holders.c, on a worker): a prefork server's master
 * and the workers it forked (gunicorn, morbo, uvicorn --workers), whose
 * /__whoami answers from a worker. n 0: not known. */
struct whoami_holders {
    const pid_t *pid; /* ascending */
    size_t n;
};

/* t's port answers for ans->checkout, not for t->checkout; nested: the
 * other worktree, inside t->checkout, that ans->checkout is in (NULL: not
 * inside); h: the processes holding its socket (NULL: not known), all
 * named in the kill that stops it. */
void whoami_refusal_mismatch(const struct whoami_target *t, const struct whoami_answer *ans,
                             const char *nested, const struct whoami_holders *h, char *out,
                             size_t outlen);

/* t loaded older code than disk; restarted: wtproxy already restarted it.
 * One with t->restart_on_stale is said to be restarted at the next request.
 * ignored: git ignores every file that changed, which is then said with
 * the exclude that leaves them out of the fingerprint. h as for
 * whoami_refusal_mismatch. */
void whoami_refusal_stale(const struct whoami_target *t, const struct whoami_answer *ans,
                          const struct whoami_fp *disk, int restarted, int ignored,
                          const struct whoami_holders *h, char *out, size_t outlen);

/* t answered /__whoami with HTTP status (404 mostly). */
void whoami_refusal_no_whoami(const struct whoami_target *t, int status, const char *said,
                              char *out, size_t outlen);

/* t answered /__whoami with HTTP status and a Python traceback, whose
 * last lines are traceback: its app fails to load. */
void whoami_refusal_app_error(const struct whoami_target *t, int status, const char *traceback,
                              char *out, size_t outlen);

/* A server that answered /__whoami and now answers it with an error. */
struct whoami_broken {
    int status;                   /* the error's HTTP status */
    const char *head;             /* its body's first lines, "" none */
    const char *checkout;         /* the checkout its last usable answer named */
    long long good_ms;            /* when that answer was asked */
    const struct whoami_fp *disk; /* its files now */
    int changed;                  /* they changed since: the change broke it */
    int restarted;                /* wtproxy restarted it since, and its new process fails too */
};

/* t answered /__whoami until b->good_ms and now answers it with an error. */
void whoami_refusal_broken(const struct whoami_target *t, const struct whoami_broken *b, char *out,
                           size_t outlen);

/* t's answer is unusable: problem says how. */
void whoami_refusal_invalid(const struct whoami_target *t, const char *problem, char *out,
                            size_t outlen);

/* Not a refusal: t, asked with no request waiting (whoami_gate_probe),
 * answered nothing within reload_grace (yet 0), or nothing to its first
 * ask, asked again meanwhile (yet 1); problem says what the exchange found
 * (connection refused, mostly). */
void whoami_refusal_silent(const struct whoami_target *t, const char *problem, int yet, char *out,
                           size_t outlen);

/* The checkout t must serve cannot be fingerprinted. */
void whoami_refusal_unreadable(const struct whoami_target *t, const char *error, char *out,
                               size_t outlen);

/* --trust-registry: files changed since t started; out already names them
 * (whoami_refusal_newer_files), this completes the sentence. */
void whoami_refusal_trusted_stale(const struct whoami_target *t, char *out, size_t outlen);

/* (refusal_ignored.c) Appended to a stale refusal when git ignores all
 * n files of disk changed since since_ms (files names them, as
 * whoami_refusal_newer_files does): that the server may write them
 * itself, and the exclude of t's middleware that leaves them out. */
void whoami_refusal_ignored(const struct whoami_target *t, const struct whoami_fp *disk,
                            long long since_ms, size_t n, const char *files, char *out,
                            size_t outlen);

/* Why the gate restarts t, a stale server whose process started at
 * since_ms: "its code changed since it started (N files: a, b, c)", with
 * what whoami_refusal_ignored adds when ignored. */
void whoami_refusal_restart_why(const struct whoami_target *t, const struct whoami_fp *disk,
                                long long since_ms, int ignored, char *out, size_t outlen);

/* Whether f was modified after since_ms (its mtime or its ctime). */
int whoami_refusal_file_newer(const struct whoami_file *f, long long since_ms);

/* The files of disk modified after since_ms: their count, with "N files:
 * a, b, c" (the first WHOAMI_NAMED_FILES) written to out. */
size_t whoami_refusal_newer_files(const struct whoami_fp *disk, long long since_ms, char *out,
                                  size_t outlen);

#endif
