/* reg_live.c - whether a registration still stands for something: its
 * process (pid and start time, host/proc.c), its TTL, its worktree folder;
 * and the machine id of the key. */
#include "registry.h"

#include "host.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where the machine-id file is; the unit test fakes it. */
static const char *machine_id_path = "/etc/machine-id";

/* Whether b's process is still the one registered; on 0, why. */
static int pid_alive(const struct reg_backend *b, char *why, size_t whylen)
{
    unsigned long long start = host_pid_start(b->pid);
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

    if (b->worktree[0] == '\0')
        return 1;
    if (stat(b->worktree, &st) == 0) {
        /* Removed and added again at its path: the folder is there, but
         * b's process runs in the old one, deleted. */
        if (S_ISDIR(st.st_mode) && b->pid > 0 && host_pid_in_deleted(b->pid, b->worktree)) {
            snprintf(why, whylen,
                     "worktree %s was removed, and the folder at its path now is another (git "
                     "worktree remove, then add): pid %ld runs in the deleted one",
                     b->worktree, (long)b->pid);
            return 0;
        }
        if (S_ISDIR(st.st_mode))
            return 1;
        snprintf(why, whylen, "worktree %s is no longer a folder", b->worktree);
        return 0;
    }
    if (errno != ENOENT && errno != ENOTDIR)
        return 1;
    snprintf(why, whylen, "worktree %s was removed", b->worktree);
    return 0;
}

int reg_backend_alive(const struct reg_backend *b, long long now_ms, char *why, size_t whylen)
{
    if (b->pid > 0 && !pid_alive(b, why, whylen))
        return 0;
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
    if (host_read_small_file(path, buf, sizeof buf) < 0)
        return;
    buf[strcspn(buf, "\n")] = '\0';
    end = strlen(buf);
    while (start < end && strchr(" \t\r", buf[start]))
        start++;
    while (end > start && strchr(" \t\r", buf[end - 1]))
        end--;
    snprintf(out, outlen, "%.*s", (int)(end - start), buf + start);
}

/* Not thread-safe on the first call: the daemon and the CLI call it from
 * their one event loop thread. */
const char *reg_machine_id(void)
{
    static char id[sizeof((struct reg_backend *)0)->machine];

    if (id[0])
        return id;
    /* A test that plays two machines on one gives each its own id. */
    const char *env = getenv("WTPROXY_MACHINE");
    if (env && env[0] && strlen(env) < sizeof id) {
        snprintf(id, sizeof id, "%s", env);
        return id;
    }
    read_first_line(machine_id_path, id, sizeof id);
    if (id[0])
        return id;
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
