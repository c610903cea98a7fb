/* test_reg_table.c - registry/reg_table.c: a second registration of a live
 * key is refused and names the holder, a dead one is replaced, removal
 * keeps the registration order, lookups by worktree folder name across
 * fronts, the count of changes, and the references the table holds. */
#include "../../registry/reg_backend.c"
#include "../../registry/reg_live.c"
#include "../../registry/reg_table.c"

#include "tap.h"

static struct reg_backend *mk(int front, const char *worktree, int port, enum reg_state state)
{
    char name[64], err[256];
    struct reg_backend *b;

    snprintf(name, sizeof name, "127.0.0.1:%d", port);
    if (!(b = reg_backend_new(name, err, sizeof err))) {
        printf("# %s\n", err);
        return NULL;
    }
    b->front = front;
    b->port = port;
    b->state = state;
    snprintf(b->worktree, sizeof b->worktree, "%s", worktree);
    return b;
}

static void test_put_conflict_replace(void)
{
    struct reg_table *t = reg_table_new();
    struct reg_backend *a = mk(8000, "/src/shop/wt-a", 41001, REG_STARTING);
    struct reg_backend *a2 = mk(8000, "/src/shop/wt-a", 41002, REG_STARTING);
    struct reg_backend *holder = a2;

    is_int(reg_table_put(t, a, &holder), 0, "put on a free key");
    ok(holder == NULL, "  no holder");
    is_int(a->refs, 2, "  the table holds a reference");
    is_int(reg_table_put(t, a2, &holder), -1,
           "a second registration of a starting entry is refused");
    ok(holder == a, "  and names the holder");
    is_int(a2->refs, 1, "  the refused backend is not referenced");
    a->state = REG_READY;
    is_int(reg_table_put(t, a2, &holder), -1, "a ready entry is refused as well");
    is_int(reg_table_put(t, a2, NULL), -1, "holder may be NULL");
    ok(reg_table_get(t, 8000, "/src/shop/wt-a") == a, "get finds the holder");

    a->state = REG_DEAD;
    is_int(reg_table_put(t, a2, &holder), 0, "a dead entry is replaced");
    ok(holder == NULL, "  no holder");
    ok(reg_table_get(t, 8000, "/src/shop/wt-a") == a2, "  get finds the new one");
    is_int(reg_table_count(t), 1, "  one entry on the key");
    is_int(a->refs, 1, "  the table dropped its reference to the dead one");

    a2->state = REG_DEAD;
    is_int(reg_table_put(t, a2, &holder), 0, "putting a dead entry over itself");
    is_int(a2->refs, 2, "  keeps exactly one table reference");

    reg_table_free(t);
    is_int(a2->refs, 1, "free drops the table's references");
    reg_backend_unref(a);
    reg_backend_unref(a2);
    reg_table_free(NULL);
}

static void test_keys(void)
{
    struct reg_table *t = reg_table_new();
    struct reg_backend *b[4] = {
        mk(8000, "/src/shop/wt-a", 41001, REG_READY),
        mk(8001, "/src/shop/wt-a", 41002, REG_READY), /* same worktree, other front */
        mk(8000, "/src/shop/wt-b", 41003, REG_READY),
        mk(8000, "", 41004, REG_READY), /* the default backend's key */
    };

    for (int i = 0; i < 4; i++)
        is_int(reg_table_put(t, b[i], NULL), 0, "put key %d", i);
    ok(reg_table_get(t, 8001, "/src/shop/wt-a") == b[1], "the key includes the front");
    ok(reg_table_get(t, 8000, "") == b[3], "an empty worktree is a key of its own");
    ok(reg_table_get(t, 8000, "/src/shop/wt-a/") == NULL, "the worktree compares as a string");
    ok(reg_table_get(t, 8002, "/src/shop/wt-a") == NULL, "no entry on another front");
    reg_table_free(t);
    for (int i = 0; i < 4; i++)
        reg_backend_unref(b[i]);
}

static void test_take_keeps_order(void)
{
    struct reg_table *t = reg_table_new();
    struct reg_backend *b[40], *got;
    char wt[64];
    int in_order = 1;

    /* More than the first allocation holds, so the array grows. */
    for (int i = 0; i < 40; i++) {
        snprintf(wt, sizeof wt, "/src/wt-%02d", i);
        b[i] = mk(8000, wt, 41000 + i, REG_READY);
        reg_table_put(t, b[i], NULL);
    }
    is_int(reg_table_count(t), 40, "40 entries");
    got = reg_table_take(t, 8000, "/src/wt-05");
    ok(got == b[5], "take returns the entry");
    is_int(got->refs, 2, "  with the table's reference handed over");
    reg_backend_unref(got);
    ok(reg_table_take(t, 8000, "/src/wt-05") == NULL, "a second take finds nothing");
    ok(reg_table_take(t, 8001, "/src/wt-06") == NULL, "take on another front finds nothing");
    is_int(reg_table_count(t), 39, "39 left");
    for (size_t i = 0, want = 0; i < 39; i++, want++) {
        if (want == 5)
            want++;
        in_order &= reg_table_at(t, i) == b[want];
    }
    ok(in_order, "the others stay in registration order");
    ok(reg_table_at(t, 39) == NULL, "at past the end is NULL");

    b[0]->state = REG_DEAD;
    got = mk(8000, "/src/wt-00", 42000, REG_STARTING);
    reg_table_put(t, got, NULL);
    ok(reg_table_at(t, 38) == got, "a replacement is the newest registration: last");
    ok(reg_table_at(t, 0) == b[1], "  and leaves no hole where the dead one was");
    reg_backend_unref(got);
    reg_table_free(t);
    for (int i = 0; i < 40; i++)
        reg_backend_unref(b[i]);
}

/* Every put and take that changes what the table holds counts; a refused
 * put and a take that finds nothing do not (identification's memo of
 * processes placed nowhere trusts it). */
static void test_changes(void)
{
    struct reg_table *t = reg_table_new();
    struct reg_backend *a = mk(8000, "/src/wt-a", 41001, REG_READY);
    struct reg_backend *a2 = mk(8000, "/src/wt-a", 41002, REG_STARTING);

    is_int((int)reg_table_changes(t), 0, "a new table has no changes");
    reg_table_put(t, a, NULL);
    is_int((int)reg_table_changes(t), 1, "a put counts");
    reg_table_put(t, a2, NULL);
    is_int((int)reg_table_changes(t), 1, "a refused put does not");
    a->state = REG_DEAD;
    reg_table_put(t, a2, NULL);
    is_int((int)reg_table_changes(t), 2, "a dead entry replaced counts");
    reg_backend_unref(reg_table_take(t, 8000, "/src/wt-a"));
    is_int((int)reg_table_changes(t), 3, "a take counts");
    ok(reg_table_take(t, 8000, "/src/wt-a") == NULL, "a take of nothing");
    is_int((int)reg_table_changes(t), 3, "  does not");
    reg_table_free(t);
    reg_backend_unref(a);
    reg_backend_unref(a2);
}

static void test_by_name(void)
{
    struct reg_table *t = reg_table_new();
    struct reg_backend *b[4] = {
        mk(8000, "/src/shop/wt-a", 41001, REG_READY),
        mk(8000, "/src/blog/wt-a", 41002, REG_READY), /* another repo's wt-a */
        mk(8001, "/src/shop/wt-a", 41003, REG_READY),
        mk(8000, "/src/shop/wt-ab", 41004, REG_READY),
    };
    struct reg_backend *out[4] = {NULL};

    for (int i = 0; i < 4; i++)
        reg_table_put(t, b[i], NULL);
    is_int(reg_table_by_name(t, 8000, "wt-a", out, 4), 2, "two wt-a on front 8000");
    ok(out[0] == b[0] && out[1] == b[1], "  both, in registration order");
    out[1] = NULL;
    is_int(reg_table_by_name(t, 8000, "wt-a", out, 1), 2, "max 1 still counts both");
    ok(out[0] == b[0] && out[1] == NULL, "  and fills only one");
    is_int(reg_table_by_name(t, 8001, "wt-a", out, 4), 1, "one wt-a on front 8001");
    ok(out[0] == b[2], "  the one on 8001");
    is_int(reg_table_by_name(t, 8000, "wt", out, 4), 0, "no prefix match");
    is_int(reg_table_by_name(t, 8000, "shop", out, 4), 0, "the repo folder is not the name");
    reg_table_free(t);
    for (int i = 0; i < 4; i++)
        reg_backend_unref(b[i]);
}

static void test_worktree_name(void)
{
    struct reg_backend b = {.front = 8000};

    snprintf(b.worktree, sizeof b.worktree, "/home/dev/shop/wt-a");
    is_str(reg_worktree_name(&b), "wt-a", "name of /home/dev/shop/wt-a");
    snprintf(b.worktree, sizeof b.worktree, "%s", "");
    is_str(reg_worktree_name(&b), "", "name of the default backend");
    snprintf(b.worktree, sizeof b.worktree, "/");
    is_str(reg_worktree_name(&b), "", "name of /");
}

int main(void)
{
    test_put_conflict_replace();
    test_keys();
    test_take_keeps_order();
    test_changes();
    test_by_name();
    test_worktree_name();
    return done_testing();
}
