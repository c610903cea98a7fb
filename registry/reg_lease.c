/* reg_lease.c - a lease of a named resource: its JSON form (PROTOCOL.md
 * "Leases") and the rules every store applies. */
#include "reg_lease.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "registry.h"
#include "host.h"

int reg_lease_check_id(const char *id, char *err, size_t errlen)
{
    size_t n = strlen(id);
    if (n == 0 || n >= REG_LEASE_ID_MAX) {
        snprintf(err, errlen, "a resource name has 1 to %d bytes", REG_LEASE_ID_MAX - 1);
        return -1;
    }
    for (const char *p = id; *p; p++)
        if (*p <= ' ' || *p > '~') {
            snprintf(err, errlen,
                     "resource \"%s\": use printable ASCII without spaces "
                     "(e.g. android-emulator-1, db:test_shop)",
                     id);
            return -1;
        }
    return 0;
}

int reg_lease_same_holder(const struct reg_lease *a, const struct reg_lease *b)
{
    return strcmp(a->machine, b->machine) == 0 && strcmp(a->worktree, b->worktree) == 0 &&
           strcmp(a->session, b->session) == 0 && a->pid == b->pid && a->pid_start == b->pid_start;
}

int reg_lease_expired(const struct reg_lease *l, long long now_ms)
{
    return l->expires_ms > 0 && now_ms >= l->expires_ms;
}

int reg_lease_holder_dead(const struct reg_lease *l)
{
    if (l->pid <= 0 || strcmp(l->machine, reg_machine_id()) != 0)
        return 0; /* a manual claim lives by its TTL; another machine's pids are not ours to see */
    unsigned long long start = host_pid_start(l->pid);
    return start == 0 || (l->pid_start != 0 && start != l->pid_start);
}

/* " (expires in 59s)", " (expired)" or "" (while its pid runs) into out. */
static void expiry(const struct reg_lease *l, long long now_ms, char *out, size_t outlen)
{
    char left[32];
    if (!l->expires_ms) {
        out[0] = '\0';
        return;
    }
    host_age(l->expires_ms - now_ms, left, sizeof left);
    snprintf(out, outlen, l->expires_ms > now_ms ? " (expires in %s)" : " (expired)", left);
}

int reg_lease_may_release(const struct reg_lease *l, const struct reg_lease *r, int force)
{
    if (force || reg_lease_holder_dead(l))
        return 1;
    if (strcmp(l->machine, r->machine) != 0 || strcmp(l->worktree, r->worktree) != 0)
        return 0;
    /* A live holder's own process, a `claim -- CMD` or an MCP session, ends
     * it: released under it, another claimer would share the resource with
     * the command still using it. */
    return l->pid == 0 || (l->pid == r->pid && l->pid_start == r->pid_start);
}

/* What frees l, after "it is theirs", for a claim or (release) a release
 * refused on this machine (here: l is this machine's). */
static void what_frees(const struct reg_lease *l, int here, int release, char *out, size_t outlen)
{
    struct stat st;
    /* A holder's pid ends its lease, and it lives (a dead one's lease is
     * taken over, or released): the resource is in use, by another agent
     * or test run, so a claimer is told to wait, never to end their
     * process. Only a release, asked for by someone who wants it ended,
     * names the kill, as what the run's owner does. */
    if (l->pid > 0 && here && release)
        snprintf(out, outlen,
                 ", and it ends when pid %d ends: wait for that, or, if that run is yours to "
                 "stop: kill %d; wtproxy release %s --force takes it from under it",
                 (int)l->pid, (int)l->pid, l->id);
    else if (l->pid > 0 && here)
        snprintf(out, outlen, ", released when pid %d ends: wait for that", (int)l->pid);
    else if (l->pid > 0) /* its release would be refused there too, while the pid runs */
        snprintf(out, outlen,
                 ", released when pid %d ends on machine %s: wait for that; or, if it is "
                 "abandoned (pid %d no longer runs there), anywhere: wtproxy release %s --force",
                 (int)l->pid, l->machine, (int)l->pid, l->id);
    else if (here && stat(l->worktree, &st) < 0) /* nobody can cd there to release it */
        snprintf(out, outlen,
                 "; its worktree's folder is gone, so it is abandoned: wtproxy release %s --force",
                 l->id);
    else
        snprintf(out, outlen,
                 "; to free it, on %s%s: cd %s && wtproxy release %s; or, if it is abandoned, "
                 "anywhere: wtproxy release %s --force",
                 here ? "this machine" : "machine ", here ? "" : l->machine, l->worktree, l->id,
                 l->id);
}

void reg_lease_held_message(const struct reg_lease *l, int release, long long now_ms, char *out,
                            size_t outlen)
{
    char age[32], ends[64], pid[600] = "manual claim", cmd[512] = "";
    int here = strcmp(l->machine, reg_machine_id()) == 0;
    host_age(now_ms - l->acquired_ms, age, sizeof age);
    expiry(l, now_ms, ends, sizeof ends);
    if (l->pid > 0 && here)
        host_pid_cmdline(l->pid, cmd, sizeof cmd);
    if (l->pid > 0)
        snprintf(pid, sizeof pid, cmd[0] ? "pid %d (%s)" : "pid %d", (int)l->pid, cmd);
    int n = snprintf(
        out, outlen,
        "%s is held by %s%s, worktree %s, session %s, %s, for \"%s\", since %s ago%s: it is theirs",
        l->id, here ? "this machine " : "machine ", l->machine, l->worktree, l->session, pid,
        l->purpose, age, ends);
    if (n >= 0 && (size_t)n < outlen)
        what_frees(l, here, release, out + n, outlen - (size_t)n);
}

void reg_lease_session(char *out, size_t outlen)
{
    const char *env = getenv("WTPROXY_SESSION");
    if (env && env[0])
        snprintf(out, outlen, "%s", env);
    else
        snprintf(out, outlen, "sid-%ld", (long)getsid(0));
}

json_t *reg_lease_held(const char *code, const struct reg_lease *l)
{
    char msg[REG_LEASE_MESSAGE_MAX];
    reg_lease_held_message(l, strcmp(code, "not-permitted") == 0, host_wall_ms(), msg, sizeof msg);
    return json_pack("{s:b, s:s, s:s, s:o}", "ok", 0, "error", code, "message", msg, "holder",
                     reg_lease_to_json(l));
}

json_t *reg_lease_to_json(const struct reg_lease *l)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:s, s:I, s:I}", "id", l->id, "machine",
                          l->machine, "worktree", l->worktree, "session", l->session, "pid",
                          (json_int_t)l->pid, "pid_start", (json_int_t)l->pid_start, "purpose",
                          l->purpose, "acquired_ms", (json_int_t)l->acquired_ms, "expires_ms",
                          (json_int_t)l->expires_ms);
    if (o && l->acquired_at[0])
        json_object_set_new(o, "acquired_at", json_string(l->acquired_at));
    return o;
}

/* Copy the string field key of o into out (size outlen). Returns 0 or -1. */
static int take_str(json_t *o, const char *key, char *out, size_t outlen, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v) || json_string_length(v) >= outlen) {
        snprintf(err, errlen, "lease field \"%s\" is %s", key,
                 !v                   ? "missing"
                 : !json_is_string(v) ? "not a string"
                                      : "too long");
        return -1;
    }
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

int reg_lease_from_json(json_t *o, struct reg_lease *l, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    json_int_t pid = -1, start = -1, acq = -1, exp = -1;
    if (json_unpack(o, "{s:I, s:I, s:I, s:I}", "pid", &pid, "pid_start", &start, "acquired_ms",
                    &acq, "expires_ms", &exp) < 0 ||
        pid < 0 || pid > 0x7fffffff || start < 0 || acq < 0 || exp < 0) {
        snprintf(err, errlen, "a lease needs pid, pid_start, acquired_ms and expires_ms >= 0");
        return -1;
    }
    l->pid = (pid_t)pid;
    l->pid_start = (unsigned long long)start;
    l->acquired_ms = acq;
    l->expires_ms = exp;
    if (json_object_get(o, "acquired_at") &&
        take_str(o, "acquired_at", l->acquired_at, sizeof l->acquired_at, err, errlen) < 0)
        return -1;
    return take_str(o, "id", l->id, sizeof l->id, err, errlen) < 0 ||
                   take_str(o, "machine", l->machine, sizeof l->machine, err, errlen) < 0 ||
                   take_str(o, "worktree", l->worktree, sizeof l->worktree, err, errlen) < 0 ||
                   take_str(o, "session", l->session, sizeof l->session, err, errlen) < 0 ||
                   take_str(o, "purpose", l->purpose, sizeof l->purpose, err, errlen) < 0
               ? -1
               : 0;
}
