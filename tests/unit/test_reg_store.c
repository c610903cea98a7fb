/* test_reg_store.c - registry/reg_json.c and registry/reg_store.c: every
 * entry field through JSON and back, a failed start kept with its entry,
 * the checks on stored entries, a save and load round trip with a 0600
 * file, corrupt files moved aside (cut in half, not JSON, empty, wrong
 * shape), a bad entry skipped among good ones, and a failed save that
 * leaves the old file as it was. */
#include "../../registry/reg_backend.c"
#include "../../registry/reg_json.c"
#include "../../registry/reg_live.c"
#include "../../registry/reg_store.c"
#include "../../registry/reg_table.c"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>

#include "tap.h"

static char dir[] = "/tmp/wtp-store-XXXXXX";

static struct reg_backend *mk(int front, const char *worktree, int port, enum reg_state state)
{
    char name[64], err[256];
    struct reg_backend *b;

    snprintf(name, sizeof name, "127.0.0.1:%d", port);
    if (!(b = reg_backend_new(name, err, sizeof err)))
        return NULL;
    snprintf(b->machine, sizeof b->machine, "3f1c0ffee");
    b->front = front;
    snprintf(b->worktree, sizeof b->worktree, "%s", worktree);
    b->uid = 1000;
    b->port = port;
    b->pid = 4242;
    b->pid_start = 123456789;
    snprintf(b->command, sizeof b->command, "python3 manage.py runserver %d", port);
    b->registered_ms = 1796200000123LL;
    b->started_ms = 1796200000001LL;
    b->expires_ms = 0;
    b->state = state;
    b->requests = 17;
    return b;
}

/* Whether every stored field of a and b is equal. */
static int same_entry(const struct reg_backend *a, const struct reg_backend *b)
{
    return strcmp(a->machine, b->machine) == 0 && a->front == b->front &&
           strcmp(a->worktree, b->worktree) == 0 && a->uid == b->uid &&
           strcmp(a->name, b->name) == 0 && a->port == b->port && a->pid == b->pid &&
           a->pid_start == b->pid_start && strcmp(a->command, b->command) == 0 &&
           a->registered_ms == b->registered_ms && a->started_ms == b->started_ms &&
           a->expires_ms == b->expires_ms && a->state == b->state && a->requests == b->requests &&
           a->addrlen == b->addrlen && memcmp(&a->addr, &b->addr, a->addrlen) == 0;
}

static void test_json_round_trip(void)
{
    struct reg_backend *b = mk(8000, "/home/dev/shop/wt-b", 41234, REG_READY), *back;
    static const char *states[] = {"starting", "ready", "dead"};
    char err[256] = "";
    json_t *o;

    b->uid = 4000000000U;
    b->pid = 0;
    b->pid_start = 9000000000123ULL;
    b->expires_ms = 1796200060000LL;
    b->requests = 4000000000UL;
    o = reg_backend_to_json(b);
    is_int((long long)json_object_size(o), 14, "14 fields, as PROTOCOL.md lists");
    is_str(json_string_value(json_object_get(o, "machine")), "3f1c0ffee", "machine");
    is_int(json_integer_value(json_object_get(o, "front")), 8000, "front");
    is_str(json_string_value(json_object_get(o, "worktree")), "/home/dev/shop/wt-b", "worktree");
    is_str(json_string_value(json_object_get(o, "backend")), "127.0.0.1:41234", "backend");
    is_int(json_integer_value(json_object_get(o, "port")), 41234, "port");
    is_int(json_integer_value(json_object_get(o, "uid")), 4000000000LL, "uid");
    is_int(json_integer_value(json_object_get(o, "pid")), 0, "pid");
    is_int(json_integer_value(json_object_get(o, "pid_start")), 9000000000123LL, "pid_start");
    is_str(json_string_value(json_object_get(o, "command")), "python3 manage.py runserver 41234",
           "command");
    is_int(json_integer_value(json_object_get(o, "registered_ms")), 1796200000123LL,
           "registered_ms");
    is_int(json_integer_value(json_object_get(o, "started_ms")), 1796200000001LL, "started_ms");
    is_int(json_integer_value(json_object_get(o, "expires_ms")), 1796200060000LL, "expires_ms");
    is_str(json_string_value(json_object_get(o, "state")), "ready", "state");
    is_int(json_integer_value(json_object_get(o, "requests")), 4000000000LL, "requests");

    back = reg_backend_from_json(o, err, sizeof err);
    ok(back && same_entry(b, back), "from_json gives every field back, the address resolved");
    if (!back)
        printf("# %s\n", err);
    ok(back && back->refs == 1 && back->watch == NULL, "  with one reference and no watch");
    ok(back && back->addr.ss_family == AF_INET &&
           ntohs(((struct sockaddr_in *)&back->addr)->sin_port) == 41234,
       "  addr is 127.0.0.1:41234");
    reg_backend_unref(back);
    json_decref(o);

    for (int s = REG_STARTING; s <= REG_DEAD; s++) {
        b->state = (enum reg_state)s;
        o = reg_backend_to_json(b);
        is_str(json_string_value(json_object_get(o, "state")), states[s], "state %s", states[s]);
        back = reg_backend_from_json(o, err, sizeof err);
        ok(back && back->state == b->state, "  and back");
        reg_backend_unref(back);
        json_decref(o);
    }

    /* A command cut to fit its field in the middle of "é". */
    snprintf(b->command, sizeof b->command, "echo caf\xc3");
    o = reg_backend_to_json(b);
    is_str(json_string_value(json_object_get(o, "command")), "echo caf?",
           "a command that is not UTF-8 is still written, the bad byte as '?'");
    json_decref(o);
    reg_backend_unref(b);
}

/* A failed start (or an edit that broke a ready server) goes into the
 * entry and comes back from it, for a starting entry only; a bad one is
 * refused naming the field. */
static void test_start_failed(void)
{
    struct reg_backend *b = mk(8000, "/home/dev/shop/wt-b", 41234, REG_STARTING), *back;
    char err[512] = "", big[REG_START_FAILED_MAX + 100];
    json_t *o, *req;

    req = json_pack("{s:s, s:s, s:s}", "lines", "Traceback\nSyntaxError: '[' was never closed",
                    "reloader", "Django's autoreloader", "when", "edit");
    is_int(reg_backend_read_failed(b, req, err, sizeof err), 0, "a start-failed request is read");
    ok(b->start_failed_when == REG_FAILED_EDIT && strcmp(b->reloader, "Django's autoreloader") == 0,
       "  its case (edit) and reloader");
    json_decref(req);
    o = reg_backend_to_json(b);
    is_str(json_string_value(json_object_get(json_object_get(o, "start_failed"), "when")), "edit",
           "the entry says when");
    back = reg_backend_from_json(o, err, sizeof err);
    ok(back && strcmp(back->start_failed, b->start_failed) == 0 &&
           back->start_failed_when == REG_FAILED_EDIT && strcmp(back->reloader, b->reloader) == 0,
       "  and a loaded entry has it back: the next daemon knows it failed");
    reg_backend_unref(back);
    json_object_set_new(o, "state", json_string("ready"));
    back = reg_backend_from_json(o, err, sizeof err);
    ok(back && !back->start_failed[0], "a ready entry's start_failed is not loaded: it listens");
    reg_backend_unref(back);
    json_object_set_new(o, "state", json_string("starting"));
    json_object_set_new(json_object_get(o, "start_failed"), "when", json_string("later"));
    ok(!reg_backend_from_json(o, err, sizeof err),
       "a start_failed whose when is not start/edit/port");
    has_str(err, "\"start_failed\"", "  is refused, naming the field");
    json_decref(o);

    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big + sizeof big - 6, "END\n!", 5);
    req = json_pack("{s:s}", "lines", big);
    is_int(reg_backend_read_failed(b, req, err, sizeof err), 0, "lines longer than it holds");
    ok(strlen(b->start_failed) == REG_START_FAILED_MAX - 1 && strstr(b->start_failed, "END") &&
           b->start_failed_when == REG_FAILED_START && !b->reloader[0],
       "  keep their end (the error), \"when\" start by default");
    json_decref(req);
    req = json_pack("{s:s, s:s}", "lines", "listens on port 5173, not on 41234", "when", "port");
    is_int(reg_backend_read_failed(b, req, err, sizeof err), 0, "a server on another port");
    ok(b->start_failed_when == REG_FAILED_PORT, "  is read as such (\"when\": \"port\")");
    json_decref(req);
    o = reg_backend_to_json(b);
    is_str(json_string_value(json_object_get(json_object_get(o, "start_failed"), "when")), "port",
           "  and saved as such");
    json_decref(o);
    req = json_pack("{s:s}", "lines", "");
    is_int(reg_backend_read_failed(b, req, err, sizeof err), -1, "empty lines are refused");
    json_decref(req);
    reg_backend_unref(b);
}

static void test_utf8_repair(void)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
        {"a\x80"
         "b",
         "a?b"}, /* a stray continuation byte */
        {"a\xc0\xaf"
         "b",
         "a??b"}, /* an overlong '/' */
        {"a\xed\xa0\x80"
         "b",
         "a???b"}, /* a surrogate */
        {"a\xf4\x90\x80\x80"
         "b",
         "a????b"},           /* past U+10FFFF */
        {"a\xe2\x82", "a??"}, /* cut short */
    };
    json_t *j;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        j = utf8_string(cases[i].in);
        is_str(json_string_value(j), cases[i].want, "UTF-8 repair, case %zu", i);
        json_decref(j);
    }
}

static void test_json_checks(void)
{
    static const struct {
        const char *key, *json, *want;
    } cases[] = {
        {"front", "0", "\"front\": 0 is out of range (1..65535)"},
        {"front", "65536", "\"front\": 65536 is out of range"},
        {"front", "\"8000\"", "\"front\" is not an integer"},
        {"port", "41235", "\"port\": 41235 does not match \"backend\""},
        {"pid", "-1", "\"pid\": -1 is out of range"},
        {"pid_start", "-1", "\"pid_start\": -1 is out of range"},
        {"uid", "4294967295", "\"uid\": 4294967295 is out of range"},
        {"expires_ms", "1.5", "\"expires_ms\" is not an integer"},
        {"worktree", "\"relative/wt-a\"",
         "\"worktree\": \"relative/wt-a\" is not an absolute path"},
        {"worktree", "null", "\"worktree\" is not a string"},
        {"state", "\"stale\"", "\"state\": \"stale\" is not starting, ready or dead"},
        {"backend", "\"nonsense\"", "\"backend\": backend \"nonsense\" is not HOST:PORT"},
        {"machine", "\"a\\u0000b\"", "\"machine\" is longer than 127 bytes or holds a NUL"},
    };
    struct reg_backend *b = mk(8000, "/home/dev/shop/wt-b", 41234, REG_READY), *back;
    char err[512], big[1100];
    json_t *o;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        o = reg_backend_to_json(b);
        json_object_set_new(o, cases[i].key,
                            json_loads(cases[i].json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL));
        err[0] = '\0';
        back = reg_backend_from_json(o, err, sizeof err);
        ok(back == NULL, "%s: %s is refused", cases[i].key, cases[i].json);
        has_str(err, cases[i].want, "  err names the field");
        reg_backend_unref(back);
        json_decref(o);
    }
    o = reg_backend_to_json(b);
    json_object_del(o, "requests");
    ok(reg_backend_from_json(o, err, sizeof err) == NULL, "a missing field is refused");
    is_str(err, "\"requests\" is missing", "  err names it");
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    json_object_set_new(o, "requests", json_integer(0));
    json_object_set_new(o, "command", json_string(big));
    ok(reg_backend_from_json(o, err, sizeof err) == NULL, "a command over 1023 bytes is refused");
    has_str(err, "\"command\" is longer than 1023 bytes", "  err names it");
    json_decref(o);
    o = json_array();
    ok(reg_backend_from_json(o, err, sizeof err) == NULL, "an array is refused");
    is_str(err, "the entry is not a JSON object", "  err says so");
    json_decref(o);
    reg_backend_unref(b);
}

/* A table of n entries on front 8000, worktrees /src/wt-N. */
static struct reg_table *table_of(int n)
{
    struct reg_table *t = reg_table_new();
    char wt[64];

    for (int i = 0; i < n; i++) {
        snprintf(wt, sizeof wt, "/src/wt-%d", i);
        struct reg_backend *b = mk(8000, wt, 41000 + i, i % 3 == 2 ? REG_DEAD : REG_READY);
        reg_table_put(t, b, NULL);
        reg_backend_unref(b);
    }
    return t;
}

/* The whole of path into buf; its length, or -1. */
static long slurp(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "rb");
    size_t n;

    if (!f)
        return -1;
    n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (long)n;
}

static void spit(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");

    if (!f)
        return;
    fwrite(data, 1, len, f);
    fclose(f);
}

/* Files in dir whose names contain needle. */
static int count_files(const char *needle)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    while (d && (e = readdir(d)))
        n += strstr(e->d_name, needle) != NULL;
    if (d)
        closedir(d);
    return n;
}

/* Remove dir and the files in it. */
static void remove_all(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    while (d && (e = readdir(d)))
        unlinkat(dirfd(d), e->d_name, 0);
    if (d)
        closedir(d);
    rmdir(dir);
}

static void test_save_load(void)
{
    struct reg_table *t = table_of(4), *back = reg_table_new();
    char path[128], err[512] = "", warn[512] = "x", buf[8192];
    int same = 1;
    struct stat st;
    json_t *doc;

    snprintf(path, sizeof path, "%s/registry.json", dir);
    umask(0);
    is_int(reg_store_save(t, path, err, sizeof err), 0, "save 4 entries");
    umask(022);
    ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "the file is mode 0600 (umask 0)");
    is_int(count_files(".tmp-"), 0, "no temporary file left");
    slurp(path, buf, sizeof buf);
    doc = json_loads(buf, 0, NULL);
    is_int(json_integer_value(json_object_get(doc, "version")), 1, "{\"version\": 1, ...}");
    is_int((long long)json_array_size(json_object_get(doc, "entries")), 4, "  and 4 entries");
    json_decref(doc);

    is_int(reg_store_load(back, path, warn, sizeof warn, err, sizeof err), 0, "load it");
    is_str(warn, "", "  no warning");
    is_int((long long)reg_table_count(back), 4, "  4 entries");
    for (size_t i = 0; i < 4; i++)
        same &= reg_table_at(back, i) && same_entry(reg_table_at(t, i), reg_table_at(back, i));
    ok(same, "  the same entries, in the same order, dead ones still dead");
    reg_table_free(back);
    reg_table_free(t);

    t = reg_table_new();
    is_int(reg_store_save(t, path, err, sizeof err), 0, "save an empty table");
    back = reg_table_new();
    is_int(reg_store_load(back, path, warn, sizeof warn, err, sizeof err), 0, "load it");
    is_int((long long)reg_table_count(back), 0, "  no entries, no warning");
    reg_table_free(back);
    reg_table_free(t);
    unlink(path);

    back = reg_table_new();
    snprintf(warn, sizeof warn, "x");
    is_int(reg_store_load(back, path, warn, sizeof warn, err, sizeof err), 0, "no file: loads");
    ok(reg_table_count(back) == 0 && warn[0] == '\0', "  an empty table, no warning");
    is_int(reg_store_load(back, dir, warn, sizeof warn, err, sizeof err), -1,
           "a path that cannot be read (a folder): -1");
    has_str(err, dir, "  err names it");
    reg_table_free(back);
}

/* Load a file holding data; check that it was moved aside with a warning
 * saying why, and that the table starts empty. */
static void check_corrupt(const char *what, const char *data, size_t len, const char *why)
{
    struct reg_table *t = reg_table_new();
    char path[128], moved[256], err[512] = "", warn[1024] = "", buf[8192];
    long long t0 = (long long)time(NULL), t1;

    snprintf(path, sizeof path, "%s/registry.json", dir);
    spit(path, data, len);
    is_int(reg_store_load(t, path, warn, sizeof warn, err, sizeof err), 0, "%s: loads", what);
    is_int((long long)reg_table_count(t), 0, "  as an empty table");
    /* PATH.corrupt-<the second of the load>, whichever second that was. */
    for (t1 = t0; t1 < t0 + 5; t1++) {
        snprintf(moved, sizeof moved, "%s.corrupt-%lld", path, t1);
        if (access(moved, F_OK) == 0)
            break;
    }
    has_str(warn, why, "  warning says what was wrong");
    has_str(warn, path, "  names the file");
    has_str(warn, moved, "  and where it went");
    ok(access(path, F_OK) != 0, "  the file is gone from its place");
    ok(slurp(moved, buf, sizeof buf) == (long)len && memcmp(buf, data, len) == 0,
       "  and kept, as it was, at %s", moved);
    unlink(moved);
    reg_table_free(t);
}

static void test_corrupt(void)
{
    struct reg_table *t = table_of(3), *back;
    char path[128], err[512], warn[1024], full[8192], moved[256];
    long n;
    long long now;

    snprintf(path, sizeof path, "%s/registry.json", dir);
    reg_store_save(t, path, err, sizeof err);
    n = slurp(path, full, sizeof full);
    check_corrupt("cut in half", full, (size_t)n / 2, "is truncated");
    check_corrupt("not JSON", "hello\n", 6, "is not valid JSON");
    check_corrupt("empty", "", 0, "is empty");
    check_corrupt("an array", "[]", 2, "is not a JSON object");
    check_corrupt("version 2", "{\"version\": 2, \"entries\": []}", 29,
                  "has version 2 (this wtproxy reads version 1)");
    check_corrupt("no entries", "{\"version\": 1}", 14, "has no \"entries\" array");

    /* The name taken (this second's and the next, should the second turn):
     * a -N suffix. */
    now = (long long)time(NULL);
    snprintf(moved, sizeof moved, "%s.corrupt-%lld", path, now);
    spit(moved, "", 0);
    snprintf(moved, sizeof moved, "%s.corrupt-%lld", path, now + 1);
    spit(moved, "", 0);
    spit(path, "{", 1);
    back = reg_table_new();
    reg_store_load(back, path, warn, sizeof warn, err, sizeof err);
    if ((long long)time(NULL) <= now + 1) {
        snprintf(moved, sizeof moved, "%s.corrupt-%lld-1", path, (long long)time(NULL));
        ok(access(moved, F_OK) == 0, "a taken name gets -1: %s", moved);
        has_str(warn, moved, "  the warning says so");
    } else {
        tap_skip("the clock moved two seconds during the test");
    }
    reg_table_free(back);
    reg_table_free(t);
}

static void test_bad_entry_skipped(void)
{
    struct reg_table *t = table_of(3), *back = reg_table_new();
    char path[128], err[512], warn[1024];
    json_t *doc, *entries;

    snprintf(path, sizeof path, "%s/registry.json", dir);
    reg_store_save(t, path, err, sizeof err);
    doc = json_load_file(path, 0, NULL);
    entries = json_object_get(doc, "entries");
    json_object_set_new(json_array_get(entries, 1), "front", json_integer(0));
    json_array_append_new(entries, json_string("not an entry"));
    json_array_append(entries, json_array_get(entries, 0)); /* a duplicate key */
    json_dump_file(doc, path, 0);
    json_decref(doc);

    is_int(reg_store_load(back, path, warn, sizeof warn, err, sizeof err), 0, "bad entries: loads");
    is_int((long long)reg_table_count(back), 2, "  the 2 good entries");
    ok(reg_table_at(back, 0) && strcmp(reg_table_at(back, 0)->worktree, "/src/wt-0") == 0 &&
           reg_table_at(back, 1) && strcmp(reg_table_at(back, 1)->worktree, "/src/wt-2") == 0,
       "  wt-0 and wt-2");
    has_str(warn, "skipped 3 bad entries", "  warning counts the skipped ones");
    has_str(warn, "entries[1]: \"front\": 0 is out of range", "  names the bad field");
    has_str(warn, "entries[3]: the entry is not a JSON object", "  says what was not an entry");
    has_str(warn, "entries[4]: front 8000, worktree \"/src/wt-0\" is registered already",
            "  and which entry repeated a key");
    ok(access(path, F_OK) == 0, "  the file stays in place");
    reg_table_free(back);
    reg_table_free(t);
}

/* A save that fails must leave the old file as it was. Tests run as root
 * in CI, where file modes do not stop writes; so the failures come from
 * elsewhere. */
static void test_failed_save(void)
{
    struct reg_table *old = table_of(1), *big = table_of(20);
    char path[128], missing[128], err[512] = "", before[8192], after[8192];
    struct rlimit saved, small = {.rlim_cur = 64, .rlim_max = RLIM_INFINITY};
    long nbefore, nafter;

    snprintf(path, sizeof path, "%s/registry.json", dir);
    reg_store_save(old, path, err, sizeof err);
    nbefore = slurp(path, before, sizeof before);

    /* A full disk: writes past RLIMIT_FSIZE fail with EFBIG (once SIGXFSZ,
     * which would kill us, is ignored), as they would with ENOSPC. */
    signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &saved);
    small.rlim_max = saved.rlim_max;
    setrlimit(RLIMIT_FSIZE, &small);
    is_int(reg_store_save(big, path, err, sizeof err), -1, "save on a full disk fails");
    setrlimit(RLIMIT_FSIZE, &saved);
    has_str(err, path, "  err names the file");
    has_str(err, strerror(EFBIG), "  and the error");
    nafter = slurp(path, after, sizeof after);
    ok(nafter == nbefore && memcmp(before, after, (size_t)nbefore) == 0,
       "  the old file is byte for byte the same");
    is_int(count_files(".tmp-"), 0, "  the temporary file is removed");

    /* A folder that is not there (removed, or a mount that went away). */
    snprintf(missing, sizeof missing, "%s/gone/registry.json", dir);
    is_int(reg_store_save(big, missing, err, sizeof err), -1, "save into a missing folder fails");
    has_str(err, missing, "  err names the file");
    has_str(err, strerror(ENOENT), "  and the error");

    is_int(reg_store_save(big, path, err, sizeof err), 0, "with room again, the save works");
    reg_table_free(old);
    reg_table_free(big);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    test_json_round_trip();
    test_start_failed();
    test_utf8_repair();
    test_json_checks();
    test_save_load();
    test_corrupt();
    test_bad_entry_skipped();
    test_failed_save();
    remove_all();
    return done_testing();
}
