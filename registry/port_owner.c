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
 * A process holds the socket when a link in /proc/PID/fd reads
 * "socket:[INODE]". Another user's fd directory is unreadable, so a socket
 * can be found with no process. */
#include "port_owner.h"
#include "registry.h"
#include "host.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_INODES 64  /* listening sockets on one port: v4, v6, SO_REUSEPORT groups */
#define TCP_LISTEN 0x0A
#define TCP_SYN_RECV 0x03
#define TCP_FIELDS 10  /* up to and including inode */

/* Where /proc is; the unit test points it at a fake tree. */
static const char *proc_dir = "/proc";

struct inodes {
    unsigned long long v[MAX_INODES];
    int n;
};

/* Parse one /proc/net/tcp{,6} line, splitting it in place. Returns 1 and
 * *inode for a listening socket on port; -1 for a line past the listening
 * sockets; 0 for anything else (the header, another port, a malformed
 * line). */
static int parse_tcp_line(char *line, int port, unsigned long long *inode)
{
    char *field[TCP_FIELDS], *save, *tok, *colon, *end;
    unsigned long lport, state;
    int n = 0;

    for (tok = strtok_r(line, " \t\n", &save); tok && n < TCP_FIELDS;
         tok = strtok_r(NULL, " \t\n", &save))
        field[n++] = tok;
    if (n < TCP_FIELDS || !(colon = strrchr(field[1], ':'))) return 0;
    state = strtoul(field[3], &end, 16);
    if (end == field[3] || *end != '\0') return 0;
    if (state != TCP_LISTEN) return state == TCP_SYN_RECV ? 0 : -1;
    lport = strtoul(colon + 1, &end, 16);
    if (end == colon + 1 || *end != '\0' || lport != (unsigned long)port) return 0;
    errno = 0;
    *inode = strtoull(field[9], &end, 10);
    return *end == '\0' && errno == 0 && *inode != 0;
}

/* Add the inodes of sockets listening on port listed in proc_dir/name. A
 * missing file (no IPv6) adds nothing. */
static void collect_inodes(const char *name, int port, struct inodes *in)
{
    char path[256], line[512]; /* lines are about 150 bytes */
    unsigned long long inode;
    FILE *f;
    int rc;

    snprintf(path, sizeof path, "%s/%s", proc_dir, name);
    if (!(f = fopen(path, "r"))) return;
    while (in->n < MAX_INODES && fgets(line, sizeof line, f)) {
        if ((rc = parse_tcp_line(line, port, &inode)) < 0) break;
        if (rc > 0) in->v[in->n++] = inode;
    }
    fclose(f);
}

/* Whether an fd link target is "socket:[INODE]" for one of in's inodes. */
static int is_listed_socket(const char *link, const struct inodes *in)
{
    static const char prefix[] = "socket:[";
    unsigned long long inode;
    char *end;

    if (strncmp(link, prefix, sizeof prefix - 1) != 0) return 0;
    inode = strtoull(link + sizeof prefix - 1, &end, 10);
    if (strcmp(end, "]") != 0) return 0;
    for (int i = 0; i < in->n; i++)
        if (in->v[i] == inode) return 1;
    return 0;
}

/* Whether process pid has one of the sockets open. 0 as well when its fd
 * directory is not ours to read, or the process is gone. */
static int holds_socket(long pid, const struct inodes *in)
{
    char path[256], link[64];
    struct dirent *e;
    ssize_t n;
    int found = 0;
    DIR *d;

    snprintf(path, sizeof path, "%s/%ld/fd", proc_dir, pid);
    if (!(d = opendir(path))) return 0;
    while (!found && (e = readdir(d))) {
        n = readlinkat(dirfd(d), e->d_name, link, sizeof link - 1);
        if (n <= 0) continue; /* ".", "..", or closed meanwhile */
        link[n] = '\0';
        found = is_listed_socket(link, in);
    }
    closedir(d);
    return found;
}

/* Make n bytes of a raw /proc/PID/cmdline printable in place: the NULs
 * between arguments become spaces, control characters '?', trailing
 * spaces go, and a cmdline cut short by the buffer ends in "...". len is
 * buf's size; n < len. */
static void clean_cmdline(char *buf, size_t n, size_t len, int truncated)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if (ch == '\0')
            buf[i] = ' ';
        else if (ch < 0x20 || ch == 0x7f)
            buf[i] = '?';
    }
    while (n > 0 && buf[n - 1] == ' ') n--;
    if (truncated && len >= 4) {
        if (n > len - 4) n = len - 4;
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
}

/* Read proc_dir/PID/cmdline into buf as one printable line; "" when
 * unreadable (a kernel thread, or the process is gone). */
static void read_cmdline(long pid, char *buf, size_t len)
{
    char path[256], more;
    size_t n = 0;
    ssize_t r;
    int fd, truncated = 0;

    snprintf(path, sizeof path, "%s/%ld/cmdline", proc_dir, pid);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
        while (n < len - 1 && (r = read(fd, buf + n, len - 1 - n)) > 0) n += (size_t)r;
        truncated = n == len - 1 && read(fd, &more, 1) == 1;
        close(fd);
    }
    clean_cmdline(buf, n, len, truncated);
}

/* readlink proc_dir/PID/cwd into buf; "" when unreadable. */
static void read_cwd(long pid, char *buf, size_t len)
{
    char path[256];
    ssize_t n;

    snprintf(path, sizeof path, "%s/%ld/cwd", proc_dir, pid);
    n = readlink(path, buf, len - 1);
    buf[n > 0 ? n : 0] = '\0';
}

int reg_port_owner_find(int port, struct reg_port_owner *owner)
{
    struct inodes in = {.n = 0};
    struct dirent *e;
    DIR *d;
    long pid = 0, p;

    memset(owner, 0, sizeof *owner);
    collect_inodes("net/tcp", port, &in);
    collect_inodes("net/tcp6", port, &in);
    if (in.n == 0) return 0;
    if (!(d = opendir(proc_dir))) return 1;
    /* The lowest pid holding the socket: a forking server's parent, the
     * one to kill, rather than one of the children sharing its socket. */
    while ((e = readdir(d)))
        if ((p = host_proc_pid(e->d_name)) > 0 && (!pid || p < pid) && holds_socket(p, &in)) pid = p;
    closedir(d);
    if (pid) {
        owner->pid = (pid_t)pid;
        read_cmdline(pid, owner->cmdline, sizeof owner->cmdline);
        read_cwd(pid, owner->cwd, sizeof owner->cwd);
    }
    return 1;
}

void reg_port_owner_describe(const char *addr, int port, char *buf, size_t len)
{
    struct reg_port_owner o;
    char on[96] = "";
    int other = port < 65535 ? port + 1 : port - 1;

    if (addr && addr[0]) snprintf(on, sizeof on, " on %s", addr);
    /* cmdline and cwd are cut short so that the hints after them fit in a
     * 1 KiB message, however long the holder's arguments. */
    if (reg_port_owner_find(port, &o) && o.pid > 0)
        snprintf(buf, len,
                 "port %d%s is already in use by pid %ld%s%.200s%s%s%.500s; "
                 "stop it with `kill %ld`, or serve another port: wtproxy serve --listen %d",
                 port, on, (long)o.pid, o.cmdline[0] ? " (" : "", o.cmdline,
                 o.cmdline[0] ? ")" : "", o.cwd[0] ? ", cwd " : "", o.cwd, (long)o.pid, other);
    else
        snprintf(buf, len,
                 "port %d%s is already in use by a process this user cannot see; find it with "
                 "`ss -ltnp 'sport = :%d'` (as root to see every process), or serve another "
                 "port: wtproxy serve --listen %d",
                 port, on, port, other);
}
