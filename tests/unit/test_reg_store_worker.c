/* test_reg_store_worker.c - registry/reg_store_worker.c on a real loop and
 * a real thread: snapshots handed while a write is in flight coalesce
 * (one in flight, one pending, the latest wins), a waiter hears of the
 * write that holds the state it waited for, a failed write is reported to
 * both, and at exit the write in flight and the pending one reach the
 * disk. */
#include "../../registry/reg_backend.c"
#include "../../registry/reg_json.c"
#include "../../registry/reg_live.c"
#include "../../registry/reg_store.c"
#include "../../registry/reg_store_worker.c"
#include "../../registry/reg_table.c"

#include <event2/event.h>

#include "tap.h"

static char dir[] = "/tmp/wtp-saver-XXXXXX";
static char path[PATH_MAX];
static struct event_base *base;
static int writes, failed;

static void on_write(void *arg, const char *err)
{
    (void)arg;
    writes++;
    failed += err[0] != '\0';
}

struct seen {
    int calls;
    char err[512], file[64]; /* the file's text when told */
};

static void read_back(char *out, size_t outlen)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(out, 1, outlen - 1, f) : 0;
    out[n] = '\0';
    if (f)
        fclose(f);
}

static void on_done(void *arg, const char *err)
{
    struct seen *s = arg;
    s->calls++;
    snprintf(s->err, sizeof s->err, "%s", err);
    read_back(s->file, sizeof s->file);
}

/* Run the loop until s was told, for 10 s at most. */
static void wait_for(struct seen *s)
{
    struct timeval tick = {0, 20000};
    for (int i = 0; i < 500 && !s->calls; i++) {
        event_base_loopexit(base, &tick);
        event_base_dispatch(base);
    }
}

static void coalesce(void)
{
    char err[256], file[64];
    struct seen a = {0}, c = {0};
    struct reg_saver *sv = reg_saver_new(base, path, on_write, NULL, err, sizeof err);
    if (!ok(sv != NULL, "a saver starts: %s", sv ? "" : err))
        return;
    writes = failed = 0;
    reg_saver_put(sv, strdup("A"));
    is_int(reg_saver_wait(sv, on_done, &a), 1, "a waiter for A, in flight");
    reg_saver_put(sv, strdup("B"));
    reg_saver_put(sv, strdup("C"));
    is_int(reg_saver_wait(sv, on_done, &c), 1, "a waiter for C, pending");
    wait_for(&c);
    is_int(a.calls, 1, "A's waiter is told once");
    is_str(a.file, "A", "when A is on disk");
    is_int(c.calls, 1, "C's waiter is told once");
    is_str(c.file, "C", "when C is on disk");
    is_str(c.err, "", "with no error");
    is_int(writes, 2, "A, B, C handed at once: two writes (B was replaced by C)");
    is_int(reg_saver_wait(sv, on_done, &c), 0, "nothing to wait for once all is written");
    reg_saver_free(sv);
    read_back(file, sizeof file);
    is_str(file, "C", "the latest state is the file's");
}

static void flush_at_exit(void)
{
    char err[256], file[64];
    struct seen e = {0};
    struct reg_saver *sv = reg_saver_new(base, path, on_write, NULL, err, sizeof err);
    if (!ok(sv != NULL, "a second saver starts"))
        return;
    writes = 0;
    reg_saver_put(sv, strdup("D"));
    reg_saver_put(sv, strdup("E"));
    reg_saver_wait(sv, on_done, &e);
    reg_saver_free(sv); /* at once: D may be in flight, E is pending */
    read_back(file, sizeof file);
    is_str(file, "E", "at exit the pending state is written");
    is_int(e.calls, 1, "and its waiter told");
    is_int(writes, 2, "both writes ran, none lost");
}

static void failure(void)
{
    char err[256], missing[PATH_MAX + 16];
    struct seen f = {0};
    snprintf(missing, sizeof missing, "%s/no-such-folder/registry.json", dir);
    struct reg_saver *sv = reg_saver_new(base, missing, on_write, NULL, err, sizeof err);
    if (!ok(sv != NULL, "a saver for a missing folder starts"))
        return;
    failed = 0;
    reg_saver_put(sv, strdup("F"));
    reg_saver_wait(sv, on_done, &f);
    wait_for(&f);
    is_int(failed, 1, "the failed write is reported");
    ok(strstr(f.err, "cannot save the registry to") && strstr(f.err, "No such file"),
       "to the waiter too, with why: %s", f.err);
    reg_saver_free(sv);
}

int main(void)
{
    if (!mkdtemp(dir) || !(base = event_base_new()))
        return 1;
    snprintf(path, sizeof path, "%s/registry.json", dir);
    coalesce();
    flush_at_exit();
    failure();
    unlink(path);
    rmdir(dir);
    event_base_free(base);
    return done_testing();
}
