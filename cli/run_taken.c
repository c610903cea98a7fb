/* run_taken.c - a port taken between its reservation and the server's
 * bind. The daemon reserves a port nothing listens on, and the server
 * binds it a second or more later (Django checks its models first, the
 * autoreloader starts a child); in between, another program can bind it:
 * the server of another daemon (two users, or two test runs, each with a
 * daemon, reserve from the same range), or any program that binds ports
 * of its own choosing. The server then exits ("Error: That port is
 * already in use") or moves to the next port (Vite without
 * --strictPort), for no fault of its code; its requests got the 503 of a
 * server that exited, or waited start_timeout. Seen in CI: a Django
 * runserver of one test file lost its port to another file's.
 *
 * So when CMD, not ready, exited or listens elsewhere only, and another
 * process listens on its port, the wrapper reserves another port, moves
 * the daemon's entry there (requests waiting for it follow) and starts
 * CMD again, saying who took the port. A few times at most between two
 * readies: a program that takes every port is a problem to report, not
 * to chase. */
#include "run.h"

#include <stdio.h>
#include <unistd.h>

#include "host.h"

#define MOVES_MAX 3 /* starts on another port between two readies */

/* Whether a process outside the wrapper's tree listens on port; *o says
 * which (o->pid 0: one this user cannot see). CMD's tree is gone when it
 * exited (the wrapper stopped what it left), so any listener is another's. */
static int taken(const struct cli_run *r, int exited, struct host_port_owner *o)
{
    if (!host_port_owner_find(r->port, o))
        return 0;
    return exited || !cli_cmd_listens(r->port, getpid(), NULL, 0);
}

/* Say it where the user reads: who took which port, and where CMD goes. */
static void say(struct cli_run *r, int old, const struct host_port_owner *o)
{
    char line[PATH_MAX + 1024], who[600] = "a process this user cannot see";
    if (o->pid > 0)
        snprintf(who, sizeof who, "pid %d (%.500s)", (int)o->pid, o->cmdline[0] ? o->cmdline : "?");
    snprintf(line, sizeof line,
             "wtproxy: port %d, which wtproxy gave %s's server, was taken by %s before the "
             "server bound it: starting it again on port %d",
             old, cli_run_folder(r->worktree), who, r->port);
    fprintf(stderr, "%s\n", line);
    cli_run_log_note(&r->log, line);
}

int cli_run_taken(struct cli_run *r, int exited)
{
    struct host_port_owner o;
    char err[PATH_MAX + 256];
    int old = r->port;
    if (r->moves >= MOVES_MAX || !taken(r, exited, &o))
        return 0;
    if (cli_run_move(r, err, sizeof err) < 0) {
        fprintf(stderr,
                "wtproxy: port %d, which wtproxy gave %s's server, was taken by another "
                "process, and no other port could be had: %s\n",
                old, cli_run_folder(r->worktree), err);
        return 0;
    }
    r->moves++;
    say(r, old, &o);
    cli_run_fail_restart(&r->log.fail);
    cli_run_port_restart(&r->wrong_port);
    return 1;
}
