/* unix_listen.c - where another process listens on a Unix socket: the
 * path a socket was bound to stays in /proc/net/unix (proc(5)) whatever
 * the caller's mount namespace shows there, so a process in a sandbox
 * with its own /tmp still learns where a daemon outside listens. A line:
 *   Num: RefCount Protocol Flags Type St Inode Path
 * Flags 00010000 is a listening socket (__SO_ACCEPTCON), Type 0001 a
 * stream; a path of "@..." is abstract, no file. */
#include "host.h"

#include <stdio.h>
#include <string.h>

#define UNIX_LISTENING 0x10000UL
#define UNIX_STREAM 1U

/* The inode and path of one /proc/net/unix line when it is a listening
 * stream socket bound to a file path. Returns 1 or 0. */
static int listening_path(const char *line, unsigned long *inode, char *path, size_t len)
{
    unsigned long flags;
    unsigned type;
    int at = 0;
    if (sscanf(line, "%*s %*s %*s %lx %x %*s %lu %n", &flags, &type, inode, &at) != 3 || !at)
        return 0;
    const char *p = line + at;
    size_t n = strcspn(p, "\n");
    if (!(flags & UNIX_LISTENING) || type != UNIX_STREAM || p[0] != '/' || n >= len)
        return 0;
    memcpy(path, p, n);
    path[n] = '\0';
    return 1;
}

int host_pid_unix_listener(pid_t pid, char *path, size_t len)
{
    char file[64], line[4096 + 128];
    unsigned long inode;
    int found = 0;
    snprintf(file, sizeof file, "%s/net/unix", host_proc_dir);
    FILE *f = fopen(file, "re");
    if (!f)
        return 0;
    while (!found && fgets(line, sizeof line, f))
        found = listening_path(line, &inode, path, len) && host_pid_socket_fd(pid, inode) >= 0;
    fclose(f);
    return found;
}
