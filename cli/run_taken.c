/* run_taken.c - a port taken between its reservation and the server's
 * bind. The daemon reserves a port nothing listens on, and the server
 * binds it a second or more later (Django checks its models first, the
 * autoreloader starts a child); in between, another program can bind it:
 * the server of another daemon (two users, or two test runs, each with a
 * daemon, reserve from the same range), any program that binds ports of
 * its own choosing, a connection's local port where the machine's local
 * port range reaches down there. The server then exits ("Error: That
 * port is already in use") or moves to the next port (Vite without
 * --strictPort), for no fault of its code; its requests got the 503 of a
 * server that exited, or waited start_timeout. Seen in CI: a Django
 * runserver of one test file lost its port to another file's.
 *
 * So when CMD, not ready, exited or listens elsewhere only, and another
 * process listens on its port (or, once it exited, holds it), the wrapper
 * reserves another port, moves the daemon's entry there (requests waiting
 * for it follow) and starts CMD again, saying who took the port. A few
 * times at most between two readies: a program that takes every port is
 * a problem to report, not to chase. */
#include "run.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host.h"
#include "port_stranger.h"

#define MOVES_MAX 3 /* starts on another port between two readies */

/* Whether 127.0.0.1:port cannot be bound as a server binds it
 * (SO_REUSEADDR, which a connection of its own in TIME_WAIT does not
 * stop): a socket that does not listen holds it, such as another
 * program's connection where the local port range reaches down there. */
static int unbindable(int port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int busy = bind(fd, (struct sockaddr *)&sin, sizeof sin) < 0 && errno == EADDRINUSE;
    close(fd);
    return busy;
}

/* Whether a process outside the wrapper's tree holds port: it listens
 * there (*o says which; o->pid 0: one this user cannot see), or, once CMD
 * exited, the port cannot be bound (o->pid -1). CMD's tree is gone when
 * it exited (the wrapper stopped what it left), so any holder is another. */
static int taken(const struct cli_run *r, int exited, struct host_port_owner *o)
{
    if (!host_port_owner_find(r->port, o)) {
        *o = (struct host_port_owner){.pid = -1};
        return exited && unbindable(r->port);
    }
    return exited || !cli_cmd_listens(r->port, getpid(), NULL, 0, NULL);
}

/* Say it where the user reads: who took which port, and where CMD goes. */
static void say(struct cli_run *r, int old, const struct host_port_owner *o)
{
    char line[PATH_MAX + 1024], who[600] = "a process this user cannot see";
    struct proxy_port_stranger s;
    if (o->pid == 0 && proxy_port_stranger("127.0.0.1", old, o, &s))
        proxy_port_stranger_who(&s, who, sizeof who); /* another user's: whose */
    else if (o->pid < 0)
        snprintf(who, sizeof who,
                 "a socket that does not listen (another program's connection? ss -tanp "
                 "'sport = :%d' names it)",
                 old);
    else if (o->pid > 0)
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
                "process, and the server could not be started again on another port: %s\n",
                old, cli_run_folder(r->worktree), err);
        return 0;
    }
    r->moves++;
    say(r, old, &o);
    cli_run_fail_restart(&r->log.fail);
    cli_run_port_restart(&r->wrong_port);
    return 1;
}
