/* test_refusal_log.c - the dashboard's refusal ring: order, wrap-around at
 * WTP_REFUSAL_LOG_SIZE (slots reused with their strings, queries across
 * the seam), "since" queries, the newest per backend, bytes that are not
 * UTF-8, and the subscribers told of each new entry. */
#include "../../proxy/refusal_log.c"

#include <stdio.h>
#include <string.h>

#include "tap.h"

/* A subscriber: the sequence numbers it was told, in order. */
struct heard {
    unsigned long long seq[8];
    int n;
};

static void hear(void *arg, unsigned long long seq)
{
    struct heard *h = arg;
    if (h->n < 8)
        h->seq[h->n] = seq;
    h->n++;
}

static void add(struct refusal_log *log, int i, const char *backend_wt)
{
    char detail[64];
    snprintf(detail, sizeof detail, "refusal %d", i);
    struct refusal_info r = {.status = 503,
                             .reason = "no-backend",
                             .detail = detail,
                             .front = 8000,
                             .backend_worktree = backend_wt};
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
                  "refusal 3") == 0,
       "oldest first");
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

    /* Across the seam: the slot of seq 1 holds seq WTP_REFUSAL_LOG_SIZE + 1. */
    unsigned long long seam = WTP_REFUSAL_LOG_SIZE + 1;
    j = refusal_log_json(log, seam - 2);
    ok(json_array_size(j) == 50 + 1 &&
           json_integer_value(json_object_get(json_array_get(j, 0), "seq")) ==
               (json_int_t)seam - 1 &&
           json_integer_value(json_object_get(json_array_get(j, 1), "seq")) == (json_int_t)seam,
       "after seq %llu: the entries from the ring's last slot on, in order", seam - 2);
    ok(strcmp(json_string_value(json_object_get(json_array_get(j, 1), "detail")), "refusal 201") ==
           0,
       "a reused slot holds the new entry's strings, not the old one's");
    json_decref(j);
    add(log, WTP_REFUSAL_LOG_SIZE + 51, "/w/b");
    j = refusal_log_last_for(log, 8000, "/w/b");
    ok(j && json_integer_value(json_object_get(j, "seq")) == WTP_REFUSAL_LOG_SIZE + 51,
       "the newest per backend is found in a reused slot");
    json_decref(j);
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < WTP_REFUSAL_LOG_SIZE; i++)
            add(log, 1000 + i, NULL);
    j = refusal_log_json(log, 0);
    ok(json_array_size(j) == WTP_REFUSAL_LOG_SIZE &&
           json_integer_value(json_object_get(json_array_get(j, 0), "seq")) ==
               (json_int_t)refusal_log_seq(log) - WTP_REFUSAL_LOG_SIZE + 1,
       "after three more turns of the ring: still the newest %d, oldest first",
       WTP_REFUSAL_LOG_SIZE);
    json_decref(j);
    ok(refusal_log_last_for(log, 8000, "/w/b") == NULL, "and /w/b's refusal was overwritten");

    struct refusal_info bad = {
        .status = 409, .reason = "ambiguous-worktree", .named = "wt-\xff\xfe", .front = 8000};
    refusal_log_add(log, &bad, 5);
    j = refusal_log_json(log, refusal_log_seq(log) - 1);
    ok(json_array_size(j) == 1 &&
           strcmp(json_string_value(json_object_get(json_array_get(j, 0), "named")), "wt-??") == 0,
       "bytes that are not UTF-8 become '?'");
    json_decref(j);

    struct heard one = {0}, two = {0};
    unsigned long long base = refusal_log_seq(log);
    ok(refusal_log_subscribe(log, hear, &one) == 0 && refusal_log_subscribe(log, hear, &two) == 0,
       "two subscribers");
    add(log, 1, NULL);
    add(log, 2, NULL);
    ok(one.n == 2 && one.seq[0] == base + 1 && one.seq[1] == base + 2 && two.n == 2,
       "each is told each new entry's seq, after it is kept");
    refusal_log_unsubscribe(log, hear, &one);
    add(log, 3, NULL);
    ok(one.n == 2 && two.n == 3, "an unsubscribed one is told nothing more");
    struct heard more[WTP_REFUSAL_LOG_SUBSCRIBERS];
    int subscribed = 0;
    for (int i = 0; i < WTP_REFUSAL_LOG_SUBSCRIBERS; i++)
        subscribed += refusal_log_subscribe(log, hear, &more[i]) == 0;
    ok(subscribed == WTP_REFUSAL_LOG_SUBSCRIBERS - 1, "past %d subscribers, -1",
       WTP_REFUSAL_LOG_SUBSCRIBERS);
    refusal_log_free(log);
    return done_testing();
}
