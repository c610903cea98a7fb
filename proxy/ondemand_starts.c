/* ondemand_starts.c - what the daemon knows of the starts it made or
 * waits to make (ondemand.h): exited, failed, their state, the pending
 * ones for `wtproxy ls`. */
#include <stdio.h>
#include <sys/wait.h>

#include "host.h"
#include "ondemand_int.h"

int ondemand_exited(struct ondemand *a, const char *worktree, int front, char *log, size_t loglen)
{
    struct started *e = ondemand_find(a, worktree, front);
    if (e)
        snprintf(log, loglen, "%s", e->log);
    /* An adopted server's end is not ours to describe: its status went to
     * whoever reaps it. */
    return e && !e->adopted && !ondemand_running(a, e) && !e->waiting;
}

void ondemand_named(struct ondemand *a, const char *worktree, int front, char *out, size_t len)
{
    struct started *e = ondemand_find(a, worktree, front);
    if (e && e->svc.name[0])
        snprintf(out, len, "service `%s` that %s/.wtproxy declares", e->svc.name, worktree);
    else
        snprintf(out, len, "the server that %s/.wtproxy declares", worktree);
}

int ondemand_exit_note(struct ondemand *a, const char *worktree, int front, char *out, size_t len)
{
    char log[PATH_MAX + 64], what[PATH_MAX + 128], how[256] = "exited";
    if (!ondemand_exited(a, worktree, front, log, sizeof log))
        return 0;
    struct started *e = ondemand_find(a, worktree, front);
    if (WIFEXITED(e->status) || WIFSIGNALED(e->status)) /* its wrapper's: 128+N for a signal */
        host_exit_words(WIFEXITED(e->status) ? WEXITSTATUS(e->status) : -1, WTERMSIG(e->status),
                        e->svc.start, NULL, how, sizeof how);
    ondemand_named(a, worktree, front, what, sizeof what);
    const struct reg_last_words *w = reg_server_last_words(a->srv->reg, front, worktree);
    int served = w && w->served;
    snprintf(out, len, "%s %s %s; its output: %s (wtproxy logs %s%s%s)", what, how,
             served ? "after it had served" : "before it listened", log, worktree,
             e->svc.name[0] ? " --service " : "", e->svc.name);
    return served ? 2 : 1;
}

const char *ondemand_failed(struct ondemand *a, const char *worktree, int front)
{
    struct started *e = ondemand_find(a, worktree, front);
    return e && !ondemand_running(a, e) && !e->waiting && e->failed[0] ? e->failed : NULL;
}

int ondemand_failed_after(struct ondemand *a, const char *worktree, int front)
{
    struct started *e = ondemand_find(a, worktree, front);
    return e && e->failed_after;
}

const char *ondemand_state(struct ondemand *a, const char *worktree, int front, unsigned *load_pct)
{
    struct started *e = ondemand_find(a, worktree, front);
    *load_pct = e && e->waiting ? e->load_pct : 0;
    if (!e)
        return "stopped";
    return e->waiting && e->load_pct ? "waiting-load"
           : e->waiting              ? "waiting"
           : ondemand_running(a, e)  ? "launched"
           : e->failed[0]            ? "failed"
                                     : "stopped";
}

json_t *ondemand_pending(struct ondemand *a)
{
    json_t *list = json_array();
    for (int i = 0; list && i < a->n; i++) {
        struct started *e = &a->list[i];
        unsigned load;
        if (!e->waiting || ondemand_registered(a, e->worktree, e->svc.front))
            continue;
        const char *state = ondemand_state(a, e->worktree, e->svc.front, &load);
        json_t *o =
            json_pack("{s:s, s:s, s:i, s:s, s:I}", "worktree", e->worktree, "service", e->svc.name,
                      "front", e->svc.front, "state", state, "since_ms", (json_int_t)e->since_ms);
        if (o && load)
            json_object_set_new(o, "load", json_real(load / 100.0));
        json_array_append_new(list, o);
    }
    return list;
}
