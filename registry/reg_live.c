/* reg_live.c - whether a registration still stands for something: its
 * process, its TTL, its worktree folder; and the machine id of the key.
 *
 * /proc/PID/stat is one line (proc(5)):
 *   pid (comm) state ppid pgrp ... starttime ...
 * comm is the executable's name, up to 15 bytes, and may hold anything,
 * spaces and ')' included ("a) b"). So the fields after it are counted
 * from the LAST ')': state is field 3, starttime field 22, in clock ticks
 * since boot. A pid is reused only by a process started later, so (pid,
 * starttime) names one process for as long as the machine runs. */
#include "registry.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STAT_STARTTIME 22 /* field number in /proc/PID/stat */

/* Where /proc and the machine-id file are; the unit test fakes them. */
static const char *live_proc_dir = "/proc";
static const char *machine_id_path = "/etc/machine-id";

/* Read up to len - 1 bytes of path into buf, NUL-terminated. Returns the
 * count, or -1 when the file cannot be opened or read. */
static ssize_t read_small_file(const char *path, char *buf, size_t len)
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

long reg_proc_pid(const char *name)
{
    char *end;
    long pid;

    if (name[0] < '1' || name[0] > '9') return 0;
    errno = 0;
    pid = strtol(name, &end, 10);
    return *end == '\0' && errno == 0 ? pid : 0;
}

pid_t reg_pid_parent(pid_t pid)
{
    char path[64], line[1024], *end;
    const char *p;
    long ppid;

    snprintf(path, sizeof path, "%s/%ld/stat", live_proc_dir, (long)pid);
    if (pid <= 0 || read_small_file(path, line, sizeof line) <= 0) return 0;
    /* "pid (comm) S ppid ...": comm may hold spaces and ')' */
    if (!(p = strrchr(line, ')')) || p[1] != ' ' || !p[2] || p[3] != ' ') return 0;
    errno = 0;
    ppid = strtol(p + 4, &end, 10);
    return errno == 0 && end != p + 4 && *end == ' ' && ppid > 0 ? (pid_t)ppid : 0;
}

unsigned long long reg_pid_start(pid_t pid)
{
    char path[64], line[1024]; /* the line is ~300 bytes; comm is at most 64 */

    if (pid <= 0) return 0;
    snprintf(path, sizeof path, "%s/%ld/stat", live_proc_dir, (long)pid);
    if (read_small_file(path, line, sizeof line) <= 0) return 0;
    return parse_stat_starttime(line);
}

/* Whether b's process is still the one registered; on 0, why. */
static int pid_alive(const struct reg_backend *b, char *why, size_t whylen)
{
    unsigned long long start = reg_pid_start(b->pid);
    const char *lp = b->command[0] ? " (" : "", *rp = b->command[0] ? ")" : "";

    if (start == 0) {
        snprintf(why, whylen, "pid %ld%s%s%s exited", (long)b->pid, lp, b->command, rp);
        return 0;
    }
    /* pid_start 0: registered without a start time, so any process with
     * the pid counts (a reused pid goes unnoticed). */
    if (b->pid_start != 0 && start != b->pid_start) {
        snprintf(why, whylen, "pid %ld%s%s%s exited (the pid now belongs to another process)",
                 (long)b->pid, lp, b->command, rp);
        return 0;
    }
    return 1;
}

/* Whether b's worktree folder is still there; on 0, why. Only a folder
 * that is certainly gone counts: EACCES or EIO say nothing about it, and
 * dropping a live server on a hiccup would be worse than keeping it. */
static int worktree_alive(const struct reg_backend *b, char *why, size_t whylen)
{
    struct stat st;

    if (b->worktree[0] == '\0') return 1;
    if (stat(b->worktree, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return 1;
        snprintf(why, whylen, "worktree %s is no longer a folder", b->worktree);
        return 0;
    }
    if (errno != ENOENT && errno != ENOTDIR) return 1;
    snprintf(why, whylen, "worktree %s was removed", b->worktree);
    return 0;
}

int reg_backend_alive(const struct reg_backend *b, long long now_ms, char *why, size_t whylen)
{
    if (b->pid > 0 && !pid_alive(b, why, whylen)) return 0;
    /* expires_ms 0 is "no deadline": the configured default backend. */
    if (b->pid == 0 && b->expires_ms != 0 && now_ms >= b->expires_ms) {
        snprintf(why, whylen, "TTL passed (%lld s ago)", (now_ms - b->expires_ms) / 1000);
        return 0;
    }
    return worktree_alive(b, why, whylen);
}

/* The first line of path without surrounding whitespace into out ("" when
 * unreadable or blank). */
static void read_first_line(const char *path, char *out, size_t outlen)
{
    char buf[256];
    size_t start = 0, end;

    out[0] = '\0';
    if (read_small_file(path, buf, sizeof buf) < 0) return;
    buf[strcspn(buf, "\n")] = '\0';
    end = strlen(buf);
    while (start < end && strchr(" \t\r", buf[start])) start++;
    while (end > start && strchr(" \t\r", buf[end - 1])) end--;
    snprintf(out, outlen, "%.*s", (int)(end - start), buf + start);
}

/* Not thread-safe on the first call: the daemon and the CLI call it from
 * their one event loop thread. */
const char *reg_machine_id(void)
{
    static char id[sizeof ((struct reg_backend *)0)->machine];

    if (id[0]) return id;
    /* A test that plays two machines on one gives each its own id. */
    const char *env = getenv("WTPROXY_MACHINE");
    if (env && env[0] && strlen(env) < sizeof id) {
        snprintf(id, sizeof id, "%s", env);
        return id;
    }
    read_first_line(machine_id_path, id, sizeof id);
    if (id[0]) return id;
    /* No machine-id (a minimal container): the hostname names it well
     * enough, and is what people see in `wtproxy list` anyway. */
    if (gethostname(id, sizeof id - 1) != 0 || id[0] == '\0')
        snprintf(id, sizeof id, "unknown");
    id[sizeof id - 1] = '\0';
    return id;
}

const char *reg_worktree_name(const struct reg_backend *b)
{
    const char *slash = strrchr(b->worktree, '/');

    return slash ? slash + 1 : b->worktree;
}
