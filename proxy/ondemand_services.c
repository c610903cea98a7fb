/* ondemand_services.c - ondemand_services (ondemand.h): the services a
 * worktree's .wtproxy declares, each with what runs of it now, for the
 * `services` op and the dashboard. */
#include "ondemand.h"

#include <string.h>

#include "server.h"
#include "wtfile.h"

static const char *const reg_states[] = {
    [REG_STARTING] = "starting", [REG_READY] = "ready", [REG_DEAD] = "dead"};

static json_t *service_json(struct proxy_server *s, const char *worktree, const struct wtfile *f,
                            const struct wtfile_service *svc)
{
    struct reg_table *t = s->reg ? reg_server_table(s->reg) : NULL;
    struct reg_backend *b = t ? reg_table_get(t, svc->front, worktree) : NULL;
    const char *state = b && b->state != REG_DEAD ? reg_states[b->state]
                        : s->ondemand ? ondemand_state(s->ondemand, worktree, svc->front)
                                      : "stopped";
    json_t *after = json_array();
    for (int k = 0; after && k < svc->nafter; k++)
        json_array_append_new(after, json_string(f->svc[svc->after[k]].name));
    return json_pack("{s:s, s:i, s:s, s:o, s:o, s:I, s:b, s:s}", "name", svc->name, "front",
                     svc->front, "start", svc->start, "after", after ? after : json_array(),
                     "ready", svc->ready[0] ? json_string(svc->ready) : json_null(),
                     "idle_stop_ms", (json_int_t)svc->idle_ms, "running",
                     (b && b->state != REG_DEAD) || strcmp(state, "launched") == 0, "state",
                     state);
}

json_t *ondemand_services(struct proxy_server *s, const char *worktree)
{
    struct wtfile f;
    char err[1024];
    int rc = wtfile_read(worktree, &f, err, sizeof err);
    if (rc > 0)
        return NULL;
    if (rc < 0)
        return json_pack("{s:s, s:s}", "file", f.path, "error", err);
    json_t *list = json_array();
    for (int i = 0; list && i < f.n; i++)
        json_array_append_new(list, service_json(s, worktree, &f, &f.svc[i]));
    return json_pack("{s:s, s:o}", "file", f.path, "services", list ? list : json_array());
}
