/* test_gate_tree.c - the disk's fingerprint off the event loop
 * (whoami/tree.c, watch.c, fp_worker.c): a question is answered later, from
 * the worker, never by a walk on the loop; and whatever the timing, a
 * result never misses a write made before the question (a write during a
 * computation has it computed again), with inotify and with stat scans;
 * and when inotify's queue overflows (events lost), the question that
 * reads it does not walk the tree on the loop: the worker sets the
 * watches again, and a change whose event was lost is in the answer; and
 * a watched tree written to with no question is computed again by itself
 * once quiet, its new hash told once (whoami/recheck.c's cue); and only
 * the folders an include can reach are watched. */
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../../whoami/fingerprint.c"
#include "../../whoami/fp_worker.c"
#include "../../whoami/glob.c"
#include "../../whoami/tree.c"
#include "../../whoami/watch.c"
#include "tap.h"

static char dir[] = "/tmp/test_gate_tree.XXXXXX";
static struct whoami_patterns py = {(char *[]){"**/*.py"}, 1, NULL, 0};
static struct event_base *base;
static int ready_calls;

static void ready(void *arg)
{
    (void)arg;
    ready_calls++;
}

static void write_under(const char *root, const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void write_file(const char *rel, const char *text)
{
    write_under(dir, rel, text);
}

/* The hash of root's disk now, computed here. */
static void hash_of(const char *root, char *out)
{
    struct whoami_fp fp;
    char err[256];
    if (whoami_fp_compute(root, &py, NULL, &fp, err, sizeof err) == 0) {
        memcpy(out, fp.hash, WHOAMI_HASH_SIZE);
        whoami_fp_free(&fp);
    }
}

static void disk_hash(char *out)
{
    hash_of(dir, out);
}

/* The worktree the last ask's answer found its root in. */
static const char *asked_worktree;

/* Ask until the answer is not pending, running the loop between (at most
 * 10 s). Returns the result; *pendings counts the pending answers. */
static int ask_with(struct whoami_trees *ts, const char *root, const struct whoami_patterns *p,
                    unsigned long *ticket, const struct whoami_fp **fp, int *pendings)
{
    long long changed;
    char err[256];
    time_t end = time(NULL) + 10;
    *pendings = 0;
    for (;;) {
        int r =
            whoami_tree_get(ts, root, p, 1, ticket, fp, &changed, &asked_worktree, err, sizeof err);
        if (r != WT_PENDING || time(NULL) > end)
            return r;
        ++*pendings;
        int before = ready_calls;
        while (ready_calls == before && time(NULL) <= end)
            event_base_loop(base, EVLOOP_ONCE);
    }
}

static int ask(struct whoami_trees *ts, const char *root, unsigned long *ticket,
               const struct whoami_fp **fp, int *pendings)
{
    return ask_with(ts, root, &py, ticket, fp, pendings);
}

static void check_mode(int use_inotify)
{
    const char *mode = use_inotify ? "inotify" : "stat scans";
    struct whoami_trees *ts = whoami_trees_new(base, use_inotify, ready, NULL, NULL);
    const struct whoami_fp *fp = NULL;
    unsigned long ticket = 0;
    char want[WHOAMI_HASH_SIZE] = "";
    int pendings;

    write_file("a.py", "a = 1\n");
    disk_hash(want);
    int r = ask(ts, dir, &ticket, &fp, &pendings);
    tap_ok(r == WT_READY && pendings >= 1, __FILE__, __LINE__,
           "%s: a new tree's first question waits for the worker", mode);
    tap_ok(r == WT_READY && strcmp(fp->hash, want) == 0, __FILE__, __LINE__,
           "%s: its answer is the disk's fingerprint", mode);

    /* A write, then a question; another write while it is computed, then
     * another question: each answer has its own writes. */
    write_file("a.py", "a = 22\n");
    disk_hash(want);
    ticket = 0;
    r = whoami_tree_get(ts, dir, &py, 2, &ticket, &fp, &(long long){0}, &(const char *){0},
                        (char[64]){0}, 64);
    tap_ok(r == WT_PENDING, __FILE__, __LINE__, "%s: a question after a write waits", mode);
    write_file("b.py", "b = 333\n");
    char want2[WHOAMI_HASH_SIZE];
    disk_hash(want2);
    unsigned long ticket2 = 0;
    r = ask(ts, dir, &ticket2, &fp, &pendings);
    tap_ok(r == WT_READY && strcmp(fp->hash, want2) == 0, __FILE__, __LINE__,
           "%s: a write during a computation is in the next question's answer", mode);
    if (r == WT_READY && strcmp(fp->hash, want2) != 0)
        printf("#   got %s\n#  want %s\n", fp->hash, want2);

    r = ask(ts, dir, &ticket2, &fp, &pendings);
    tap_ok(r == WT_READY && pendings == 0, __FILE__, __LINE__,
           "%s: a question already answered is answered again at once", mode);
    ticket2 = 0;
    r = ask(ts, dir, &ticket2, &fp, &pendings);
    tap_ok(r == WT_READY && (use_inotify ? pendings == 0 : pendings >= 1), __FILE__, __LINE__,
           "%s: %s", mode,
           use_inotify ? "an unchanged tree answers a new question at once"
                       : "each new question waits for a scan begun after it");

    /* A new folder (watched from its creation on), a file in it, then the
     * folder gone: each answer is the disk's. */
    char sub[600], file[700];
    snprintf(sub, sizeof sub, "%s/pkg", dir);
    mkdir(sub, 0755);
    snprintf(sub, sizeof sub, "%s/pkg/inner", dir);
    mkdir(sub, 0755);
    ticket = 0;
    ask(ts, dir, &ticket, &fp, &pendings);
    write_file("pkg/inner/c.py", "c = 4444\n");
    disk_hash(want);
    ticket = 0;
    r = ask(ts, dir, &ticket, &fp, &pendings);
    tap_ok(r == WT_READY && strcmp(fp->hash, want) == 0, __FILE__, __LINE__,
           "%s: a file written in a folder made after the last answer is seen", mode);
    snprintf(file, sizeof file, "%s/pkg/inner/c.py", dir);
    unlink(file);
    rmdir(sub);
    disk_hash(want);
    ticket = 0;
    r = ask(ts, dir, &ticket, &fp, &pendings);
    tap_ok(r == WT_READY && strcmp(fp->hash, want) == 0, __FILE__, __LINE__,
           "%s: a folder removed with its file is seen", mode);

    char missing[600];
    snprintf(missing, sizeof missing, "%s/no-such-folder", dir);
    ticket = 0;
    r = ask(ts, missing, &ticket, &fp, &pendings);
    tap_ok(r == WT_ERROR, __FILE__, __LINE__, "%s: a missing folder is an error", mode);
    whoami_trees_free(ts);
}

#define OV_FOLDERS 1500 /* the walk the loop must not do */
#define OV_FILES 7000   /* x3 events (create, modify, close): past the 16384 queued */

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void check_overflow(void)
{
    char root[600], rel[64], want[WHOAMI_HASH_SIZE] = "";
    struct whoami_trees *ts = whoami_trees_new(base, 1, ready, NULL, NULL);
    const struct whoami_fp *fp = NULL;
    unsigned long ticket = 0;
    int pendings;

    snprintf(root, sizeof root, "%s/overflow", dir);
    mkdir(root, 0755);
    for (int i = 0; i < OV_FOLDERS; i++) {
        char sub[700];
        snprintf(sub, sizeof sub, "%s/d%d", root, i);
        mkdir(sub, 0755);
    }
    write_under(root, "a.py", "a = 1\n");
    int r = ask(ts, root, &ticket, &fp, &pendings);
    struct tree *t = ts->n ? ts->tree[ts->n - 1] : NULL;
    if (!ok(r == WT_READY && t && t->ifd >= 0 && t->nwatch == OV_FOLDERS + 1,
            "overflow: a tree of %d folders is watched", OV_FOLDERS + 1)) {
        whoami_trees_free(ts);
        return;
    }

    /* More events than the queue holds, the loop not reading meanwhile;
     * then the change whose event the full queue loses. */
    for (int i = 0; i < OV_FILES; i++) {
        snprintf(rel, sizeof rel, "flood-%d.txt", i);
        write_under(root, rel, "x");
    }
    write_under(root, "a.py", "a = 2\n");
    hash_of(root, want);

    ticket = 0;
    double t0 = mono_ms();
    r = whoami_tree_get(ts, root, &py, 3, &ticket, &fp, &(long long){0}, &(const char *){0},
                        (char[64]){0}, 64);
    double took = mono_ms() - t0;
    printf("# the question that read the overflow: %.1f ms on the loop\n", took);
    ok(r == WT_PENDING, "overflow: the question after it waits (the last hash is not trusted)");
    ok(t->setting_up && t->computing,
       "overflow: the %d folders are watched again on the worker, not on the loop", OV_FOLDERS + 1);
    r = ask(ts, root, &ticket, &fp, &pendings);
    ok(r == WT_READY && strcmp(fp->hash, want) == 0,
       "overflow: a change whose event was lost is in the answer");
    ok(t->ifd >= 0 && !t->setting_up && t->nwatch == OV_FOLDERS + 1 && !ts->inotify_failed,
       "overflow: the tree is watched again, every folder");

    /* The new watches work: a write in a folder makes the next question wait. */
    r = ask(ts, root, &(unsigned long){0}, &fp, &pendings); /* settle */
    write_under(root, "d7/x.py", "x = 7\n");
    hash_of(root, want);
    ticket = 0;
    r = whoami_tree_get(ts, root, &py, 4, &ticket, &fp, &(long long){0}, &(const char *){0},
                        (char[64]){0}, 64);
    ok(r == WT_PENDING, "overflow: a write after it is caught by the new watches");
    r = ask(ts, root, &ticket, &fp, &pendings);
    ok(r == WT_READY && strcmp(fp->hash, want) == 0, "overflow: and is in the answer");
    whoami_trees_free(ts);
}

#define VENDOR_FOLDERS 50
static struct whoami_patterns web = {(char *[]){"apps/web/**", "package.json"}, 2, NULL, 0};

/* A monorepo whose server's includes reach one app: the folders no include
 * can reach (vendor/, the other app) are not watched, and a file written
 * in a folder made inside the app afterwards is still seen. */
static void check_includes(void)
{
    char root[600], sub[700], want[WHOAMI_HASH_SIZE] = "";
    struct whoami_trees *ts = whoami_trees_new(base, 1, ready, NULL, NULL);
    const struct whoami_fp *fp = NULL, *got = NULL;
    unsigned long ticket = 0;
    int pendings;
    snprintf(root, sizeof root, "%s/mono", dir);
    const char *folders[] = {"",          "/apps",         "/apps/web", "/apps/web/src",
                             "/apps/api", "/apps/api/src", "/vendor"};
    for (size_t i = 0; i < sizeof folders / sizeof *folders; i++) {
        snprintf(sub, sizeof sub, "%s%s", root, folders[i]);
        mkdir(sub, 0755);
    }
    for (int i = 0; i < VENDOR_FOLDERS; i++) {
        snprintf(sub, sizeof sub, "%s/vendor/p%d", root, i);
        mkdir(sub, 0755);
    }
    write_under(root, "apps/web/src/main.js", "1\n");
    write_under(root, "apps/api/src/main.js", "1\n");
    int r = ask_with(ts, root, &web, &ticket, &fp, &pendings);
    struct tree *t = ts->n ? ts->tree[ts->n - 1] : NULL;
    ok(r == WT_READY && fp->n == 1 && t && t->nwatch == 4,
       "includes: 4 folders watched of %d (the root, apps, apps/web, apps/web/src): %zu",
       VENDOR_FOLDERS + 7, t ? t->nwatch : 0);

    snprintf(sub, sizeof sub, "%s/apps/web/new", root);
    mkdir(sub, 0755);
    ticket = 0;
    ask_with(ts, root, &web, &ticket, &fp, &pendings);
    write_under(root, "apps/web/new/b.js", "2\n");
    struct whoami_fp disk;
    char err[256];
    if (whoami_fp_compute(root, &web, NULL, &disk, err, sizeof err) == 0) {
        memcpy(want, disk.hash, WHOAMI_HASH_SIZE);
        whoami_fp_free(&disk);
    }
    ticket = 0;
    r = ask_with(ts, root, &web, &ticket, &got, &pendings);
    ok(r == WT_READY && got->n == 2 && strcmp(got->hash, want) == 0 && t->nwatch == 5,
       "includes: a file in a folder made inside the app later is seen (%zu watched)", t->nwatch);
    whoami_trees_free(ts);
}

static int changed_calls;
static char changed_hash[WHOAMI_HASH_SIZE];

static void changed(void *arg, const char *root, const struct whoami_patterns *p, const char *hash,
                    long long changed_ms)
{
    (void)arg;
    (void)root;
    (void)p;
    (void)changed_ms;
    changed_calls++;
    snprintf(changed_hash, sizeof changed_hash, "%s", hash);
}

/* Run the loop for ms, or until changed_calls reaches want. */
static void loop_until(int want, double ms)
{
    double end = mono_ms() + ms;
    struct timeval tick = {0, 20000};
    while (changed_calls < want && mono_ms() < end) {
        event_base_loopexit(base, &tick);
        event_base_dispatch(base);
    }
}

/* A watched tree written to, with no question, is computed again by
 * itself once quiet and tells its new hash once: a burst of writes is one
 * computation, a write that leaves the hash as it was tells nothing. */
static void check_settle(void)
{
    char root[600], want[WHOAMI_HASH_SIZE] = "";
    struct whoami_trees *ts = whoami_trees_new(base, 1, ready, changed, NULL);
    const struct whoami_fp *fp = NULL;
    unsigned long ticket = 0;
    int pendings;
    snprintf(root, sizeof root, "%s/settle", dir);
    mkdir(root, 0755);
    write_under(root, "a.py", "a = 1\n");
    ask(ts, root, &ticket, &fp, &pendings);

    double t0 = mono_ms();
    write_under(root, "a.py", "a = 2\n");
    hash_of(root, want);
    loop_until(1, 3000);
    double took = mono_ms() - t0;
    ok(changed_calls == 1 && strcmp(changed_hash, want) == 0,
       "settle: a write with no question is told as the new hash");
    ok(took >= WHOAMI_SETTLE_MS - 50 && took < 2000, "settle: once quiet (%.0f ms)", took);

    for (int i = 3; i < 8; i++) {
        char text[32];
        snprintf(text, sizeof text, "a = %d\n", i);
        write_under(root, "a.py", text);
        event_base_loop(base, EVLOOP_NONBLOCK);
    }
    hash_of(root, want);
    loop_until(3, 1500);
    ok(changed_calls == 2 && strcmp(changed_hash, want) == 0,
       "settle: a burst of writes is told once, as its last hash");

    write_under(root, "a.py", "a = 7\n"); /* the same bytes again */
    loop_until(3, 800);
    ok(changed_calls == 2, "settle: a write that leaves the hash tells nothing");
    whoami_trees_free(ts);
}

/* A git main checkout at root: a .git folder with HEAD. */
static void make_checkout(const char *root)
{
    char git[PATH_MAX + 8];
    snprintf(git, sizeof git, "%s/.git", root);
    mkdir(root, 0755);
    mkdir(git, 0755);
    write_under(git, "HEAD", "ref: refs/heads/main\n");
}

/* Each answer says the worktree its root is in, found on the worker: a
 * folder of a checkout is that checkout's, one in a checkout nested
 * inside it the nested one's (the gate serves the first and refuses the
 * second, decide.c), a folder in none "". */
static void check_worktree(void)
{
    char top[PATH_MAX], repo[PATH_MAX + 8], api[PATH_MAX + 16], nested[PATH_MAX + 32],
        nested_api[PATH_MAX + 40];
    const struct whoami_fp *fp;
    unsigned long ticket = 0;
    int pendings;
    struct whoami_trees *ts = whoami_trees_new(base, 1, ready, NULL, NULL);
    if (!realpath(dir, top))
        snprintf(top, sizeof top, "%s", dir);
    snprintf(repo, sizeof repo, "%s/repo", top);
    make_checkout(repo);
    snprintf(api, sizeof api, "%s/api", repo);
    mkdir(api, 0755);
    snprintf(nested, sizeof nested, "%s/.worktrees", repo);
    mkdir(nested, 0755);
    snprintf(nested, sizeof nested, "%s/.worktrees/b", repo);
    make_checkout(nested);
    snprintf(nested_api, sizeof nested_api, "%s/api", nested);
    mkdir(nested_api, 0755);
    int r = ask(ts, api, &ticket, &fp, &pendings);
    tap_ok(r == WT_READY && strcmp(asked_worktree, repo) == 0, __FILE__, __LINE__,
           "a folder of a checkout: that checkout's (%s)", asked_worktree);
    ticket = 0;
    r = ask(ts, nested_api, &ticket, &fp, &pendings);
    tap_ok(r == WT_READY && strcmp(asked_worktree, nested) == 0, __FILE__, __LINE__,
           "a folder of a checkout nested inside another: the nested one's (%s)", asked_worktree);
    ticket = 0;
    r = ask(ts, dir, &ticket, &fp, &pendings);
    tap_ok(r == WT_READY && asked_worktree[0] == '\0', __FILE__, __LINE__,
           "a folder in no checkout: none (%s)", asked_worktree);
    whoami_trees_free(ts);
}

int main(void)
{
    if (!mkdtemp(dir) || !(base = event_base_new()))
        return 1;
    check_mode(1);
    check_mode(0);
    check_overflow();
    check_settle();
    check_worktree();
    check_includes();
    event_base_free(base);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", dir);
    return done_testing();
}
