/* why.c - `wtproxy why [--pid PID] [--front PORT]`: how the daemon would
 * place a process's requests: the ppid chain it walks, the ancestor that
 * decides and by what, the worktree, and the backend that maps to. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "caller.h"
#include "cli.h"
#include "registry.h"
#include "host.h"

static int known(const char *common_dir, void *arg)
{
    struct reg_table *t = arg;
    struct host_worktree w;
    for (size_t i = 0; i < reg_table_count(t); i++)
        if (host_worktree_of(reg_table_at(t, i)->worktree, &w, NULL, 0) == 0 &&
            strcmp(w.common, common_dir) == 0)
            return 1;
    return 0;
}

static int parse_int(const char *flag, const char *v, long min, long max, long *out)
{
    char *end;
    errno = 0;
    *out = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || end == v || *end || *out < min || *out > max) {
        fprintf(stderr, "wtproxy why: %s needs a number from %ld to %ld\n", flag, min, max);
        return -1;
    }
    return 0;
}

/* The chain from pid to the decider (or as far as the walk goes). */
static void print_chain(const struct caller_place *pl)
{
    pid_t pid = pl->pid;
    for (int depth = 0; pid > 1 && depth <= (pl->decided_by ? pl->depth : CALLER_MAX_DEPTH - 1);
         depth++) {
        char cwd[PATH_MAX];
        int known_cwd = host_pid_cwd(pid, cwd, sizeof cwd) == 0;
        printf("  %s pid %-7d cwd %s%s\n", depth ? "<-" : "  ", (int)pid, known_cwd ? cwd : "?",
               pid == pl->decided_by ? "   <- decides" : "");
        pid = host_pid_parent(pid);
    }
}

static int explain(pid_t pid, int front, struct reg_table *t)
{
    struct caller_place pl;
    struct stat st;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    if (stat(path, &st) < 0) {
        fprintf(stderr, "wtproxy why: no process %d\n", (int)pid);
        return 1;
    }
    int placed = caller_place(pid, st.st_uid, known, t, &pl) == 0;
    printf("process %d: %s\n", (int)pid, pl.comm);
    print_chain(&pl);
    if (!placed) {
        printf("not placed: no process in the chain has WTPROXY_WORKTREE, nor a cwd in a "
               "worktree of a repository with a registration.\nIts requests go to the default "
               "backend, or get 503. Place it: run it from its worktree, set "
               "WTPROXY_WORKTREE=/path/to/worktree, or send X-Wtproxy-Worktree.\n");
        return 1;
    }
    printf("worktree %s\n  decided by pid %d (its %s)\n", pl.worktree, (int)pl.decided_by,
           strcmp(pl.how, "env") == 0 ? "WTPROXY_WORKTREE" : "cwd");
    struct reg_backend *b = reg_table_get(t, front, pl.worktree);
    if (!b) {
        printf("backend: none on front :%d; requests get 503. Start one from the worktree: "
               "wtproxy run -- <server command with {port}>\n", front);
        return 1;
    }
    printf("backend: %s (pid %d, %s) on front :%d\n", b->name, (int)b->pid,
           b->state == REG_READY ? "ready" : b->state == REG_STARTING ? "starting" : "dead",
           front);
    return 0;
}

int cli_why_main(int argc, char **argv)
{
    long pid = (long)getpid(), front = WTP_DEFAULT_FRONT_PORT;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return CLI_HELP;
        int is_pid = strcmp(argv[i], "--pid") == 0, is_front = strcmp(argv[i], "--front") == 0;
        if (!is_pid && !is_front) {
            fprintf(stderr, "wtproxy why: unknown option \"%s\" (see wtproxy why --help)\n",
                    argv[i]);
            return 2;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (parse_int(argv[i - (v != NULL)], v, 1, is_pid ? INT_MAX : 65535,
                      is_pid ? &pid : &front) < 0)
            return 2;
    }
    char err[PATH_MAX + 256];
    struct reg_table *t = cli_table(err, sizeof err);
    if (!t) {
        fprintf(stderr, "wtproxy why: %s\n", err);
        return 1;
    }
    int r = explain((pid_t)pid, (int)front, t);
    reg_table_free(t);
    return r;
}
