/* last_words.c - a server that exited, quoted in the 503 of the request
 * that comes next: its last output lines and its exit status, as its
 * `wtproxy run` wrapper told them when it unregistered
 * (registry/reg_last_words.c), formatted as a failed start's are
 * (dispatch.c's start_failed): the lines in the detail, the fix in the
 * page's Fix line (once: it used to follow the lines, and the kind's
 * generic "read its output" Fix came under it). Its log's path
 * alone sends the reader to `wtproxy logs`, which an agent seldom runs;
 * the error itself lands in its test runner's error snapshot. Nothing is
 * read from a log here: the loop only copies what the wrapper sent. */
#include "conn.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "host.h"
#include "packages.h"
#include "server.h"

/* How w's server ended: "exited with status 1", "was killed by signal 9". */
static void how_ended(const struct reg_last_words *w, char *out, size_t len)
{
    if (w->status >= 0)
        snprintf(out, len, "exited with status %d", w->status);
    else
        snprintf(out, len, "was killed by signal %d", w->signal);
}

/* The one command that fixes it, for the page's Fix line: what its lines
 * show when wtproxy knows the cure (a missing package's link, a Vite
 * holding the project), else to fix what they name; then how it starts
 * again. */
static void last_fix(const struct reg_last_words *w, char *fix, size_t len)
{
    char cure[4 * PATH_MAX];
    if (!w->lines[0]) /* nothing to read here: its log may say more */
        snprintf(cure, sizeof cure,
                 "find in its log why it exited: wtproxy logs --front %d, in its worktree; fix "
                 "that",
                 w->front);
    else if (!whoami_missing_package(w->lines, w->worktree, cure, sizeof cure) &&
             !host_dev_lock_holder(w->lines, cure, sizeof cure))
        snprintf(cure, sizeof cure, "fix the error its last lines above name");
    cure[0] = (char)toupper((unsigned char)cure[0]);
    if (w->daemon_started)
        snprintf(fix, len,
                 "%s, then send the request again: the daemon starts the server its .wtproxy "
                 "declares again",
                 cure);
    else if (w->rerun[0]) /* its own `wtproxy run` line, as its wrapper told it */
        snprintf(fix, len,
                 "%s, then start it again from its worktree: cd %s && %s (or run again the test "
                 "whose webServer starts it)",
                 cure, w->worktree, w->rerun);
    else
        snprintf(fix, len,
                 "%s, then start it again from its worktree: cd %s && wtproxy run --front %d -- "
                 "<its command with {port}> (or run again the test whose webServer starts it)",
                 cure, w->worktree, w->front);
}

int conn_last_words(struct proxy_server *s, int front, const char *worktree, int with_status,
                    char *d, size_t len, char *fix, size_t fixlen)
{
    const struct reg_last_words *w = reg_server_last_words(s->reg, front, worktree);
    if (!w)
        return 0;
    char how[64], age[32], status[PATH_MAX + 1200] = "";
    size_t used = strnlen(d, len);
    if (used + 1 >= len)
        return 0;
    how_ended(w, how, sizeof how);
    host_age(host_wall_ms() - w->ended_ms, age, sizeof age);
    if (with_status)
        snprintf(status, sizeof status, ". Its server, %s, %s %s ago", w->command, how, age);
    snprintf(d + used, len - used, "%s; its last lines:\n%s", status,
             w->lines[0] ? w->lines : "(it printed nothing)");
    last_fix(w, fix, fixlen);
    return 1;
}
