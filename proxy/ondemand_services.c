/* ondemand_services.c - what a repository declares (ondemand.h):
 * ondemand_services_of, the services a worktree's .wtproxy declares, each
 * with what runs of it now, for the `services` op and, as last read by
 * a worker, the dashboard; and
 * ondemand_declared, whether a repository declares any. */
#include "ondemand.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ondemand_cache.h"
#include "server.h"
#include "wtfile.h"

static const char *const reg_states[] = {
    [REG_STARTING] = "starting", [REG_READY] = "ready", [REG_DEAD] = "dead"};

static json_t *service_json(struct proxy_server *s, const char *worktree, const struct wtfile *f,
                            const struct wtfile_service *svc)
{
    struct reg_table *t = s->reg ? reg_server_table(s->reg) : NULL;
    struct reg_backend *b = t ? reg_table_get(t, svc->front, worktree) : NULL;
    unsigned load = 0;
    const char *state = b && b->state != REG_DEAD ? reg_states[b->state]
                        : s->ondemand ? ondemand_state(s->ondemand, worktree, svc->front, &load)
                                      : "stopped";
    json_t *after = json_array();
    for (int k = 0; after && k < svc->nafter; k++)
        json_array_append_new(after, json_string(f->svc[svc->after[k]].name));
    json_t *o =
        json_pack("{s:s, s:i, s:s, s:o, s:o, s:I, s:b, s:s}", "name", svc->name, "front",
                  svc->front, "start", svc->start, "after", after ? after : json_array(), "ready",
                  svc->ready[0] ? json_string(svc->ready) : json_null(), "idle_stop_ms",
                  (json_int_t)svc->idle_ms, "running",
                  (b && b->state != REG_DEAD) || strcmp(state, "launched") == 0, "state", state);
    if (o && b && b->state == REG_STARTING && b->start_failed[0]) /* it waits for a change */
        json_object_set_new(o, "start_failed",
                            json_pack("{s:s, s:s}", "when",
                                      reg_failed_when_name(b->start_failed_when), "reloader",
                                      b->reloader));
    if (o && load) /* waiting-load: the load per CPU it waits on */
        json_object_set_new(o, "load", json_real(load / 100.0));
    if (o && s->ondemand) { /* what `wtproxy logs` shows of a server that died at start */
        char log[PATH_MAX + 128];
        ondemand_log_path(s->ondemand, worktree, svc->front, svc->name, log, sizeof log);
        json_object_set_new(o, "log", json_string(log));
    }
    return o;
}

json_t *ondemand_services_of(struct proxy_server *s, const char *worktree, int rc,
                             const struct wtfile *f, const char *err)
{
    if (rc > 0)
        return NULL;
    if (rc < 0)
        return json_pack("{s:s, s:s}", "file", f->path, "error", err);
    json_t *list = json_array();
    for (int i = 0; list && i < f->n; i++)
        json_array_append_new(list, service_json(s, worktree, f, &f->svc[i]));
    return json_pack("{s:s, s:o}", "file", f->path, "services", list ? list : json_array());
}

json_t *ondemand_services_known(struct proxy_server *s, const char *worktree)
{
    const struct ondemand_cached *e = s->ondemand ? ondemand_cached(s->ondemand, worktree) : NULL;
    return e ? ondemand_services_of(s, worktree, e->rc, &e->f, e->err) : NULL;
}

/* A bad file still says "ours", so whether one is there is the whole
 * answer: access(2), never an open or a read. */
static int file_there(const char *dir, size_t dirlen)
{
    char path[PATH_MAX + 16];
    if (dirlen >= PATH_MAX)
        return 0;
    snprintf(path, sizeof path, "%.*s/.wtproxy", (int)dirlen, dir);
    return access(path, F_OK) == 0 || errno != ENOENT;
}

/* The worktree's own file counts as well as the main checkout's: a branch
 * that adds its .wtproxy before main has it is declared where it runs. */
int ondemand_declared(const char *worktree, const char *common_dir)
{
    size_t n = strlen(common_dir);
    if (file_there(worktree, strlen(worktree)))
        return 1;
    return n >= 5 && strcmp(common_dir + n - 5, "/.git") == 0 && file_there(common_dir, n - 5);
}
