/* test_ondemand_cache.c - proxy/ondemand_cache.c: what the worker read of
 * a worktree's .wtproxy is kept by worktree and answered until replaced;
 * a bad file keeps its message; a 65th worktree takes the place of the
 * one looked at longest ago, never of a fresher one. */
#include "../../proxy/ondemand_cache.c"

#include "tap.h"

static void put_named(struct ondemand_cache *c, int i, unsigned long long now)
{
    char wt[64];
    struct wtfile f = {.n = i};
    snprintf(wt, sizeof wt, "/wt/%d", i);
    ondemand_cache_put(c, wt, 0, &f, "", now);
}

int main(void)
{
    struct ondemand_cache *c = ondemand_cache_new();
    struct wtfile f = {.n = 1};
    ok(c && !ondemand_cache_get(c, "/wt/a"), "empty: nothing known");
    snprintf(f.svc[0].start, sizeof f.svc[0].start, "serve {port}");
    ondemand_cache_put(c, "/wt/a", 0, &f, "ignored", 100);
    struct ondemand_cached *e = ondemand_cache_get(c, "/wt/a");
    ok(e && e->rc == 0 && e->f.n == 1 && strcmp(e->f.svc[0].start, "serve {port}") == 0,
       "a good file is kept whole");
    is_str(e ? e->err : "-", "", "  with no message");
    ok(e && e->checked_ms == 100, "  and when it was looked at");
    ondemand_cache_put(c, "/wt/a", -1, &f, "/wt/a/.wtproxy:2: bad line", 200);
    e = ondemand_cache_get(c, "/wt/a");
    ok(e && e->rc == -1 && e->checked_ms == 200, "a later read replaces it");
    is_str(e ? e->err : "-", "/wt/a/.wtproxy:2: bad line", "  a bad file's message kept");
    ok(!ondemand_cache_get(c, "/wt/b"), "another worktree: not known");

    for (int i = 0; i < ONDEMAND_CACHE_MAX - 1; i++)
        put_named(c, i, 1000 + (unsigned long long)i);
    ok(ondemand_cache_get(c, "/wt/a") && ondemand_cache_get(c, "/wt/62"), "%d worktrees kept",
       ONDEMAND_CACHE_MAX);
    put_named(c, 100, 5000);
    ok(ondemand_cache_get(c, "/wt/100"), "one more is kept");
    ok(!ondemand_cache_get(c, "/wt/a"), "  in place of the one looked at longest ago");
    ok(ondemand_cache_get(c, "/wt/0") && ondemand_cache_get(c, "/wt/62"), "  the others stay");
    ondemand_cache_free(c);
    return done_testing();
}
