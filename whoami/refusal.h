/* refusal.h - the sentences of the gate's refusals (gate.c): what happened,
 * whose server it is, and the command that fixes it. Internal to whoami/. */
#ifndef WTP_WHOAMI_REFUSAL_H
#define WTP_WHOAMI_REFUSAL_H

#include <stddef.h>

#include "registry.h"
#include "whoami.h"

#define WHOAMI_NAMED_FILES 3 /* changed files a stale refusal names */

/* b's port answers for ans->checkout, not for worktree. */
void whoami_refusal_mismatch(const struct reg_backend *b, const struct whoami_answer *ans,
                             const char *worktree, char *out, size_t outlen);

/* b loaded older code than disk; restarted: wtproxy already restarted it. */
void whoami_refusal_stale(const struct reg_backend *b, const struct whoami_answer *ans,
                          const struct whoami_fp *disk, int restarted, char *out,
                          size_t outlen);

/* b answered /__whoami with HTTP status (404 mostly). */
void whoami_refusal_no_whoami(const struct reg_backend *b, int status, char *out, size_t outlen);

/* b's answer is unusable: problem says how. */
void whoami_refusal_invalid(const struct reg_backend *b, const char *problem, char *out,
                            size_t outlen);

/* The worktree itself cannot be fingerprinted. */
void whoami_refusal_unreadable(const struct reg_backend *b, const char *worktree,
                               const char *error, char *out, size_t outlen);

/* --trust-registry: b is registered for another worktree. */
void whoami_refusal_trusted_mismatch(const struct reg_backend *b, const char *worktree,
                                     char *out, size_t outlen);

/* --trust-registry: files changed since b started; out already names them
 * (whoami_refusal_newer_files), this completes the sentence. */
void whoami_refusal_trusted_stale(const struct reg_backend *b, char *out, size_t outlen);

/* The files of disk modified after since_ms: their count, with "N files:
 * a, b, c" (the first WHOAMI_NAMED_FILES) written to out. */
size_t whoami_refusal_newer_files(const struct whoami_fp *disk, long long since_ms, char *out,
                                  size_t outlen);

#endif
