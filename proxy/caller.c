/* caller.c - which worktree a process belongs to (ARCHITECTURE.md): its
 * WTPROXY_WORKTREE or its cwd, else its parent's, up the ppid chain. The
 * facts (a process's environment, cwd, uid and parent; the worktree of a
 * folder) are host/'s; this file is the policy of the walk. */
#include "caller.h"
#include "host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENV_NAME "WTPROXY_WORKTREE"
/* Set by Playwright in each worker process, inherited by the browser it
 * launches: which worker's test a refused request belongs to, for the
 * reporter (whoami/node/playwright-reporter.mjs). */
#define WORKER_ENV "TEST_WORKER_INDEX"
#define WORKER_DEPTH 4 /* the socket's process (a browser's network service) to its worker */

/* The worktree of dir into place. Returns 0, or -1 when dir is in none. */
static int place_in(const char *dir, struct caller_place *place)
{
    struct host_worktree w;

    if (host_worktree_of(dir, &w, NULL, 0) < 0)
        return -1;
    memcpy(place->worktree, w.root, sizeof place->worktree);
    memcpy(place->common_dir, w.common, sizeof place->common_dir);
    return 0;
}

/* Whether the cwd dir (readlink of /proc/PID/cwd) is a folder removed
 * since the process went there: the kernel marks it " (deleted)". */
static int removed(const char *dir)
{
    static const char mark[] = " (deleted)";
    size_t n = strlen(dir), m = sizeof mark - 1;
    return n > m && strcmp(dir + n - m, mark) == 0;
}

/* Whether pid decides: its WTPROXY_WORKTREE naming a worktree (an explicit
 * override: any repository; an absolute path, for relative to what?),
 * else its cwd in a worktree of a repository known() accepts. Fills
 * place's worktree, common_dir and how. Returns 1 when it decides, 0
 * when not, -1 when its cwd was removed: its worktree is gone (git
 * worktree remove under a running test), and its parent's folder says
 * nothing of this process's code. Walking on, a removed worktree's tests
 * were served by the main checkout's server, where their coordinator's
 * shell ran, and a test that must fail passed. */
static int decides(pid_t pid, caller_known_fn known, void *arg, struct caller_place *place)
{
    char dir[PATH_MAX];

    if (host_pid_env(pid, ENV_NAME, dir, sizeof dir) == 0 && dir[0] == '/' &&
        place_in(dir, place) == 0) {
        snprintf(place->how, sizeof place->how, "env");
        return 1;
    }
    int has_cwd = host_pid_cwd(pid, dir, sizeof dir) == 0;
    if (has_cwd && place_in(dir, place) == 0 && known(place->worktree, place->common_dir, arg)) {
        snprintf(place->how, sizeof place->how, "cwd");
        return 1;
    }
    place->worktree[0] = place->common_dir[0] = '\0';
    return has_cwd && removed(dir) ? -1 : 0;
}

int caller_test_worker(pid_t pid, uid_t uid)
{
    char value[16];
    uid_t owner;
    for (int depth = 0; pid > 1 && depth < WORKER_DEPTH; depth++) {
        if (host_pid_uid(pid, &owner) < 0 || owner != uid)
            break;
        if (host_pid_env(pid, WORKER_ENV, value, sizeof value) == 0 && value[0] >= '0' &&
            value[0] <= '9')
            return atoi(value);
        pid = host_pid_parent(pid);
    }
    return -1;
}

int caller_place(pid_t pid, uid_t uid, caller_known_fn known, void *arg, struct caller_place *place)
{
    uid_t owner;
    pid_t p = pid;

    memset(place, 0, sizeof *place);
    place->pid = pid;
    host_pid_cmdline(pid, place->comm, sizeof place->comm);
    host_pid_cwd(pid, place->cwd, sizeof place->cwd);
    for (int depth = 0; p > 1 && depth < CALLER_MAX_DEPTH; depth++) {
        if (host_pid_uid(p, &owner) < 0 || owner != uid)
            break;
        int d = decides(p, known, arg, place);
        if (d > 0) {
            place->decided_by = p;
            place->depth = depth;
            return 0;
        }
        if (d < 0) /* unplaced: the refusal says the folder was removed (route.c) */
            break;
        p = host_pid_parent(p);
    }
    return -1;
}

int caller_place_dir(const char *dir, caller_known_fn known, void *arg, struct caller_place *place)
{
    memset(place, 0, sizeof *place);
    snprintf(place->cwd, sizeof place->cwd, "%s", dir);
    if (place_in(dir, place) == 0 && known(place->worktree, place->common_dir, arg)) {
        snprintf(place->how, sizeof place->how, "cwd");
        return 0;
    }
    place->worktree[0] = place->common_dir[0] = '\0';
    return -1;
}
