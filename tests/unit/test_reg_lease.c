/* test_reg_lease.c - what the embedded lease store answers a claim or a
 * release it refuses (registry/reg_lease_store.c on a real loop and a real
 * writer thread): a held resource's refusal names its holder and the
 * command that frees it (reg_lease_held_message, also the CLI's sentence
 * on PostgreSQL), for a holder's pid on this machine, a manual claim and
 * another machine's lease; a live holder's pid is released only by that
 * process; a store holding REG_LEASE_MAX leases refuses
 * the next claim as "store-full", naming what to do. Through the public
 * calls only, linked with the registry's library. */

#include <event2/event.h>
#include <stdio.h>
#include <unistd.h>

#include "host.h"
#include "reg_lease.h"
#include "registry.h"

#include "tap.h"

static char dir[] = "/tmp/wtp-lease-XXXXXX";

/* A claim of id from worktree wt, by pid (0: manual, for ttl_ms). */
static json_t *claim(struct reg_lease_store *ls, const char *id, const char *wt, int pid,
                     long long ttl_ms)
{
    json_t *req =
        json_pack("{s:s, s:s, s:s, s:i, s:s, s:I}", "id", id, "worktree", wt, "session", "s-1",
                  "pid", pid, "purpose", "android e2e", "ttl_ms", (json_int_t)ttl_ms);
    json_t *r = reg_lease_store_op(ls, "claim", req, getuid());
    json_decref(req);
    return r;
}

static const char *code_of(json_t *r)
{
    return json_string_value(json_object_get(r, "error"));
}

static const char *message_of(json_t *r)
{
    return json_string_value(json_object_get(r, "message"));
}

/* A release of id from worktree wt by pid (0: a person's command). */
static json_t *release(struct reg_lease_store *ls, const char *id, const char *wt, int pid)
{
    json_t *req = json_pack("{s:s, s:s, s:i}", "id", id, "worktree", wt, "pid", pid);
    json_t *r = reg_lease_store_op(ls, "release", req, getuid());
    json_decref(req);
    return r;
}

static void test_refusals(struct reg_lease_store *ls)
{
    char want[1024], cmd[512], forced[2048];
    host_pid_cmdline(getpid(), cmd, sizeof cmd);
    json_t *r = claim(ls, "emu", "/src/wt-a", getpid(), 0);
    ok(json_is_true(json_object_get(r, "ok")), "a claim while this pid runs wins");
    json_decref(r);
    r = claim(ls, "emu", "/src/wt-b", 0, 60000);
    is_str(code_of(r), "conflict", "another worktree's claim: conflict");
    ok(json_is_object(json_object_get(r, "holder")), "with the holder");
    snprintf(want, sizeof want,
             "emu is held by this machine %s, worktree /src/wt-a, session s-1, "
             "pid %d (%s), for \"android e2e\", since 0s ago: it is theirs",
             reg_machine_id(), (int)getpid(), cmd);
    has_str(message_of(r), want, "the conflict names the holder, its pid and its command");
    snprintf(forced, sizeof forced, "%s, released when pid %d ends: wait for that", want,
             (int)getpid());
    is_str(message_of(r), forced,
           "and says to wait (a live holder is in use: never told to kill it)");
    json_decref(r);

    snprintf(forced, sizeof forced,
             "%s, and it ends when pid %d ends: wait for that, or, if that run is yours to "
             "stop: kill %d; wtproxy release emu --force takes it from under it",
             want, (int)getpid(), (int)getpid());
    r = release(ls, "emu", "/src/wt-b", 0);
    is_str(code_of(r), "not-permitted", "another worktree's release: not-permitted");
    is_str(message_of(r), forced, "naming the end of its pid, the kill and --force");
    json_decref(r);
    r = release(ls, "emu", "/src/wt-a", 0);
    is_str(code_of(r), "not-permitted",
           "its own worktree's release of a live pid's lease: not-permitted (the command still "
           "uses the resource)");
    json_decref(r);
    r = release(ls, "emu", "/src/wt-a", getpid());
    ok(json_is_true(json_object_get(r, "ok")), "its holder's own process releases it");
    json_decref(r);

    r = claim(ls, "manual", dir, 0, 60000);
    json_decref(r);
    r = claim(ls, "manual", "/src/wt-b", 0, 60000);
    is_str(code_of(r), "conflict", "a manual claim held: conflict");
    has_str(message_of(r), ", manual claim, for \"android e2e\", since 0s ago (expires in ",
            "a manual claim's expiry");
    snprintf(want, sizeof want,
             ": it is theirs; to free it, on this machine: cd %s && wtproxy release "
             "manual; or, if it is abandoned, anywhere: wtproxy release manual --force",
             dir);
    has_str(message_of(r), want, "freed from its worktree, or forced");
    json_decref(r);

    r = claim(ls, "gone", "/src/wt-gone", 0, 60000);
    json_decref(r);
    r = claim(ls, "gone", "/src/wt-b", 0, 60000);
    has_str(message_of(r),
            ": it is theirs; its worktree's folder is gone, so it is abandoned: wtproxy release "
            "gone --force",
            "a worktree folder that is gone is not one to cd into");
    json_decref(r);
}

/* Another machine's lease, as a PostgreSQL store has them. */
static void test_other_machine(void)
{
    struct reg_lease l = {.id = "remote",
                          .machine = "m2",
                          .worktree = "/elsewhere/wt",
                          .session = "s",
                          .pid = 4242,
                          .purpose = "theirs",
                          .acquired_ms = 1000000,
                          .expires_ms = 0};
    char msg[REG_LEASE_MESSAGE_MAX];
    reg_lease_held_message(&l, 0, 1000000 + 3 * 60000, msg, sizeof msg);
    is_str(msg,
           "remote is held by machine m2, worktree /elsewhere/wt, session s, pid 4242, for "
           "\"theirs\", since 3m ago: it is theirs, released when pid 4242 ends on machine m2: "
           "wait for that; or, if it is abandoned (pid 4242 no longer runs there), anywhere: "
           "wtproxy release remote --force",
           "another machine's pid is not ours to kill, and its worktree's release would be "
           "refused while it runs: wait for it");
    l.pid = 0;
    reg_lease_held_message(&l, 1, 1000000 + 3 * 60000, msg, sizeof msg);
    has_str(msg,
            "manual claim, for \"theirs\", since 3m ago: it is theirs; to free it, on machine m2: "
            "cd /elsewhere/wt && wtproxy release remote; or, if it is abandoned, anywhere: "
            "wtproxy release remote --force",
            "a manual claim is released from its worktree");
    l.expires_ms = 1000000 + 60000;
    reg_lease_held_message(&l, 0, 1000000 + 3 * 60000, msg, sizeof msg);
    has_str(msg, "since 3m ago (expired): it is theirs", "a TTL passed but not swept yet");
}

/* A store whose file holds REG_LEASE_MAX manual leases (claiming them one
 * by one would write the growing file 4096 times). */
static struct reg_lease_store *full_store(struct event_base *base, const char *path)
{
    char err[256], warn[256];
    json_t *arr = json_array();
    for (int i = 0; i < REG_LEASE_MAX; i++) {
        char id[32];
        snprintf(id, sizeof id, "slot-%d", i);
        struct reg_lease l = {.worktree = "/src/wt-a",
                              .machine = "m1",
                              .session = "s",
                              .acquired_ms = host_wall_ms(),
                              .expires_ms = host_wall_ms() + 600000};
        snprintf(l.id, sizeof l.id, "%s", id);
        json_array_append_new(arr, reg_lease_to_json(&l));
    }
    json_t *doc = json_pack("{s:i, s:o}", "version", 1, "leases", arr);
    json_dump_file(doc, path, 0);
    json_decref(doc);
    return reg_lease_store_new(base, path, warn, sizeof warn, err, sizeof err);
}

static void test_full(struct event_base *base, const char *path)
{
    struct reg_lease_store *ls = full_store(base, path);
    json_t *leases = ls ? reg_lease_store_op(ls, "leases", NULL, getuid()) : NULL;
    is_int((long long)json_array_size(json_object_get(leases, "leases")), REG_LEASE_MAX,
           "a store holding REG_LEASE_MAX leases");
    json_decref(leases);
    json_t *r = ls ? claim(ls, "one-more", "/src/wt-a", 0, 60000) : NULL;
    is_str(code_of(r), "store-full", "one more: store-full, not internal");
    has_str(message_of(r), "holds 4096 leases already, its most: one-more is not claimed",
            "says what happened");
    has_str(message_of(r),
            "see which are held with wtproxy leases, and free those no longer used "
            "with: wtproxy release RESOURCE",
            "and the commands that show and free them");
    json_decref(r);
    reg_lease_store_free(ls);
}

int main(void)
{
    char path[PATH_MAX], err[256], warn[256];
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof path, "%s/leases.json", dir);
    struct event_base *base = event_base_new();
    struct reg_lease_store *ls =
        reg_lease_store_new(base, path, warn, sizeof warn, err, sizeof err);
    ok(ls != NULL, "a store: %s", ls ? "made" : err);
    if (ls)
        test_refusals(ls);
    reg_lease_store_free(ls);
    unlink(path);
    test_other_machine();
    snprintf(path, sizeof path, "%s/full.json", dir);
    test_full(base, path);
    event_base_free(base);
    unlink(path);
    rmdir(dir);
    return done_testing();
}
