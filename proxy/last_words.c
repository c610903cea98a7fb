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
#include "reg_db.h"
#include "server.h"

/* The one command that fixes it, for the page's Fix line: nothing to fix
 * when someone killed it (killed), else what its lines show when wtproxy
 * knows the cure (a missing package's link, the app's dependencies not
 * installed where it runs, a Vite holding the project),
 * else to fix what they name; then how it starts again. */
static void last_fix(const struct reg_last_words *w, int killed, char *fix, size_t len)
{
    char cure[4 * PATH_MAX];
    const char *then = killed ? ";" : ", then";
    if (killed)
        snprintf(cure, sizeof cure, "%s", HOST_EXIT_KILLED);
    else if (host_printed_nothing(w->lines)) /* nothing to read here: its log may say more */
        snprintf(cure, sizeof cure,
                 "find in its log why it exited: wtproxy logs --front %d, in its worktree; fix "
                 "that",
                 w->front);
    else if (!whoami_missing_package(w->lines, w->worktree, cure, sizeof cure) &&
             !host_deps_missing(w->lines, w->command, w->worktree, cure, sizeof cure) &&
             !reg_db_refused(w->lines, cure, sizeof cure) &&
             !host_dev_lock_holder(w->lines, cure, sizeof cure))
        snprintf(cure, sizeof cure, "fix the error its last lines above name");
    cure[0] = (char)toupper((unsigned char)cure[0]);
    if (w->daemon_started)
        snprintf(fix, len,
                 "%s%s send the request again: the daemon starts the server its .wtproxy "
                 "declares again",
                 cure, then);
    else if (w->rerun[0]) /* its own `wtproxy run` line, as its wrapper told it */
        snprintf(fix, len,
                 "%s%s start it again from its worktree: cd %s && %s (or run again the test "
                 "whose webServer starts it)",
                 cure, then, w->worktree, w->rerun);
    else
        snprintf(fix, len,
                 "%s%s start it again from its worktree: cd %s && wtproxy run --front %d -- "
                 "<its command with {port}> (or run again the test whose webServer starts it)",
                 cure, then, w->worktree, w->front);
}

int conn_last_words(struct proxy_server *s, int front, const char *worktree, int with_status,
                    char *d, size_t len, char *fix, size_t fixlen)
{
    const struct reg_last_words *w = reg_server_last_words(s->reg, front, worktree);
    if (!w)
        return 0;
    char how[256], age[32], status[PATH_MAX + 1200] = "";
    size_t used = strnlen(d, len);
    if (used + 1 >= len)
        return 0;
    host_age(host_wall_ms() - w->ended_ms, age, sizeof age);
    int killed = host_exit_words(w->status, w->signal, w->command, age, how, sizeof how);
    if (with_status) /* after a sentence that ends already (ondemand.c's "there."), no "..": */
        snprintf(status, sizeof status, "%s Its server, %s, %s",
                 used && d[used - 1] == '.' ? "" : ".", w->command, how);
    if (host_printed_nothing(w->lines))
        snprintf(d + used, len - used, "%s; " HOST_EXIT_SILENT, status);
    else
        snprintf(d + used, len - used, "%s; its last lines:\n%s", status, w->lines);
    last_fix(w, killed, fix, fixlen);
    return 1;
}
