/* refusal.c - see refusal.h. Agents read these, not READMEs: each names
 * the server (address, pid, checkout), what is wrong with it, and one
 * command to run. */
#include "refusal.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "host.h"

/* How to start the worktree's server again, from what registered it. */
static void restart_hint(const struct whoami_target *t, char *out, size_t outlen)
{
    if (t->command[0])
        snprintf(out, outlen, "cd %s && wtproxy run --restart-on-stale -- %s", t->checkout,
                 t->command);
    else
        snprintf(out, outlen,
                 "cd %s && wtproxy run --restart-on-stale -- <server command with "
                 "{port}>",
                 t->checkout);
}

void whoami_refusal_mismatch(const struct whoami_target *t, const struct whoami_answer *ans,
                             char *out, size_t outlen)
{
    char since[32], hint[PATH_MAX + 1200];
    host_age(ans->started_ms > 0 ? host_wall_ms() - ans->started_ms : 0, since, sizeof since);
    restart_hint(t, hint, sizeof hint);
    snprintf(out, outlen,
             "port %d is served by %s, not by %s: the server there (pid %d, started %s ago) "
             "belongs to another checkout, so its answers would not be your code's. Stop it: "
             "kill %d; then start your own server: %s",
             t->port, ans->checkout, t->checkout, (int)ans->pid, since, (int)ans->pid, hint);
}

size_t whoami_refusal_newer_files(const struct whoami_fp *disk, long long since_ms, char *out,
                                  size_t outlen)
{
    size_t n = 0, used;
    out[0] = '\0';
    for (size_t i = 0; i < disk->n; i++) {
        if (disk->file[i].mtime_ns / 1000000 <= since_ms)
            continue;
        if (++n > WHOAMI_NAMED_FILES)
            continue;
        used = strlen(out);
        snprintf(out + used, outlen - used, "%s%s", n > 1 ? ", " : "", disk->file[i].path);
    }
    if (n > WHOAMI_NAMED_FILES) {
        used = strlen(out);
        snprintf(out + used, outlen - used, ", ...");
    }
    return n;
}

void whoami_refusal_stale(const struct whoami_target *t, const struct whoami_answer *ans,
                          const struct whoami_fp *disk, int restarted, char *out, size_t outlen)
{
    char since[32], files[1024], hint[PATH_MAX + 1200], changed[1100];
    host_age(ans->started_ms > 0 ? host_wall_ms() - ans->started_ms : 0, since, sizeof since);
    restart_hint(t, hint, sizeof hint);
    size_t n = whoami_refusal_newer_files(disk, ans->started_ms, files, sizeof files);
    if (n)
        snprintf(changed, sizeof changed, "the code changed since (%zu file%s: %s)", n,
                 n == 1 ? "" : "s", files);
    else
        snprintf(changed, sizeof changed,
                 "the code on disk differs from the code it loaded "
                 "(%s on disk, %s loaded)",
                 disk->hash, ans->hash);
    if (restarted)
        snprintf(out, outlen,
                 "wtproxy restarted your server for %s (pid %d), and it still "
                 "reports older code than the disk's: %s. Look at its output for why it "
                 "did not come back with the new code; to restart it by hand: %s",
                 ans->checkout, (int)ans->pid, changed, hint);
    else
        snprintf(out, outlen,
                 "this is your own server for %s (pid %d), started %s ago; %s. "
                 "Restart it: stop pid %d, then %s",
                 ans->checkout, (int)ans->pid, since, changed,
                 t->pid > 0 ? (int)t->pid : (int)ans->pid, hint);
}

void whoami_refusal_no_whoami(const struct whoami_target *t, int status, char *out, size_t outlen)
{
    snprintf(out, outlen,
             "%s (the server of %s, pid %d) answers GET /__whoami with HTTP %d, so wtproxy "
             "cannot tell which checkout and which code it serves. Add the whoami middleware "
             "(Django: 'wtproxy_whoami.django.WhoamiMiddleware' first in MIDDLEWARE, with "
             "whoami/python on PYTHONPATH; see conf/WHOAMI.md), or start wtproxy with "
             "--trust-registry to trust the registration instead",
             t->name, t->checkout[0] ? t->checkout : "the default backend", (int)t->pid, status);
}

void whoami_refusal_invalid(const struct whoami_target *t, const char *problem, char *out,
                            size_t outlen)
{
    snprintf(out, outlen,
             "%s (the server of %s, pid %d) answered GET /__whoami with something wtproxy "
             "cannot use: %s. Fix the server's /__whoami (whoami/PROTOCOL.md), or restart it "
             "if it hangs",
             t->name, t->checkout[0] ? t->checkout : "the default backend", (int)t->pid, problem);
}

void whoami_refusal_unreadable(const struct whoami_target *t, const char *error, char *out,
                               size_t outlen)
{
    snprintf(out, outlen,
             "wtproxy cannot fingerprint the code of %s to check %s: %s. "
             "Check that the folder exists and is readable",
             t->checkout, t->name, error);
}

void whoami_refusal_trusted_stale(const struct whoami_target *t, char *out, size_t outlen)
{
    char files[1024], hint[PATH_MAX + 1200];
    snprintf(files, sizeof files, "%s", out);
    restart_hint(t, hint, sizeof hint);
    snprintf(out, outlen,
             "the server of %s (pid %d, no /__whoami, trusted from its "
             "registration) started before these changed: %s. Restart it: stop pid %d, then %s",
             t->checkout, (int)t->pid, files, (int)t->pid, hint);
}
