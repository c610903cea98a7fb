/* mcp_select.c - a restart or logs call whose front or service names
 * nothing of its worktree: neither a server that runs there nor one its
 * .wtproxy declares. Without this the tool looked for the newest log of
 * the worktree, whatever its front (a .wtproxy service's log names no
 * front), and answered {"front": 9999} in a worktree whose server runs on
 * front 8300 with "Nothing to restart: its last server exited", telling
 * an agent to start a server that runs. It says what runs instead. */
#include "mcp.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "front.h"
#include "wtfile.h"

struct choices {
    char text[2048]; /* "front 8300 (running), service api (front 5173, declared)" */
    size_t used;
    int n, fronts[WTFILE_MAX_SERVICES + 32];
};

/* front (of svc, NULL when services are not asked about) into c, once per
 * front: a server the .wtproxy declares that runs is said running. */
static void add_choice(struct choices *c, int front, const char *svc, const char *how)
{
    for (int i = 0; i < c->n; i++)
        if (c->fronts[i] == front)
            return;
    if (c->n == (int)(sizeof c->fronts / sizeof c->fronts[0]) || c->used >= sizeof c->text)
        return;
    c->fronts[c->n] = front;
    if (svc && svc[0])
        c->used +=
            (size_t)snprintf(c->text + c->used, sizeof c->text - c->used,
                             "%sservice %s (front %d, %s)", c->n ? ", " : "", svc, front, how);
    else
        c->used += (size_t)snprintf(c->text + c->used, sizeof c->text - c->used, "%sfront %d (%s)",
                                    c->n ? ", " : "", front, how);
    c->n++;
}

/* Whether entries (running) or f (declared) have the selection (service,
 * front; each may be absent); what they have into c. */
static int selects(json_t *entries, const struct wtfile *f, const char *service, int front,
                   struct choices *c)
{
    size_t i;
    int found = 0;
    json_t *e;
    json_array_foreach(entries, i, e) {
        const char *sv = json_string_value(json_object_get(e, "service"));
        int fr = (int)json_integer_value(json_object_get(e, "front"));
        found |= (!service || (sv && strcmp(sv, service) == 0)) && (!front || fr == front);
        add_choice(c, fr, service ? (sv ? sv : "") : NULL, "running");
    }
    for (int k = 0; f && k < f->n; k++) {
        const struct wtfile_service *s = &f->svc[k];
        found |= (!service || strcmp(s->name, service) == 0) && (!front || s->front == front);
        add_choice(c, s->front, service ? s->name : NULL, "declared");
    }
    return found;
}

json_t *mcp_unknown_selection(const char *wt, json_t *args, const char *tool)
{
    const char *service = json_string_value(json_object_get(args, "service"));
    int front = (int)json_integer_value(json_object_get(args, "front"));
    json_t *fail = NULL, *entries = service || front ? mcp_entries(wt, &fail) : NULL, *out = NULL;
    struct cli_wtproxy w;
    struct choices c = {.used = 0};
    if (!entries) { /* nothing selected, or no daemon: the tool says so itself */
        json_decref(fail);
        return NULL;
    }
    cli_wtproxy_read(wt, &w);
    int found = selects(entries, w.file, service, front, &c);
    /* Without a .wtproxy a service is whatever `wtproxy run --service`
     * names: one that runs not is started so, as the tool's answer says. */
    if (found || c.n == 0 || (service && !w.file))
        ; /* it names one, or nothing runs or is declared: the tool's own answer */
    else if (service)
        out = mcp_fail("not-found",
                       "no service %s in %s: its .wtproxy declares none and none runs; its "
                       "services: %s: call %s with one of them",
                       service, wt, c.text, tool);
    else if (c.n == 1)
        out = mcp_fail("not-found",
                       "nothing on front %d in %s; its server runs on front %d%s: call %s "
                       "without front (or front %d)",
                       front, wt, c.fronts[0],
                       strstr(c.text, "running") ? "" : " (its .wtproxy declares it there)", tool,
                       c.fronts[0]);
    else
        out = mcp_fail("not-found",
                       "nothing on front %d in %s; its servers: %s: call %s with one "
                       "of those fronts",
                       front, wt, c.text, tool);
    cli_wtproxy_free(&w);
    json_decref(entries);
    return out;
}
