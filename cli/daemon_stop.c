/* daemon_stop.c - `wtproxy stop --daemon`: the daemon itself stopped and
 * waited for, as `nginx -s stop` does. Before, an upgrade, an uninstall or
 * a daemon started with the wrong environment took "kill PID" with the pid
 * `wtproxy doctor` prints, and a wait nobody wrote: the next command then
 * met the old daemon still closing (it gives in-flight requests
 * shutdown_timeout). It sends SIGTERM, the daemon's own clean stop, which
 * its log names the sender of (proxy/signals.c).
 *
 * The dev servers it routed to run on, registered: a daemon started again
 * on the same ports (the command is said) routes to them again; `wtproxy
 * stop` in their worktrees stops them. A daemon under systemd is left to systemd,
 * whose socket unit would start it again at the next connection. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "host.h"

#define DAEMON_STOP_WAIT_MS 30000 /* its shutdown_timeout (10 s) and more */
#define DAEMON_STOP_QUIET_MS 500  /* a daemon with only idle connections is gone by then */

/* Whether pid runs as a systemd unit: systemd sets INVOCATION_ID in each
 * unit's environment. */
static int under_systemd(long pid)
{
    char path[64], buf[65536];
    snprintf(path, sizeof path, "%s/%ld/environ", host_proc_dir, pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
        if (strncmp(buf + i, "INVOCATION_ID=", 14) == 0)
            return 1;
    return 0;
}

/* Waits until pid is gone, or a zombie (exited, its parent not waiting
 * for it yet); 0, or -1 after ms. */
static int wait_gone(long pid, long ms)
{
    for (long waited = 0; waited < ms; waited += 20) {
        if (host_pid_start((pid_t)pid) == 0)
            return 0;
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    return -1;
}

/* How many dev servers the daemon routes to ("entries" of list). */
static size_t servers_registered(void)
{
    json_t *reply = NULL, *req = json_pack("{s:s}", "op", "list");
    char err[PATH_MAX + 256];
    size_t n = 0;
    if (req && cli_call(req, 0, &reply, err, sizeof err) == 0) {
        json_t *entries = json_object_get(reply, "entries"), *e;
        size_t i;
        json_array_foreach(entries, i, e)
            n += !json_is_true(json_object_get(e, "remote"));
    }
    json_decref(req);
    json_decref(reply);
    return n;
}

/* What runs on, and serve, the command that starts a daemon again where
 * this one listened, with its flags: started by another command, a daemon
 * listens where that command's worktree declares (8000 by default), and a
 * server registered on another front would wait for its callers unheard. */
static void say_after(size_t servers, const char *serve)
{
    if (servers)
        printf("wtproxy: the %zu dev server%s it routed to run%s on, registered; a daemon "
               "started again on the same ports routes to %s: %s\n",
               servers, servers == 1 ? "" : "s", servers == 1 ? "s" : "",
               servers == 1 ? "it" : "them", serve);
    else
        printf("wtproxy: to start it again on the same ports: %s\n", serve);
}

/* The client connections the daemon has open and its shutdown_timeout
 * (op stats), into *clients and *ms; -1 and 0 from a daemon that does
 * not say them. */
static void open_clients(long *clients, long *ms)
{
    json_t *reply = NULL, *req = json_pack("{s:s}", "op", "stats"), *n;
    char err[PATH_MAX + 256];
    *clients = -1;
    *ms = 0;
    if (req && cli_call(req, 0, &reply, err, sizeof err) == 0) {
        if (json_is_integer(n = json_object_get(reply, "clients")))
            *clients = (long)json_integer_value(n);
        *ms = (long)json_integer_value(json_object_get(reply, "shutdown_timeout_ms"));
    }
    json_decref(req);
    json_decref(reply);
}

/* The daemon still runs a moment after SIGTERM: it finishes the requests,
 * WebSockets and event streams of the connections it had open, for up to
 * shutdown_timeout. Said at once, or the command stays silent for 10 s. */
static void say_draining(long pid, long clients, long ms)
{
    char open[64] = "its open connections", most[64] = "";
    if (clients > 0)
        snprintf(open, sizeof open, "the %ld connection%s it had open", clients,
                 clients == 1 ? "" : "s");
    if (ms > 0)
        snprintf(most, sizeof most, ", for %ld s at most (its shutdown_timeout)",
                 (ms + 999) / 1000);
    fprintf(stderr,
            "wtproxy: the daemon (pid %ld) refuses new connections and lets %s finish first "
            "(requests in flight, WebSockets, open pages' event streams)%s, then closes what is "
            "left; waiting\n",
            pid, open, most);
}

/* SIGTERM to pid, the daemon, and the wait; 0 once it is gone. */
static int stop_pid(long pid)
{
    long clients, ms;
    if (under_systemd(pid)) {
        fprintf(stderr,
                "wtproxy stop --daemon: the daemon (pid %ld) runs under systemd, whose socket "
                "unit would start it again at the next connection; stop both there: "
                "systemctl --user stop wtproxy.socket wtproxy.service\n",
                pid);
        return -1;
    }
    open_clients(&clients, &ms);
    if (kill((pid_t)pid, SIGTERM) < 0) {
        fprintf(stderr, "wtproxy stop --daemon: cannot signal the daemon (pid %ld): %s\n", pid,
                strerror(errno));
        return -1;
    }
    if (clients != 0 && wait_gone(pid, DAEMON_STOP_QUIET_MS) < 0)
        say_draining(pid, clients, ms);
    if (wait_gone(pid, DAEMON_STOP_WAIT_MS) < 0) {
        fprintf(stderr,
                "wtproxy stop --daemon: the daemon (pid %ld) still runs %d s after SIGTERM "
                "(its log says what it waits for: wtproxy doctor names the log); force it: "
                "kill -9 %ld\n",
                pid, DAEMON_STOP_WAIT_MS / 1000, pid);
        return -1;
    }
    printf("wtproxy: stopped the daemon (pid %ld)\n", pid);
    return 0;
}

int cli_daemon_stop(void)
{
    char err[PATH_MAX + 256];
    json_t *ping = NULL, *req = json_pack("{s:s}", "op", "ping");
    int r = req ? cli_call(req, 0, &ping, err, sizeof err) : -1;
    json_decref(req);
    if (r == CLI_NO_DAEMON) {
        err[strcspn(err, ";")] = '\0';
        printf("wtproxy: %s: none to stop\n", err);
        return 0;
    }
    if (r < 0) {
        fprintf(stderr, "wtproxy stop --daemon: %s\n", req ? err : "out of memory");
        return 1;
    }
    long pid = (long)json_integer_value(json_object_get(ping, "pid"));
    size_t servers = servers_registered();
    char serve[2 * PATH_MAX + 2560];
    cli_serve_cmd(ping, NULL, 0, serve, sizeof serve); /* its flags read while it runs */
    json_t *there = json_object_get(ping, "pid_there");
    if (pid <= 1 && there)
        fprintf(stderr,
                "wtproxy stop --daemon: the daemon runs outside this process's pid namespace "
                "(its pid there: %lld): from inside a sandbox, no process here may signal it; "
                "stop it from outside: wtproxy stop --daemon\n",
                (long long)json_integer_value(there));
    else if (pid <= 1)
        fprintf(stderr, "wtproxy stop --daemon: the daemon did not say its pid; stop it "
                        "yourself: wtproxy doctor names it\n");
    int stopped = pid > 1 && stop_pid(pid) == 0;
    if (stopped)
        say_after(servers, serve);
    r = stopped ? 0 : 1;
    json_decref(ping);
    return r;
}
