/* pid_ns.c - pids across pid namespaces. An agent's sandbox (bwrap
 * --unshare-pid, unshare --pid) runs `wtproxy run` in a pid namespace of
 * its own: the pid it said, getpid() there (2), named another process in
 * the daemon's (kthreadd), so its entry never expired, and a kill of it
 * would have hit that process. The kernel says who is at the other end
 * of a unix socket as the reader's namespace numbers it (SO_PEERCRED),
 * and /proc/PID/status's NSpid line the pid of a process in each
 * namespace from the reader's down to its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

#define NS_DEPTH_MAX 32 /* the kernel nests pid namespaces 32 deep at most */

/* The NSpid values of pid into out (at most max), the reader's first;
 * their count, 0 when unreadable (a kernel without NSpid: before 4.1). */
static int nspids(pid_t pid, pid_t *out, int max)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "%s/%d/status", host_proc_dir, (int)pid);
    if (host_read_small_file(path, buf, sizeof buf) < 0)
        return 0;
    const char *p = strstr(buf, "\nNSpid:");
    if (!p)
        return 0;
    p += strlen("\nNSpid:");
    int n = 0;
    for (char *end; n < max; p = end) {
        long v = strtol(p, &end, 10);
        if (end == p || v <= 0)
            break;
        out[n++] = (pid_t)v;
    }
    return n;
}

pid_t host_pid_of_peer(pid_t peer, pid_t said)
{
    pid_t ns[NS_DEPTH_MAX];
    int n = peer > 0 ? nspids(peer, ns, NS_DEPTH_MAX) : 0;
    if (n <= 1) /* one namespace for both, or not known: as said */
        return said;
    return ns[n - 1] == said ? peer : -1;
}

int host_pid_namespaced(pid_t pid)
{
    pid_t ns[NS_DEPTH_MAX];
    return nspids(pid, ns, NS_DEPTH_MAX) > 1;
}

int host_pid_ns_sees_kernel(void)
{
    char path[64], comm[32];
    snprintf(path, sizeof path, "%s/2/comm", host_proc_dir);
    return host_read_small_file(path, comm, sizeof comm) > 0 && strcmp(comm, "kthreadd\n") == 0;
}
