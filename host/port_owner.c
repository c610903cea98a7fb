/* port_owner.c - which process listens on a local TCP port, from /proc.
 *
 * /proc/net/tcp and /proc/net/tcp6 list this network namespace's sockets,
 * one per line after a header (proc_net_tcp.txt in the kernel docs):
 *   sl  local_address rem_address   st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
 *   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000 1000 0 41276
 * local_address is ADDR:PORT in hex, st 0A is LISTEN, inode names the
 * socket. The kernel lists the listening sockets first (with their
 * SYN_RECV requests, st 03, before Linux 4.4) and then the rest, which on
 * a busy host is 100k lines that take seconds to read; so reading stops at
 * the first line past the listeners.
 *
 * uid is the socket's owner, which the kernel shows for every socket
 * (sock_diag's idiag_uid, `ss -e`'s uid:N): the process holding the
 * socket is found by host_socket_holder (proc_fd.c), and another user's fd
 * directory is unreadable, so a socket can be found with no process, yet
 * whose it is is known. */
#include "host.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INODES 64 /* listening sockets on one port: v4, v6, SO_REUSEPORT groups */
#define TCP_LISTEN 0x0A
#define TCP_SYN_RECV 0x03
#define TCP_FIELDS 10 /* up to and including inode */

/* Parse one /proc/net/tcp{,6} line, splitting it in place. Returns 1 and
 * *inode and *uid for a listening socket on port (any port when *port is
 * 0: then *port is set to its port); -1 for a line past the listening
 * sockets; 0 for anything else (the header, another port, a malformed
 * line). */
static int parse_tcp_line(char *line, int *port, unsigned long *inode, uid_t *uid)
{
    char *field[TCP_FIELDS], *save, *tok, *colon, *end;
    unsigned long lport, state, owner;
    int n = 0;

    for (tok = strtok_r(line, " \t\n", &save); tok && n < TCP_FIELDS;
         tok = strtok_r(NULL, " \t\n", &save))
        field[n++] = tok;
    if (n < TCP_FIELDS || !(colon = strrchr(field[1], ':')))
        return 0;
    state = strtoul(field[3], &end, 16);
    if (end == field[3] || *end != '\0')
        return 0;
    if (state != TCP_LISTEN)
        return state == TCP_SYN_RECV ? 0 : -1;
    lport = strtoul(colon + 1, &end, 16);
    if (end == colon + 1 || *end != '\0' || (*port && lport != (unsigned long)*port))
        return 0;
    errno = 0;
    *inode = strtoul(field[9], &end, 10);
    if (*end != '\0' || errno != 0 || *inode == 0)
        return 0;
    owner = strtoul(field[7], &end, 10);
    if (end == field[7] || *end != '\0' || errno != 0)
        return 0;
    *uid = (uid_t)owner;
    *port = (int)lport;
    return 1;
}

/* Add to out (which holds *n of max) the sockets listening on port (any
 * port when 0) listed in proc_dir/name. A missing file (no IPv6) adds
 * nothing. */
static void collect(const char *name, int port, struct host_listener *out, size_t *n, size_t max)
{
    char path[256], line[512]; /* lines are about 150 bytes */
    unsigned long inode;
    uid_t uid;
    FILE *f;
    int rc, got;

    snprintf(path, sizeof path, "%s/%s", host_proc_dir, name);
    if (!(f = fopen(path, "r")))
        return;
    while (*n < max && fgets(line, sizeof line, f)) {
        got = port;
        if ((rc = parse_tcp_line(line, &got, &inode, &uid)) < 0)
            break;
        if (rc > 0)
            out[(*n)++] = (struct host_listener){got, inode, uid};
    }
    fclose(f);
}

size_t host_tcp_listeners(struct host_listener *out, size_t max)
{
    size_t n = 0;
    collect("net/tcp", 0, out, &n, max);
    collect("net/tcp6", 0, out, &n, max);
    return n;
}

int host_port_owner_find(int port, struct host_port_owner *owner)
{
    struct host_listener in[MAX_INODES];
    unsigned long inodes[MAX_INODES];
    size_t n = 0;

    memset(owner, 0, sizeof *owner);
    collect("net/tcp", port, in, &n, MAX_INODES);
    collect("net/tcp6", port, in, &n, MAX_INODES);
    if (n == 0)
        return 0;
    owner->uid = in[0].uid;
    for (size_t i = 0; i < n; i++)
        inodes[i] = in[i].inode;
    /* Named by its lowest pid, a forking server's parent; yet its
     * children share the socket and hold the port after the parent is
     * killed (PHP's workers, reparented to init): a fix kills them all. */
    owner->nholders = (int)host_socket_pids(inodes, n, owner->holders, HOST_PORT_HOLDERS_MAX);
    owner->pid = owner->nholders ? owner->holders[0] : 0;
    if (owner->pid) {
        host_pid_cmdline(owner->pid, owner->cmdline, sizeof owner->cmdline);
        host_pid_cwd(owner->pid, owner->cwd, sizeof owner->cwd);
    }
    return 1;
}
