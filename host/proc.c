/* proc.c - facts about processes from /proc (proc(5)).
 *
 * /proc/PID/stat is one line:
 *   pid (comm) state ppid pgrp ... starttime ...
 * comm is the executable's name, up to 15 bytes, and may hold anything,
 * spaces and ')' included ("a) b"). So the fields after it are counted
 * from the LAST ')': state is field 3, starttime field 22, in clock ticks
 * since boot. A pid is reused only by a process started later, so (pid,
 * starttime) names one process for as long as the machine runs.
 *
 * The other files of /proc/PID read here: cmdline (argv, NUL-separated),
 * cwd (a symlink), environ (the environment the process was started with,
 * NUL-separated; a later setenv() is not seen), and the directory's owner
 * (the effective uid; root's for a process that made itself non-dumpable).
 * Another user's cwd and environ are unreadable. */
#include "host.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

    if (fd < 0)
        return -1;
    while (n < len - 1 && (r = read(fd, buf + n, len - 1 - n)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
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

    if (!p || p[1] != ' ')
        return 0;
    p += 2; /* at field 3, the state */
    if (*p == 'Z' || *p == 'X')
        return 0;
    for (int field = 3; field < STAT_STARTTIME; field++) {
        p = strchr(p, ' ');
        if (!p)
            return 0;
        p++;
    }
    if (*p < '0' || *p > '9')
        return 0; /* strtoull would take a '-' */
    errno = 0;
    start = strtoull(p, &end, 10);
    if (errno || (*end != ' ' && *end != '\n' && *end != '\0'))
        return 0;
    return start;
}

#define STAT_EXIT_CODE 52 /* field number in /proc/PID/stat (Linux 3.5 on) */

int host_zombie_status(pid_t pid)
{
    char path[64], line[1024], *end;
    const char *p;
    snprintf(path, sizeof path, "%s/%ld/stat", host_proc_dir, (long)pid);
    if (pid <= 0 || host_read_small_file(path, line, sizeof line) <= 0 ||
        !(p = strrchr(line, ')')) || p[1] != ' ' || p[2] != 'Z')
        return -1;
    for (int field = 2; p && field < STAT_EXIT_CODE; field++)
        p = strchr(p + 1, ' ');
    if (!p || p[1] < '0' || p[1] > '9')
        return -1;
    long status = strtol(p + 1, &end, 10);
    return *end == '\n' || *end == ' ' || *end == '\0' ? (int)status : -1;
}

long host_proc_pid(const char *name)
{
    char *end;
    long pid;

    if (name[0] < '1' || name[0] > '9')
        return 0;
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
    if (pid <= 0 || host_read_small_file(path, line, sizeof line) <= 0)
        return 0;
    /* "pid (comm) S ppid ...": comm may hold spaces and ')' */
    if (!(p = strrchr(line, ')')) || p[1] != ' ' || !p[2] || p[3] != ' ')
        return 0;
    errno = 0;
    ppid = strtol(p + 4, &end, 10);
    return errno == 0 && end != p + 4 && *end == ' ' && ppid > 0 ? (pid_t)ppid : 0;
}

unsigned long long host_pid_start(pid_t pid)
{
    char path[64], line[1024]; /* the line is ~300 bytes; comm is at most 64 */

    if (pid <= 0)
        return 0;
    snprintf(path, sizeof path, "%s/%ld/stat", host_proc_dir, (long)pid);
    if (host_read_small_file(path, line, sizeof line) <= 0)
        return 0;
    return parse_stat_starttime(line);
}

long long host_pid_started_ns(pid_t pid)
{
    unsigned long long ticks = host_pid_start(pid);
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec boot, wall;
    if (!ticks || hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot) < 0 ||
        clock_gettime(CLOCK_REALTIME, &wall) < 0)
        return 0;
    long long tick = 1000000000LL / hz;
    long long boot_ns = (long long)boot.tv_sec * 1000000000LL + boot.tv_nsec;
    long long wall_ns = (long long)wall.tv_sec * 1000000000LL + wall.tv_nsec;
    return wall_ns - boot_ns + (long long)ticks * tick + tick;
}

/* Make n bytes of a raw /proc/PID/cmdline printable in place: the NULs
 * between arguments become spaces, control characters '?' (the line ends
 * up in messages and terminals), trailing spaces go, and a command line
 * cut short by the buffer ends in "...". len is buf's size; n < len. */
static void clean_cmdline(char *buf, size_t n, size_t len, int truncated)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if (ch == '\0')
            buf[i] = ' ';
        else if (ch < 0x20 || ch == 0x7f)
            buf[i] = '?';
    }
    while (n > 0 && buf[n - 1] == ' ')
        n--;
    if (truncated && len >= 4) {
        if (n > len - 4)
            n = len - 4;
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
}

void host_pid_cmdline(pid_t pid, char *buf, size_t len)
{
    char path[64], more;
    size_t n = 0;
    ssize_t r;
    int fd, truncated = 0;

    snprintf(path, sizeof path, "%s/%ld/cmdline", host_proc_dir, (long)pid);
    if (pid > 0 && (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
        while (n < len - 1 && (r = read(fd, buf + n, len - 1 - n)) != 0) {
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                break;
            n += (size_t)r;
        }
        truncated = n == len - 1 && read(fd, &more, 1) == 1;
        close(fd);
    }
    clean_cmdline(buf, n, len, truncated);
}

int host_pid_cwd(pid_t pid, char *buf, size_t len)
{
    char path[64];
    ssize_t n;

    snprintf(path, sizeof path, "%s/%ld/cwd", host_proc_dir, (long)pid);
    n = pid > 0 ? readlink(path, buf, len) : -1;
    if (n <= 0 || (size_t)n >= len) {
        buf[0] = '\0';
        return -1;
    }
    buf[n] = '\0';
    return 0;
}

int host_pid_uid(pid_t pid, uid_t *uid)
{
    char path[64];
    struct stat st;

    snprintf(path, sizeof path, "%s/%ld", host_proc_dir, (long)pid);
    if (pid <= 0 || stat(path, &st) < 0)
        return -1;
    *uid = st.st_uid;
    return 0;
}

/* The link /proc/WHO/ns/mnt reads ("mnt:[4026531841]"): one per mount
 * namespace. Returns 0, or -1 when unreadable. */
static int mount_ns(const char *who, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "%s/%s/ns/mnt", host_proc_dir, who);
    ssize_t n = readlink(path, buf, len - 1);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return 0;
}

int host_pid_same_mounts(pid_t pid)
{
    char who[24], mine[64], theirs[64];
    snprintf(who, sizeof who, "%ld", (long)pid);
    if (pid <= 0 || mount_ns("self", mine, sizeof mine) < 0 ||
        mount_ns(who, theirs, sizeof theirs) < 0)
        return -1;
    return strcmp(mine, theirs) == 0;
}

int host_pid_env(pid_t pid, const char *name, char *buf, size_t len)
{
    char path[64], *entry = NULL;
    size_t cap = 0, nlen = strlen(name), vlen;
    int rc = -1;
    FILE *f;

    snprintf(path, sizeof path, "%s/%ld/environ", host_proc_dir, (long)pid);
    if (pid <= 0 || !(f = fopen(path, "re")))
        return -1;
    while (getdelim(&entry, &cap, '\0', f) > 0) {
        if (strncmp(entry, name, nlen) != 0 || entry[nlen] != '=')
            continue;
        vlen = strlen(entry + nlen + 1);
        if (vlen < len) {
            memcpy(buf, entry + nlen + 1, vlen + 1);
            rc = 0;
        }
        break; /* the first one, as getenv() reads it */
    }
    free(entry);
    fclose(f);
    return rc;
}

int host_load_pct(unsigned *pct, double *load, int *ncpu)
{
    char path[PATH_MAX], buf[128];
    snprintf(path, sizeof path, "%s/loadavg", host_proc_dir);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    double l1;
    if (host_read_small_file(path, buf, sizeof buf) <= 0 || sscanf(buf, "%lf", &l1) != 1 ||
        l1 < 0 || cpus < 1)
        return -1;
    *pct = (unsigned)(l1 * 100 / (double)cpus + 0.5);
    if (load)
        *load = l1;
    if (ncpu)
        *ncpu = (int)cpus;
    return 0;
}
