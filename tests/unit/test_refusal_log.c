/* test_refusal_log.c - the dashboard's refusal ring: order, wrap-around at
 * WTP_REFUSAL_LOG_SIZE, "since" queries, the newest per backend, bytes
 * that are not UTF-8. */
#include "../../proxy/refusal_log.c"

#include <stdio.h>
#include <string.h>

#include "tap.h"

/* refusal_log_conn is not called here; the loop's clock is not needed. */
unsigned long long proxy_now_ms(struct proxy_server *s)
{
    (void)s;
    return 0;
}

static void add(struct refusal_log *log, int i, const char *backend_wt)
{
    char detail[64];
    snprintf(detail, sizeof detail, "refusal %d", i);
    struct refusal_info r = {.status = 503, .reason = "no-backend", .detail = detail,
                             .front = 8000, .backend_worktree = backend_wt};
    refusal_log_add(log, &r, 1000 + i);
}

int main(void)
{
    struct refusal_log *log = refusal_log_new();
    json_t *j = refusal_log_json(log, 0);
    ok(json_array_size(j) == 0 && refusal_log_seq(log) == 0, "an empty log is an empty array");
    json_decref(j);

    for (int i = 1; i <= 3; i++)
        add(log, i, i == 2 ? "/w/a" : NULL);
    j = refusal_log_json(log, 0);
    ok(json_array_size(j) == 3, "three entries");
    ok(json_integer_value(json_object_get(json_array_get(j, 0), "seq")) == 1 &&
           strcmp(json_string_value(json_object_get(json_array_get(j, 2), "detail")),
                  "refusal 3") == 0, "oldest first");
    ok(strcmp(json_string_value(json_object_get(json_array_get(j, 0), "caller_worktree")), "") == 0,
       "a NULL string is \"\"");
    json_decref(j);
    j = refusal_log_json(log, 2);
    ok(json_array_size(j) == 1 &&
           json_integer_value(json_object_get(json_array_get(j, 0), "seq")) == 3,
       "after 2: only seq 3");
    json_decref(j);
    j = refusal_log_last_for(log, 8000, "/w/a");
    ok(j && json_integer_value(json_object_get(j, "seq")) == 2, "the newest for /w/a is seq 2");
    json_decref(j);
    ok(refusal_log_last_for(log, 8001, "/w/a") == NULL, "another front port has none");

    for (int i = 4; i <= WTP_REFUSAL_LOG_SIZE + 50; i++)
        add(log, i, NULL);
    j = refusal_log_json(log, 0);
    ok(json_array_size(j) == WTP_REFUSAL_LOG_SIZE, "the ring keeps %d", WTP_REFUSAL_LOG_SIZE);
    ok(json_integer_value(json_object_get(json_array_get(j, 0), "seq")) == 51 &&
           json_integer_value(json_object_get(json_array_get(j, WTP_REFUSAL_LOG_SIZE - 1),
                                              "seq")) == WTP_REFUSAL_LOG_SIZE + 50,
       "the oldest went first");
    json_decref(j);
    j = refusal_log_json(log, 10);
    ok(json_array_size(j) == WTP_REFUSAL_LOG_SIZE, "after a forgotten seq: all that is kept");
    json_decref(j);
    ok(refusal_log_last_for(log, 8000, "/w/a") == NULL, "a forgotten refusal is not the newest");

    struct refusal_info bad = {.status = 409, .reason = "ambiguous-worktree",
                               .named = "wt-\xff\xfe", .front = 8000};
    refusal_log_add(log, &bad, 5);
    j = refusal_log_json(log, refusal_log_seq(log) - 1);
    ok(json_array_size(j) == 1 &&
           strcmp(json_string_value(json_object_get(json_array_get(j, 0), "named")), "wt-??") == 0,
       "bytes that are not UTF-8 become '?'");
    json_decref(j);
    refusal_log_free(log);
    return done_testing();
}
