/* logs_prune.c - `wtproxy logs --prune`: remove the servers' logs of
 * worktrees that no longer exist. A server's wrapper removes its own log
 * when it stops because its worktree was removed (run.c); what remains is
 * the log of a worktree removed while none of its servers ran, or while
 * the daemon was down, and the logs of an older wtproxy, which named them
 * by the folder only. Each log's first line names its worktree
 * (reg_log_whose); a log a registered server writes is never touched. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host.h"
#include "registry.h"

/* The logs registered servers write now, or NULL after saying why not. */
static json_t *logs_in_use(void)
{
    char err[PATH_MAX + 256];
    json_t *reply = NULL, *req = json_pack("{s:s}", "op", "list"), *in_use = json_array(), *e;
    size_t i;
    int r = req && in_use ? cli_call(req, 0, &reply, err, sizeof err) : -1;
    json_decref(req);
    if (r < 0 && r != CLI_NO_DAEMON) { /* no daemon: nothing is registered */
        fprintf(stderr, "wtproxy logs --prune: %s\n", req && in_use ? err : "out of memory");
        json_decref(in_use);
        return NULL;
    }
    json_array_foreach(json_object_get(reply, "entries"), i, e) {
        json_t *log = json_object_get(e, "log");
        if (json_is_string(log))
            json_array_append(in_use, log);
    }
    json_decref(reply);
    return in_use;
}

static int in_use_by(json_t *in_use, const char *path)
{
    json_t *log;
    size_t i;
    json_array_foreach(in_use, i, log) {
        if (strcmp(json_string_value(log), path) == 0)
            return 1;
    }
    return 0;
}

/* Why the log at path (file in servers/) is to go, into why; 0 when it
 * stays, as one whose worktree cannot be told (rotated twice) does. */
static int stale(const char *path, const char *file, char *why, size_t len)
{
    char worktree[PATH_MAX];
    if (reg_log_whose(path, worktree, sizeof worktree) < 0) {
        if (reg_log_named(file))
            return 0;
        snprintf(why, len, "an older wtproxy's, which named logs by the folder only");
        return 1;
    }
    if (host_worktree_removed(worktree)) {
        snprintf(why, len, "%s is gone", worktree);
        return 1;
    }
    if (reg_log_predates(path, worktree)) {
        snprintf(why, len, "of an earlier worktree at %s", worktree);
        return 1;
    }
    return 0;
}

/* Remove path (file in servers/: a log, or a .1 whose log is gone) and
 * its .1. Returns 1 when it went. */
static int prune_one(const char *path, const char *file, json_t *in_use)
{
    char why[PATH_MAX + 128], old[PATH_MAX + 8];
    size_t n = strlen(path);
    int rotated = n > 6 && strcmp(path + n - 6, ".log.1") == 0;
    if (in_use_by(in_use, path) || !stale(path, file, why, sizeof why))
        return 0;
    if (rotated) {
        snprintf(old, sizeof old, "%.*s", (int)(n - 2), path);
        if (access(old, F_OK) == 0)
            return 0; /* it goes, or stays, with its log */
    }
    if (unlink(path) < 0) {
        fprintf(stderr, "wtproxy logs --prune: cannot remove %s: %s\n", path, strerror(errno));
        return 0;
    }
    snprintf(old, sizeof old, "%s.1", path);
    unlink(old);
    printf("removed %s: %s\n", path, why);
    return 1;
}

int cli_logs_prune(void)
{
    char state[PATH_MAX - NAME_MAX - 16], dir[PATH_MAX - NAME_MAX - 2], err[PATH_MAX + 256];
    if (reg_state_dir(state, sizeof state, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy logs --prune: %s\n", err);
        return 1;
    }
    snprintf(dir, sizeof dir, "%s/servers", state);
    json_t *in_use = logs_in_use();
    if (!in_use)
        return 1;
    DIR *d = opendir(dir);
    struct dirent *e;
    int removed = 0, kept = 0;
    while (d && (e = readdir(d))) {
        char path[PATH_MAX];
        size_t n = strlen(e->d_name);
        if ((n <= 4 || strcmp(e->d_name + n - 4, ".log") != 0) &&
            (n <= 6 || strcmp(e->d_name + n - 6, ".log.1") != 0))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (prune_one(path, e->d_name, in_use))
            removed++;
        else if (e->d_name[n - 1] == 'g')
            kept++;
    }
    if (d)
        closedir(d);
    json_decref(in_use);
    printf("wtproxy logs --prune: removed %d log%s of worktrees that no longer exist; kept %d in "
           "%s\n",
           removed, removed == 1 ? "" : "s", kept, dir);
    return 0;
}
