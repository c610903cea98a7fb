/* run_end.c - how a `wtproxy run` server ended, in words: the daemon's
 * log says it when it drops the entry (the unregister op's "why"), and
 * the server's own log ends with it.
 *
 * The wrapper's pid is what the daemon watches, and the wrapper outlives
 * its server to unregister it: to the daemon every end looked alike, a
 * kill -9 of the server, a removed worktree and a `wtproxy stop` all said
 * "unregistered". The wrapper alone saw which it was. */
#include "run.h"

#include <stdio.h>
#include <sys/wait.h>

#include "host.h"

/* "SIGTERM from pid 812 (npx playwright test)", or plain "SIGTERM" when
 * its sender is unknown or gone. */
static void sender_words(pid_t pid, char *out, size_t len)
{
    char cmdline[256] = "";
    if (pid > 0)
        host_pid_cmdline(pid, cmdline, sizeof cmdline);
    if (pid <= 0)
        snprintf(out, len, "SIGTERM");
    else
        snprintf(out, len, "SIGTERM from pid %ld%s%s%s", (long)pid, cmdline[0] ? " (" : "", cmdline,
                 cmdline[0] ? ")" : "");
}

int cli_run_end_words(const struct cli_run *r, const char *subject, char *out, size_t len)
{
    char how[512];
    out[0] = '\0';
    if (r->gone[0]) {
        snprintf(out, len, "%s was stopped by its wrapper: its worktree %s", subject, r->gone);
    } else if (r->exited) {
        int st = r->exit_status, sig = WIFSIGNALED(st);
        host_exit_words(sig ? -1 : WEXITSTATUS(st), sig ? WTERMSIG(st) : 0, r->command, NULL, how,
                        sizeof how);
        snprintf(out, len, "%s (pid %ld: %s) %s", subject, (long)r->cmd_pid, cli_run_cmd_shown(r),
                 how);
    } else if (r->stopped) {
        sender_words(r->stopped_by, how, sizeof how);
        snprintf(out, len, "%s was stopped by its wrapper, which got %s", subject, how);
    } else if (cli_run_cmd_interrupted()) {
        snprintf(out, len,
                 "%s was interrupted: SIGINT or SIGHUP to its wrapper (Ctrl-C, or its terminal "
                 "closed)",
                 subject);
    }
    return out[0] != '\0';
}
