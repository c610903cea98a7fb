/* ondemand_launch.c - one on-demand server started: its `wtproxy run`
 * wrapper forked in its own session, with its environment and its log
 * (ondemand.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log_flood.h"
#include "ondemand_int.h"

extern char **environ;

/* The environment of a started server: ours, with the control socket,
 * no daemon start of its own, and the front port of each named service. */
static char **child_env(struct ondemand *a, const struct started *e, char (*own)[96])
{
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + ONDEMAND_ENV_EXTRA + 1, sizeof *env);
    if (!env)
        return NULL;
    env[k++] = a->control;
    env[k++] = "WTPROXY_NO_AUTOSTART=1";
    for (int i = 0; e->svc.name[0] && i < e->nsib; i++) {
        char var[64];
        wtfile_front_var(e->sib[i].name, var, sizeof var);
        snprintf(own[i], sizeof own[i], "%s=%d", var, e->sib[i].front);
        env[k++] = own[i];
    }
    for (size_t i = 0; i < n; i++) /* ours first: the first of a name wins */
        env[k++] = environ[i];
    return env;
}

/* Fork `wtproxy run` for e in its own session (so idle stop can signal the
 * whole group and the daemon's signals do not reach it), the log as its
 * output. Everything the child needs is built before fork: the daemon has
 * threads, so the child calls nothing that may take a lock. */
int ondemand_launch(struct ondemand *a, struct started *e)
{
    char front[16], own[WTFILE_MAX_SERVICES][96];
    snprintf(front, sizeof front, "%d", e->svc.front);
    const char *argv[16] = {a->exe,       "run",       "--front",           front,
                            "--worktree", e->worktree, "--restart-on-stale"};
    int n = 7;
    if (e->svc.name[0]) {
        argv[n++] = "--service";
        argv[n++] = e->svc.name;
    }
    if (e->svc.ready[0]) {
        argv[n++] = "--health";
        argv[n++] = e->svc.ready;
    }
    const char *tail[] = {"--", "/bin/sh", "-c", e->svc.start};
    memcpy(argv + n, tail, sizeof tail);
    char **env = child_env(a, e, own);
    mkdir(a->log_dir, 0700);
    pid_t pid = env ? fork() : -1;
    if (pid == 0) {
        setsid();
        int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int out = open(e->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0 ||
            chdir(e->worktree) < 0)
            _exit(127);
        execve(a->exe, (char **)argv, env);
        _exit(127);
    }
    free(env);
    e->waiting = 0;
    if (pid < 0) {
        snprintf(e->failed, sizeof e->failed, "cannot start %s's server: %s", e->worktree,
                 strerror(errno));
        log_flood_line(a->srv->flood, e->failed, "%s", e->failed);
        return -1;
    }
    e->pid = pid;
    proxy_log("started %s's server%s%s from its .wtproxy (pid %d, front :%d); log: %s", e->worktree,
              e->svc.name[0] ? " for service " : "", e->svc.name, (int)pid, e->svc.front, e->log);
    return 0;
}
