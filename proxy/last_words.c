/* last_words.c - a server that exited, quoted in the 503 of the request
 * that comes next: its last output lines and its exit status, as its
 * `wtproxy run` wrapper told them when it unregistered
 * (registry/reg_last_words.c), formatted as a failed start's are
 * (dispatch.c's start_failed): the lines, then the fix. Its log's path
 * alone sends the reader to `wtproxy logs`, which an agent seldom runs;
 * the error itself lands in its test runner's error snapshot. Nothing is
 * read from a log here: the loop only copies what the wrapper sent. */
#include "conn.h"

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

int conn_last_words(struct proxy_server *s, int front, const char *worktree, int with_status,
                    char *d, size_t len)
{
    const struct reg_last_words *w = reg_server_last_words(s->reg, front, worktree);
    if (!w)
        return 0;
    char how[64], age[32], status[PATH_MAX + 1200] = "", fix[4 * PATH_MAX];
    size_t used = strnlen(d, len);
    if (used + 1 >= len)
        return 0;
    how_ended(w, how, sizeof how);
    /* A new worktree without node_modules: the fix is a link, not an edit;
     * a Vite the user runs holds the project: the fix is its kill. */
    if (!whoami_missing_package(w->lines, w->worktree, fix, sizeof fix) &&
        !host_dev_lock_holder(w->lines, fix, sizeof fix))
        snprintf(fix, sizeof fix, "fix the error they name");
    host_age(host_wall_ms() - w->ended_ms, age, sizeof age);
    if (with_status)
        snprintf(status, sizeof status, ". Its server, %s, %s %s ago", w->command, how, age);
    if (w->daemon_started)
        snprintf(d + used, len - used,
                 "%s; its last lines:\n%s\n%s, then send the request "
                 "again: the daemon starts the server its .wtproxy declares again",
                 status, w->lines[0] ? w->lines : "(it printed nothing)", fix);
    else if (w->rerun[0]) /* its own `wtproxy run` line, as its wrapper told it */
        snprintf(d + used, len - used,
                 "%s; its last lines:\n%s\n%s, then start it again from "
                 "its worktree: cd %s && %s (or run again the test whose webServer starts it)",
                 status, w->lines[0] ? w->lines : "(it printed nothing)", fix, w->worktree,
                 w->rerun);
    else
        snprintf(d + used, len - used,
                 "%s; its last lines:\n%s\n%s, then start it again from "
                 "its worktree: cd %s && wtproxy run --front %d -- <its command with {port}> "
                 "(or run again the test whose webServer starts it)",
                 status, w->lines[0] ? w->lines : "(it printed nothing)", fix, w->worktree,
                 w->front);
    return 1;
}
