/* ls_exited.c - the servers that exited lately, as `wtproxy ls` and the
 * MCP servers tool say them: the daemon keeps what each one's `wtproxy
 * run` wrapper told it when the server exited by itself (its last lines,
 * its exit status, the command that started it: the `list` op's
 * "exited", registry/PROTOCOL.md). A worktree whose server crashed showed
 * "no dev server is registered", and its agent started guessing why; its
 * error was in the daemon all along. */
#include "servers.h"

#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "packages.h"
#include "reg_db.h"
#include "registry.h"

/* The lines of a crash worth quoting where a list is read: the error is
 * at the end; `wtproxy logs` has the rest. */
#define EXITED_LINES 5

/* Where the quote of s[0, n) ends: after the last line that names an
 * error (Node prints its stack and its version after it; Python ends
 * with it), else at n. *after counts the lines left out behind it. */
static size_t quote_end(const char *s, size_t n, int *after)
{
    *after = 0;
    for (size_t end = n; end > 0;) {
        size_t start = end;
        while (start > 0 && s[start - 1] != '\n')
            start--;
        if (host_names_error(s + start, s + end))
            return end;
        ++*after;
        end = start ? start - 1 : 0;
    }
    *after = 0;
    return n;
}

/* EXITED_LINES lines of them. The white space s ends with is left out:
 * quoted, blank lines read as a heading over nothing. */
void cli_quote_tail(const char *s, int to_error, char *out, size_t len)
{
    size_t n = strlen(s), used = 0;
    int after = 0;
    while (n && strchr(" \t\r\n", s[n - 1]))
        n--;
    if (to_error)
        n = quote_end(s, n, &after);
    const char *from = s + n;
    for (int k = 0; from > s; from--)
        if (from[-1] == '\n' && ++k == EXITED_LINES)
            break;
    out[0] = '\0';
    for (const char *p = from; p < s + n && used + 1 < len;) {
        const char *nl = memchr(p, '\n', (size_t)(s + n - p));
        size_t w = nl ? (size_t)(nl - p) : (size_t)(s + n - p);
        int k = snprintf(out + used, len - used, "%s  | %.*s", used ? "\n" : "", (int)w, p);
        if (k < 0 || (size_t)k >= len - used)
            return;
        used += (size_t)k;
        p += w + 1;
    }
    if (after)
        snprintf(out + used, len - used, "\n  (and %d line%s after them)", after,
                 after == 1 ? "" : "s");
}

/* "--service api" when x names a service, else "--front 8000": what
 * selects its server for logs and restart. */
static void selector(json_t *x, char *out, size_t len)
{
    const char *svc = json_string_value(json_object_get(x, "service"));
    if (svc && *svc)
        snprintf(out, len, "--service %s", svc);
    else
        snprintf(out, len, "--front %lld", json_integer_value(json_object_get(x, "front")));
}

/* The command that starts x's server again: the daemon starts a
 * .wtproxy's own (restart starts a declared service that does not run);
 * a hand-run one is started again by its own `wtproxy run` line. */
static void start_again(json_t *x, const char *wt, const char *sel, char *out, size_t len)
{
    const char *rerun = json_string_value(json_object_get(x, "rerun"));
    if (json_is_true(json_object_get(x, "daemon_started")))
        snprintf(out, len,
                 "wtproxy restart %s %s (or send a request there: the daemon starts the server "
                 "its .wtproxy declares)",
                 wt, sel);
    else if (rerun && *rerun)
        snprintf(out, len, "cd %s && %s", wt, rerun);
    else
        snprintf(out, len, "cd %s && wtproxy run --front %lld -- <its command with {port}>", wt,
                 json_integer_value(json_object_get(x, "front")));
}

/* What fixes a server that ended with lines into fix, and what joins it
 * to how it starts again (returned): nothing to fix when someone killed
 * it, else the cure its lines show (a missing package, the app's
 * dependencies not installed where cmd runs, a Vite holding the
 * project), else the error they name; with no lines, its whole log. */
static const char *exit_fix(const char *lines, const char *wt, const char *cmd, int killed,
                            char *fix, size_t len)
{
    if (killed) {
        snprintf(fix, len, HOST_EXIT_KILLED);
        return ";";
    }
    if (host_printed_nothing(lines))
        snprintf(fix, len, "find in it why it exited and fix that");
    else if (!whoami_missing_package(lines, wt, fix, len) &&
             !host_deps_missing(lines, cmd, wt, fix, len) && !reg_db_refused(lines, fix, len) &&
             !host_dev_lock_holder(lines, fix, len))
        snprintf(fix, len, "fix the error they name");
    return ", then";
}

/* x's worktree was removed (git worktree remove) since its server
 * exited: `restart` and `logs` fail there ("No such file or directory"),
 * and nothing is left to start; said so, with no command that fails. */
static void removed_words(json_t *x, const char *wt, const char *how, const char *cmd, char *out,
                          size_t len)
{
    snprintf(out, len,
             "%s (front %lld): its server %s (%s), and its worktree was removed since (git "
             "worktree remove): nothing to start again there",
             wt, json_integer_value(json_object_get(x, "front")), how, cmd ? cmd : "?");
}

void cli_exited_words(json_t *x, char *out, size_t len)
{
    const char *wt = json_string_value(json_object_get(x, "worktree"));
    const char *lines = json_string_value(json_object_get(x, "lines"));
    const char *cmd = json_string_value(json_object_get(x, "command"));
    json_t *status = json_object_get(x, "status");
    char age[32], how[256], sel[REG_SERVICE_MAX + 16], said[REG_START_FAILED_MAX + 256];
    char again[PATH_MAX + 1200], fix[4 * PATH_MAX];
    wt = wt ? wt : "?";
    host_age(host_wall_ms() - json_integer_value(json_object_get(x, "ended_ms")), age, sizeof age);
    int killed = host_exit_words(status ? (int)json_integer_value(status) : -1,
                                 (int)json_integer_value(json_object_get(x, "signal")), cmd, age,
                                 how, sizeof how);
    if (host_worktree_removed(wt)) {
        removed_words(x, wt, how, cmd, out, len);
        return;
    }
    selector(x, sel, sizeof sel);
    start_again(x, wt, sel, again, sizeof again);
    if (host_printed_nothing(lines)) {
        snprintf(said, sizeof said, HOST_EXIT_SILENT);
    } else {
        size_t n = (size_t)snprintf(said, sizeof said, "its last lines:\n");
        /* A killed server's last error line, if any, is an old one it
         * lived past (an edit's traceback, fixed since): quoted as the
         * end, it sent its reader to fix code that is fine. */
        cli_quote_tail(lines, !killed, said + n, sizeof said - n);
    }
    const char *then = exit_fix(lines, wt, cmd, killed, fix, sizeof fix);
    snprintf(out, len,
             "%s (front %lld): its server %s (%s); %s\n"
             "the whole log: wtproxy logs %s %s; %s%s start it again: %s",
             wt, json_integer_value(json_object_get(x, "front")), how, cmd ? cmd : "?", said, wt,
             sel, fix, then, again);
}

/* Whether entries hold a live entry of this machine on x's key. */
static int has_entry(json_t *entries, json_t *x)
{
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e)
        if (!json_is_true(json_object_get(e, "remote")) &&
            json_equal(json_object_get(e, "front"), json_object_get(x, "front")) &&
            json_equal(json_object_get(e, "worktree"), json_object_get(x, "worktree")))
            return 1;
    return 0;
}

json_t *cli_exited_of(json_t *reply, const char *worktree)
{
    json_t *out = json_array(), *x, *entries = json_object_get(reply, "entries");
    char said[3 * PATH_MAX + REG_START_FAILED_MAX];
    size_t i;
    json_array_foreach(json_object_get(reply, "exited"), i, x) {
        const char *wt = json_string_value(json_object_get(x, "worktree"));
        if (!out || !wt || (worktree && strcmp(wt, worktree) != 0) || has_entry(entries, x))
            continue;
        json_t *c = json_deep_copy(x);
        cli_exited_words(x, said, sizeof said);
        json_object_set_new(c, "said", cli_json_text(said, strlen(said)));
        json_array_append_new(out, c);
    }
    return out;
}
