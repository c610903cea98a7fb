/* proc.c - facts about processes from /proc (proc(5)).
 *
 * /proc/PID/stat is one line:
 *   pid (comm) state ppid pgrp ... starttime ...
 * comm is the executable's name, up to 15 bytes, and may hold anything,
 * spaces and ')' included ("a) b"). So the fields after it are counted
 * from the LAST ')': state is field 3, starttime field 22, in clock ticks
 * since boot. A pid is reused only by a process started later, so (pid,
 * starttime) names one process for as long as the machine runs. */
#include "host.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STAT_STARTTIME 22 /* field number in /proc/PID/stat */

/* Where /proc is; the unit tests fake it. */
const char *host_proc_dir = "/proc";

/* Read up to len - 1 bytes of path into buf, NUL-terminated. Returns the
 * count, or -1 when the file cannot be opened or read. */
ssize_t host_read_small_file(const char *path, char *buf, size_t len)
{
    size_t n = 0;
    ssize_t r;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) return -1;
    while (n < len - 1 && (r = read(fd, buf + n, len - 1 - n)) != 0) {
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            close(fd);
            return -1;
        }
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    return (ssize_t)n;
}

/* Field 22 of a /proc/PID/stat line. Returns 0 for a malformed line and
 * for a zombie (state Z or X): it has exited, only its parent has not
 * reaped it yet, and its pid cannot serve anything. */
static unsigned long long parse_stat_starttime(const char *line)
{
    const char *p = strrchr(line, ')');
    unsigned long long start;
    char *end;

    if (!p || p[1] != ' ') return 0;
    p += 2; /* at field 3, the state */
    if (*p == 'Z' || *p == 'X') return 0;
    for (int field = 3; field < STAT_STARTTIME; field++) {
        p = strchr(p, ' ');
        if (!p) return 0;
        p++;
    }
    if (*p < '0' || *p > '9') return 0; /* strtoull would take a '-' */
    errno = 0;
    start = strtoull(p, &end, 10);
    if (errno || (*end != ' ' && *end != '\n' && *end != '\0')) return 0;
    return start;
}

long host_proc_pid(const char *name)
{
    char *end;
    long pid;

    if (name[0] < '1' || name[0] > '9') return 0;
    errno = 0;
    pid = strtol(name, &end, 10);
    return *end == '\0' && errno == 0 ? pid : 0;
}

pid_t host_pid_parent(pid_t pid)
{
    char path[64], line[1024], *end;
    const char *p;
    long ppid;

    snprintf(path, sizeof path, "%s/%ld/stat", host_proc_dir, (long)pid);
    if (pid <= 0 || host_read_small_file(path, line, sizeof line) <= 0) return 0;
    /* "pid (comm) S ppid ...": comm may hold spaces and ')' */
    if (!(p = strrchr(line, ')')) || p[1] != ' ' || !p[2] || p[3] != ' ') return 0;
    errno = 0;
    ppid = strtol(p + 4, &end, 10);
    return errno == 0 && end != p + 4 && *end == ' ' && ppid > 0 ? (pid_t)ppid : 0;
}

unsigned long long host_pid_start(pid_t pid)
{
    char path[64], line[1024]; /* the line is ~300 bytes; comm is at most 64 */

    if (pid <= 0) return 0;
    snprintf(path, sizeof path, "%s/%ld/stat", host_proc_dir, (long)pid);
    if (host_read_small_file(path, line, sizeof line) <= 0) return 0;
    return parse_stat_starttime(line);
}
