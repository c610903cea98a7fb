/* reg_lease_store.c - the embedded lease store: the daemon's memory, one
 * machine, saved whole to its own file on every change with the same
 * atomic write as the registrations (reg_store_replace_file):
 *   {"version": 1, "leases": [LEASE, ...]}
 * The daemon serves one request at a time, so a claim here is atomic by
 * construction: the check and the change happen in one callback. The
 * write (with its fsyncs) runs on the file's own writer thread, a second
 * reg_saver (reg_store_worker.c), and the control server holds a claim's
 * or a release's reply until it is on disk (reg_lease_store_saver). */
#include "reg_lease.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>

#include "registry.h"
#include "host.h"

#define LEASE_FILE_VERSION 1

struct reg_lease_store {
    char path[PATH_MAX];
    struct reg_lease *v;
    size_t n;
    struct reg_saver *saver; /* writes the file off the loop */
};

/* reg_saver_done, after each write of the file: a failed one keeps the
 * previous file and the leases in memory. */
static void written(void *arg, const char *err)
{
    (void)arg;
    if (err[0])
        fprintf(stderr, "wtproxy: cannot save the leases, the previous file is kept: %s\n", err);
}

/* Hand the leases' text to the writer thread. */
static void save(struct reg_lease_store *ls)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < ls->n; i++)
        json_array_append_new(arr, reg_lease_to_json(&ls->v[i]));
    json_t *doc = json_pack("{s:i, s:o}", "version", LEASE_FILE_VERSION, "leases", arr);
    char *text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
    if (text)
        reg_saver_put(ls->saver, text);
    else
        written(ls, "out of memory");
    json_decref(doc);
}

/* Read the saved leases; a file we cannot parse is moved aside (warn). */
static void load(struct reg_lease_store *ls, char *warn, size_t warnlen)
{
    json_error_t je;
    json_t *doc = json_load_file(ls->path, 0, &je), *arr = json_object_get(doc, "leases"), *o;
    size_t i;
    if (!doc) {
        struct stat st;
        if (stat(ls->path, &st) == 0) {
            char aside[PATH_MAX + 32];
            snprintf(aside, sizeof aside, "%s.corrupt", ls->path);
            rename(ls->path, aside);
            snprintf(warn, warnlen,
                     "leases file %s cannot be read (%s); moved it to %s and "
                     "started with no leases",
                     ls->path, je.text, aside);
        }
        return;
    }
    json_array_foreach(arr, i, o) {
        char err[256];
        struct reg_lease l;
        if (ls->n < REG_LEASE_MAX && reg_lease_from_json(o, &l, err, sizeof err) == 0)
            ls->v[ls->n++] = l;
    }
    json_decref(doc);
}

struct reg_lease_store *reg_lease_store_new(struct event_base *base, const char *path, char *warn,
                                            size_t warnlen, char *err, size_t errlen)
{
    struct reg_lease_store *ls = calloc(1, sizeof *ls);
    warn[0] = '\0';
    if (!ls || !(ls->v = calloc(REG_LEASE_MAX, sizeof *ls->v))) {
        snprintf(err, errlen, "out of memory");
        reg_lease_store_free(ls);
        return NULL;
    }
    snprintf(ls->path, sizeof ls->path, "%s", path);
    if (!(ls->saver = reg_saver_new(base, path, written, ls, err, errlen))) {
        reg_lease_store_free(ls);
        return NULL;
    }
    load(ls, warn, warnlen);
    reg_lease_store_sweep(ls);
    return ls;
}

struct reg_lease_store *reg_lease_store_beside(struct event_base *base, const char *state_path,
                                               char *err, size_t errlen)
{
    char path[PATH_MAX + 16], warn[PATH_MAX * 2 + 128];
    const char *slash = strrchr(state_path, '/');
    snprintf(path, sizeof path, "%.*s/leases.json", slash ? (int)(slash - state_path) : 1,
             slash ? state_path : ".");
    struct reg_lease_store *ls = reg_lease_store_new(base, path, warn, sizeof warn, err, errlen);
    if (ls && warn[0])
        fprintf(stderr, "wtproxy: %s\n", warn);
    return ls;
}

struct reg_saver *reg_lease_store_saver(struct reg_lease_store *ls)
{
    return ls->saver;
}

void reg_lease_store_free(struct reg_lease_store *ls)
{
    if (!ls)
        return;
    reg_saver_free(ls->saver); /* the last write, and the replies it held */
    free(ls->v);
    free(ls);
}

static struct reg_lease *find(struct reg_lease_store *ls, const char *id)
{
    for (size_t i = 0; i < ls->n; i++)
        if (strcmp(ls->v[i].id, id) == 0)
            return &ls->v[i];
    return NULL;
}

static void remove_at(struct reg_lease_store *ls, struct reg_lease *l)
{
    size_t i = (size_t)(l - ls->v);
    memmove(&ls->v[i], &ls->v[i + 1], (ls->n - i - 1) * sizeof *l);
    ls->n--;
}

/* Whether l ended: TTL passed or holder dead; why says which. */
static int ended(const struct reg_lease *l, char *why, size_t whylen)
{
    if (reg_lease_expired(l, host_wall_ms()))
        snprintf(why, whylen, "its TTL passed");
    else if (reg_lease_holder_dead(l))
        snprintf(why, whylen, "its holder pid %d is gone", (int)l->pid);
    else
        return 0;
    return 1;
}

void reg_lease_store_sweep(struct reg_lease_store *ls)
{
    char why[64];
    int changed = 0;
    for (size_t i = 0; i < ls->n;) {
        if (ended(&ls->v[i], why, sizeof why)) {
            fprintf(stderr, "wtproxy: lease %s ended: %s\n", ls->v[i].id, why);
            remove_at(ls, &ls->v[i]);
            changed = 1;
        } else {
            i++;
        }
    }
    if (changed)
        save(ls);
}

json_t *reg_lease_claimer(json_t *req, struct reg_lease *c, long long *ttl)
{
    const char *id = NULL, *wt = NULL, *session = "", *purpose = "";
    json_int_t pid = -1, ttl_ms = 0;
    char err[256];
    memset(c, 0, sizeof *c);
    if (json_unpack(req, "{s:s, s:s, s:I, s?s, s?s, s?I}", "id", &id, "worktree", &wt, "pid", &pid,
                    "session", &session, "purpose", &purpose, "ttl_ms", &ttl_ms) < 0 ||
        pid < 0 || pid > 0x7fffffff || ttl_ms < 0)
        return reg_fail("bad-request", "claim needs id, worktree, pid >= 0 and ttl_ms >= 0");
    if (reg_lease_check_id(id, err, sizeof err) < 0)
        return reg_fail("bad-request", "%s", err);
    if (pid == 0 && ttl_ms == 0)
        return reg_fail("bad-request", "a claim without a pid needs a TTL (--ttl 1h)");
    if (pid > 0 && !(c->pid_start = host_pid_start((pid_t)pid)))
        return reg_fail("bad-request",
                        "pid %d does not run (it exited, or is mistyped); claim "
                        "for a running pid, or for a time: --ttl 1h",
                        (int)pid);
    snprintf(c->id, sizeof c->id, "%s", id);
    snprintf(c->machine, sizeof c->machine, "%s", reg_machine_id());
    snprintf(c->worktree, sizeof c->worktree, "%s", wt);
    snprintf(c->session, sizeof c->session, "%s", session);
    snprintf(c->purpose, sizeof c->purpose, "%s", purpose);
    c->pid = (pid_t)pid;
    *ttl = ttl_ms;
    return NULL;
}

static json_t *op_claim(struct reg_lease_store *ls, json_t *req)
{
    struct reg_lease c;
    long long ttl = 0;
    char why[64];
    json_t *bad = reg_lease_claimer(req, &c, &ttl);
    if (bad)
        return bad;
    c.acquired_ms = host_wall_ms();
    c.expires_ms = ttl ? c.acquired_ms + ttl : 0;
    struct reg_lease *l = find(ls, c.id);
    if (l && reg_lease_same_holder(l, &c)) {
        c.acquired_ms = l->acquired_ms; /* a renewal keeps its age */
    } else if (l && ended(l, why, sizeof why)) {
        fprintf(stderr, "wtproxy: lease %s taken over from %s: %s\n", l->id, l->worktree, why);
    } else if (l) {
        return reg_lease_held("conflict", l);
    } else if (ls->n >= REG_LEASE_MAX) {
        return reg_fail("store-full",
                        "the embedded store holds %d leases already, its most: %s is not "
                        "claimed; see which are held with wtproxy leases, and free those no "
                        "longer used with: wtproxy release RESOURCE",
                        REG_LEASE_MAX, c.id);
    } else {
        l = &ls->v[ls->n++];
    }
    *l = c;
    save(ls);
    return json_pack("{s:b, s:o}", "ok", 1, "lease", reg_lease_to_json(l));
}

json_t *reg_lease_releaser(json_t *req, struct reg_lease *r, int *force)
{
    const char *id = NULL, *wt = "";
    json_int_t pid = 0;
    memset(r, 0, sizeof *r);
    *force = 0;
    if (json_unpack(req, "{s:s, s?s, s?I, s?b}", "id", &id, "worktree", &wt, "pid", &pid, "force",
                    force) < 0 ||
        pid < 0 || pid > 0x7fffffff)
        return reg_fail("bad-request", "release needs id (and worktree, or force; pid >= 0)");
    snprintf(r->id, sizeof r->id, "%s", id);
    snprintf(r->machine, sizeof r->machine, "%s", reg_machine_id());
    snprintf(r->worktree, sizeof r->worktree, "%s", wt);
    r->pid = (pid_t)pid;
    r->pid_start = pid ? host_pid_start(r->pid) : 0;
    return NULL;
}

static json_t *op_release(struct reg_lease_store *ls, json_t *req)
{
    struct reg_lease r;
    int force;
    json_t *bad = reg_lease_releaser(req, &r, &force);
    if (bad)
        return bad;
    struct reg_lease *l = find(ls, r.id);
    if (!l)
        return reg_fail("not-found", "nobody holds %s (see: wtproxy leases)", r.id);
    if (!reg_lease_may_release(l, &r, force))
        return reg_lease_held("not-permitted", l);
    json_t *reply = json_pack("{s:b, s:o}", "ok", 1, "lease", reg_lease_to_json(l));
    remove_at(ls, l);
    save(ls);
    return reply;
}

json_t *reg_lease_store_op(struct reg_lease_store *ls, const char *op, json_t *req, uid_t uid)
{
    (void)uid; /* the control socket's folder admits one user */
    if (strcmp(op, "claim") == 0)
        return op_claim(ls, req);
    if (strcmp(op, "release") == 0)
        return op_release(ls, req);
    reg_lease_store_sweep(ls);
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < ls->n; i++)
        json_array_append_new(arr, reg_lease_to_json(&ls->v[i]));
    return json_pack("{s:b, s:o}", "ok", 1, "leases", arr);
}
