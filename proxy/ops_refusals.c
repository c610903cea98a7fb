/* ops_refusals.c - the `refusals` control op: what the daemon refused
 * lately, for `wtproxy mcp` and scripts that are not a browser. The same
 * records as the dashboard's (refusal_log.c), filtered by worktree. */
#include "ops.h"

#include <string.h>

#include "refusal_log.h"
#include "server.h"

#define DEFAULT_LIMIT 50

static int concerns(json_t *r, const char *wt)
{
    const char *caller = json_string_value(json_object_get(r, "caller_worktree"));
    const char *backend = json_string_value(json_object_get(r, "backend_worktree"));
    const char *named = json_string_value(json_object_get(r, "named"));
    return (caller && strcmp(caller, wt) == 0) || (backend && strcmp(backend, wt) == 0) ||
           (named && strcmp(named, wt) == 0);
}

json_t *proxy_op_refusals(struct proxy_server *s, uid_t uid, json_t *req)
{
    (void)uid; /* every local user may read them, as on the dashboard */
    json_t *wt = json_object_get(req, "worktree"), *after = json_object_get(req, "after"),
           *limit = json_object_get(req, "limit");
    if ((wt && !json_is_string(wt)) || (after && !json_is_integer(after)) ||
        (limit && (!json_is_integer(limit) || json_integer_value(limit) < 1)))
        return reg_fail("bad-request",
                        "refusals takes \"worktree\" (a path), \"after\" (a sequence number) "
                        "and \"limit\" (>= 1), each optional");
    json_int_t from = after ? json_integer_value(after) : 0;
    size_t max = limit ? (size_t)json_integer_value(limit) : DEFAULT_LIMIT;
    json_t *all = refusal_log_json(s->refusals, from > 0 ? (unsigned long long)from : 0);
    json_t *out = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(all, i, r)
        if (!wt || concerns(r, json_string_value(wt)))
            json_array_append(out, r);
    json_decref(all);
    while (out && json_array_size(out) > max)
        json_array_remove(out, 0); /* keep the newest */
    return json_pack("{s:b, s:I, s:o}", "ok", 1, "seq", (json_int_t)refusal_log_seq(s->refusals),
                     "refusals", out ? out : json_array());
}
