/* reg_server_log.c - the name of a dev server's log, and whose it is.
 *
 * One name per worktree path, front and service: the worktree's folder
 * name, for people, then a hash of its whole path, since two worktrees
 * with one folder name (wt/t2 and wt2/t2, an orchestrator's) run at once
 * and each must read its own server's lines. The daemon's starts and
 * `wtproxy run` name it alike, so a server's log is one file however it
 * was started. Each run starts with a line naming the worktree: the logs
 * of worktrees that are gone are found by it (`wtproxy logs --prune`). */
#include "registry.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "host.h"

#define LOG_FOLDER_MAX 64 /* bytes of the folder name kept in a log's name */

/* FNV-1a: short, and a collision needs two worktrees of one folder name. */
static uint32_t path_hash(const char *s)
{
    uint64_t h = 14695981039346656037ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (uint32_t)(h ^ (h >> 32));
}

void reg_log_prefix(const char *worktree, char *out, size_t len)
{
    const char *name = strrchr(worktree, '/');
    name = name && name[1] ? name + 1 : worktree;
    snprintf(out, len, "%.*s-%08x-", LOG_FOLDER_MAX, name, path_hash(worktree));
}

void reg_log_name(const char *worktree, int front, const char *service, char *out, size_t len)
{
    char prefix[LOG_FOLDER_MAX + 16];
    reg_log_prefix(worktree, prefix, sizeof prefix);
    snprintf(out, len, "%s%d%s%s.log", prefix, front, service && service[0] ? "-" : "",
             service ? service : "");
}

/* The worktree line names, into out: 0, or -1 when it is no run's line. */
static int whose_line(const char *line, char *out, size_t len)
{
    size_t head = strlen(REG_LOG_HEAD);
    const char *end = NULL;
    for (const char *p = line; (p = strstr(p, " (front ")); p++)
        end = p; /* the last: a folder may hold the words */
    if (strncmp(line, REG_LOG_HEAD, head) != 0 || !end || end <= line + head)
        return -1;
    snprintf(out, len, "%.*s", (int)(end - line - head), line + head);
    return 0;
}

/* The worktree the first line of the file at path names. */
static int whose_file(const char *path, char *out, size_t len)
{
    char line[PATH_MAX + 256];
    FILE *f = fopen(path, "re");
    int r = f && fgets(line, sizeof line, f) ? whose_line(line, out, len) : -1;
    if (f)
        fclose(f);
    return r;
}

int reg_log_whose(const char *path, char *out, size_t len)
{
    char old[PATH_MAX + 8];
    size_t n = strlen(path);
    if (whose_file(path, out, len) == 0)
        return 0;
    /* rotated once: the run's line is the first of its .1 */
    snprintf(old, sizeof old, "%s.1", path);
    return n > 2 && strcmp(path + n - 2, ".1") != 0 ? whose_file(old, out, len) : -1;
}

int reg_log_named(const char *file)
{
    for (const char *p = strchr(file, '-'); p; p = strchr(p + 1, '-')) {
        /* "-<8 hex>-<front>", then ".log" or "-<service>.log" */
        if (strspn(p + 1, "0123456789abcdef") != 8 || p[9] != '-')
            continue;
        size_t digits = strspn(p + 10, "0123456789");
        if (digits && (strncmp(p + 10 + digits, ".log", 4) == 0 || p[10 + digits] == '-'))
            return 1;
    }
    return 0;
}

int reg_log_predates(const char *path, const char *worktree)
{
    struct timespec born;
    struct stat st;
    if (stat(path, &st) < 0 || host_worktree_born(worktree, &born) < 0)
        return 0;
    return st.st_mtim.tv_sec < born.tv_sec ||
           (st.st_mtim.tv_sec == born.tv_sec && st.st_mtim.tv_nsec < born.tv_nsec);
}
