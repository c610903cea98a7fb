/* daemon_hidden.c - a daemon that runs but that this process cannot
 * reach: its control socket is not where this process looks. Inside a
 * sandbox (bwrap --tmpfs /tmp, a container with its own XDG_RUNTIME_DIR)
 * the socket's folder is not there while the daemon holds the front port;
 * doctor's fix for "no daemon answers" killed that daemon, which every
 * other shell used, and the one it started in the sandbox could not
 * start, so no one had a daemon. A live `wtproxy serve` of this user and
 * this binary holding a port a daemon here would listen on is named with
 * the socket it really listens on (the path it bound, which
 * /proc/net/unix keeps) and the way to reach it, never its kill.
 *
 * Its restart still stands for a daemon whose socket file was deleted in
 * this very mount namespace (a tmp cleaner: no one reaches it), one of
 * another build (which needs restarting anyway), and a hung one (its
 * socket is there and does not answer: this process's socket exists). */
#include "cli.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host.h"

/* Whether path, or a folder of it, does not exist here. */
static int missing(const char *path)
{
    struct stat st;
    return stat(path, &st) < 0 && (errno == ENOENT || errno == ENOTDIR);
}

/* Whether o is a `wtproxy serve` of this user running this binary. */
static int our_daemon(const struct host_port_owner *o)
{
    const char *arg = strchr(o->cmdline, ' ');
    return o->pid > 0 && o->uid == geteuid() && arg && strncmp(arg + 1, "serve", 5) == 0 &&
           (arg[6] == ' ' || arg[6] == '\0') && host_pid_runs_self(o->pid) == 1;
}

/* The sentence and fix for o, which listens on sock, visible here or not
 * (seen), while this process looked for path (from: why there). */
static void say(const struct host_port_owner *o, int port, const char *sock, int seen,
                const char *path, const char *from, char *said, size_t slen, char *fix, size_t flen)
{
    char dir[PATH_MAX], *slash;
    if (seen) {
        snprintf(said, slen,
                 "a wtproxy daemon of yours (pid %ld, %.200s) holds port %d, but it listens on "
                 "the control socket %s, and this shell looks for %s (%s), which does not exist; "
                 "do not kill that daemon, it works: point WTPROXY_CONTROL at its socket",
                 (long)o->pid, o->cmdline, port, sock, path, from);
        snprintf(fix, flen, "export WTPROXY_CONTROL=%s", sock);
        return;
    }
    int same = strcmp(sock, path) == 0; /* a sandbox's XDG_RUNTIME_DIR is the one outside */
    char looks[PATH_MAX + 128], point[PATH_MAX + 64] = "";
    snprintf(dir, sizeof dir, "%s", sock);
    if ((slash = strrchr(dir, '/')) && slash != dir)
        *slash = '\0';
    if (same)
        snprintf(looks, sizeof looks, ", where this shell looks for it too (%s)", from);
    else
        snprintf(looks, sizeof looks, ", nor is %s (%s), where this shell looks", path, from);
    if (!same)
        snprintf(point, sizeof point, ", then in it: export WTPROXY_CONTROL=%s", sock);
    snprintf(said, slen,
             "a wtproxy daemon of yours (pid %ld, %.200s) holds port %d, but its control socket "
             "%s is not visible from here%s (a sandbox or container with its own /tmp or "
             "XDG_RUNTIME_DIR?); do not kill that daemon, the shells outside use it: bind its "
             "folder %s in at the same path%s",
             (long)o->pid, o->cmdline, port, sock, looks, dir,
             same ? "" : ", and point WTPROXY_CONTROL at its socket");
    snprintf(fix, flen,
             "start the sandbox with %s bound in at the same path (bwrap --bind %s %s, docker "
             "run -v %s:%s)%s",
             dir, dir, dir, dir, dir, point);
}

/* Whether pid's mounts were made below this process's: an ancestor of
 * pid sees the files this process sees (the shell that ran bwrap or
 * unshare). The daemon is then the one in a sandbox, which no shell here
 * reaches; from inside a sandbox, a daemon on the machine has no such
 * ancestor. */
static int started_below_here(pid_t pid)
{
    for (int hops = 0; hops < 64 && (pid = host_pid_parent(pid)) > 1; hops++)
        if (host_pid_same_mounts(pid) == 1)
            return 1;
    return 0;
}

/* The sentence and fix for o, a daemon that a `wtproxy run` inside a
 * sandbox started there (its socket on the sandbox's own /tmp): killed,
 * and one started here. */
static void say_sandboxed(const struct host_port_owner *o, int port, const char *sock, char *said,
                          size_t slen, char *fix, size_t flen)
{
    char prog[PATH_MAX];
    host_self_program(prog, sizeof prog, NULL, 0);
    snprintf(said, slen,
             "a wtproxy daemon of yours (pid %ld, %.200s) holds port %d from inside a sandbox or "
             "a container (its files are not this machine's: its control socket %s is on its "
             "own /tmp), started there by a wtproxy run when no daemon answered; no shell here "
             "reaches it: stop it and start one here",
             (long)o->pid, o->cmdline, port, sock);
    snprintf(fix, flen,
             "kill %ld && tail --pid=%ld -f /dev/null; setsid -f %.512s serve --listen %d",
             (long)o->pid, (long)o->pid, prog, port);
}

int cli_daemon_hidden(const char *path, const char *from, const int *ports, int n, char *said,
                      size_t slen, char *fix, size_t flen)
{
    if (!missing(path))
        return 0; /* a socket there that does not answer: a hung daemon, doctor says */
    for (int i = 0; i < n; i++) {
        struct host_port_owner o;
        char sock[PATH_MAX];
        if (!host_port_owner_find(ports[i], &o) || !our_daemon(&o) ||
            !host_pid_unix_listener(o.pid, sock, sizeof sock))
            continue;
        int seen = !missing(sock);
        if (seen && strcmp(sock, path) == 0)
            continue; /* it came up meanwhile: it answers there now */
        if (!seen && host_pid_same_mounts(o.pid) == 1)
            continue; /* its socket deleted under it: no one reaches it, its restart stands */
        if (!seen && started_below_here(o.pid)) {
            say_sandboxed(&o, ports[i], sock, said, slen, fix, flen);
            return 1;
        }
        say(&o, ports[i], sock, seen, path, from, said, slen, fix, flen);
        return 1;
    }
    return 0;
}
