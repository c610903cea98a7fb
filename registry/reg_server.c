/* reg_server.c - the registry inside the daemon: a control line's way
 * (PROTOCOL.md; the socket is reg_control.c) and saving every change to
 * the state file before it is acknowledged; its life. What each op does is
 * reg_server_ops.c; liveness watches and port reservations are
 * reg_server_live.c; their shared state is reg_server_int.h.
 *
 * The save runs on the state file's writer thread (reg_store_worker.c):
 * the loop hands it the table's text and goes on serving; the reply to the
 * control line that made the change is held until that text (or a later
 * one) is on disk, with the outcome of that very write in its "warning".
 * So PROTOCOL.md's promise holds: a change is saved before it is
 * acknowledged. A change made by the sweep (a server died) is acknowledged
 * to nobody; its write is on disk shortly after, and at exit for sure.
 *
 * With a PostgreSQL store, nothing here waits for it: the lease ops, the
 * other machines' entries of `list`, and the mirroring of each change are
 * jobs for the PostgreSQL thread (reg_pg_worker.c). A control line that
 * needs one is answered when it is over; a change is acknowledged once it
 * is mirrored, as it was when the loop did it itself. */
#include <event2/event.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "reg_control.h"
#include "reg_lease.h"
#include "reg_pg.h"
#include "registry.h"
#include "host.h"
#include "reg_server_int.h"

/* reg_saver_done, after each write of the state file. A failed save keeps
 * the previous file and the change in memory: routing goes on, and every
 * acknowledgement says what a restart would forget (unsaved_warning), so
 * the agent that registered reads it, not only our log. */
static void written(void *arg, const char *err)
{
    struct reg_server *rs = arg;
    if (err[0])
        fprintf(stderr,
                "wtproxy: cannot save registrations, the previous state file is kept: "
                "%s\n",
                err);
    snprintf(rs->unsaved, sizeof rs->unsaved, "%s", err);
}

/* Hand the table to the writer thread. */
static void save_file(struct reg_server *rs)
{
    char *dump = reg_store_dump(rs->table, rs->daemon);
    if (dump)
        reg_saver_put(rs->saver, dump);
    else
        written(rs, "out of memory: the change is not saved");
}

/* Hand the table to the writer thread and the PostgreSQL mirror. */
void reg_server_save(struct reg_server *rs)
{
    save_file(rs);
    rs->line_saved = 1;
    reg_pgops_mirror(&rs->pg, rs->table);
}

/* The registry answers again: this machine's rows, which missed the
 * changes made while it was down, are written again. */
static void mirror_again(void *arg)
{
    struct reg_server *rs = arg;
    reg_pgops_mirror(&rs->pg, rs->table);
}

void reg_server_set_ext(struct reg_server *rs, reg_server_ext fn, void *arg)
{
    rs->ext = fn;
    rs->ext_arg = arg;
}

void reg_server_set_on_state(struct reg_server *rs, reg_server_on_state fn, void *arg)
{
    rs->on_state = fn;
    rs->on_state_arg = arg;
}

json_t *reg_server_leases(struct reg_server *rs, reg_server_done cb, void *arg, void **job)
{
    if (rs->pg.pgw)
        return (*job = reg_pgops_leases(&rs->pg, cb, arg))
                   ? NULL
                   : json_pack("{s:s, s:s}", "store", "postgresql", "error", "out of memory");
    json_t *req = json_pack("{s:s}", "op", "leases");
    json_t *r = req ? reg_lease_store_op(rs->leases, "leases", req, getuid()) : NULL;
    json_decref(req);
    return reg_leases_view("embedded", r);
}

void reg_server_cancel(struct reg_server *rs, void *job)
{
    (void)rs;
    reg_pgw_cancel(job);
}

/* ---- one request line ---- */

/* The reply line (no LF) to r, which it consumes. */
static char *reply_line(json_t *r)
{
    char *line = r ? json_dumps(r, JSON_COMPACT) : NULL;
    json_decref(r);
    return line ? line
                : strdup("{\"ok\":false,\"error\":\"internal\",\"message\":\"out of memory\"}");
}

/* The mark of a reply that comes later: never sent, never freed
 * (jansson leaves an object whose refcount is (size_t)-1 alone). */
static json_t later_mark = {JSON_NULL, (size_t)-1};

json_t *reg_server_later(void)
{
    return &later_mark;
}

void reg_server_reply(struct reg_peer *peer, json_t *reply)
{
    reg_control_reply(peer, reply_line(reply));
}

/* A reply held until its line's change is on disk and mirrored. */
struct held {
    struct reg_server *rs;
    struct reg_peer *peer;
    json_t *reply;
    int waits; /* the state file's write, the leases file's, the PostgreSQL mirror,
                * line_done itself */
    int saved; /* the line changed the table: the reply says how its write went */
};

/* One wait of h is over; after the last, h's reply goes, its warning
 * saying how the write it waited for went. */
static void held_step(struct held *h)
{
    if (--h->waits > 0)
        return;
    if (h->saved && json_is_true(json_object_get(h->reply, "ok"))) {
        json_object_del(h->reply, "warning");
        reg_server_unsaved_warning(h->rs, h->reply);
    }
    reg_control_reply(h->peer, reply_line(h->reply));
    free(h);
}

static void held_saved(void *arg, const char *err)
{
    (void)err; /* written() has put it in rs->unsaved */
    held_step(arg);
}

static void held_mirrored(void *arg, json_t *answer)
{
    json_decref(answer);
    held_step(arg);
}

/* The line is handled and r is its reply (NULL: it comes later). Returns
 * r to send now, or NULL when it is held until the line's change (saved
 * says it made one to the table, leases one to the embedded lease store)
 * is written and mirrored. Without a peer to answer later
 * (reg_server_request), r goes now: the write and mirror follow. */
static json_t *line_done(struct reg_server *rs, struct reg_peer *peer, json_t *r, int saved,
                         int leases)
{
    struct held *h = (saved || leases) && peer && r ? calloc(1, sizeof *h) : NULL;
    if (!h) {
        if (rs->pg.pgw)
            reg_pgops_line_done(&rs->pg, NULL, NULL);
        return r;
    }
    *h = (struct held){rs, peer, r, 1, saved};
    if (saved)
        h->waits += reg_saver_wait(rs->saver, held_saved, h);
    if (leases) /* a write failure is the daemon's log's (reg_lease_store.c) */
        h->waits += reg_saver_wait(reg_lease_store_saver(rs->leases), held_saved, h);
    if (rs->pg.pgw)
        h->waits += reg_pgops_line_done(&rs->pg, held_mirrored, h);
    held_step(h); /* line_done's own: the reply goes now if nothing is pending */
    return NULL;
}

/* The reply to one line, or NULL when it comes later through peer. A
 * change it made is saved and mirrored before the reply goes (with a
 * peer). An op of the layer above may run a line itself (peer NULL):
 * that inner line's change does not hold the outer line's reply. */
static json_t *request(struct reg_server *rs, struct reg_peer *peer, uid_t uid, const char *line,
                       size_t len)
{
    json_error_t je;
    json_t *req = json_loadb(line, len, 0, &je);
    if (!req)
        return reg_fail("bad-request", "not JSON: %s (line %d, column %d)", je.text, je.line,
                        je.column);
    int outer = rs->line_saved, outer_leases = rs->line_leases;
    rs->line_saved = rs->line_leases = 0;
    rs->pg.in_line = 1;
    json_t *r = reg_server_handle(rs, peer, uid, req);
    rs->pg.in_line = 0;
    json_decref(req);
    int saved = rs->line_saved, leases = rs->line_leases;
    rs->line_saved = outer;
    rs->line_leases = outer_leases;
    return line_done(rs, peer, r, saved, leases);
}

char *reg_server_request(struct reg_server *rs, uid_t uid, const char *line, size_t len)
{
    return reply_line(request(rs, NULL, uid, line, len));
}

static void serve_line(void *rs, struct reg_peer *peer, uid_t uid, const char *line, size_t len)
{
    json_t *r = request(rs, peer, uid, line, len);
    if (r)
        reg_control_reply(peer, reply_line(r));
}

/* ---- life ---- */

static void load_state(struct reg_server *rs)
{
    char warn[1024] = "", err[512], why[PATH_MAX + 64];
    if (reg_store_load(rs->table, rs->state_path, warn, sizeof warn, err, sizeof err) < 0)
        fprintf(stderr, "wtproxy: cannot read %s, starting empty: %s\n", rs->state_path, err);
    if (warn[0])
        fprintf(stderr, "wtproxy: %s\n", warn);
    int dropped = 0;
    for (size_t i = 0; i < reg_table_count(rs->table);) {
        struct reg_backend *b = reg_table_at(rs->table, i);
        if (!reg_backend_alive(b, host_wall_ms(), why, sizeof why)) {
            reg_server_drop(rs, b, why);
            dropped = 1;
            continue;
        }
        b->restored = 1;
        reg_server_watch(rs, b);
        fprintf(stderr, "wtproxy: restored %s on front :%d -> %s\n", b->worktree, b->front,
                b->name);
        i++;
    }
    if (dropped || warn[0])
        reg_server_save(rs);
}

/* What this daemon runs with, for its state file: the registry it was
 * given (registry, else $WTPROXY_REGISTRY; masked), reached or not, and
 * its flags. */
static json_t *daemon_record(const char *registry, json_t *flags)
{
    const char *uri = registry && registry[0] ? registry : getenv("WTPROXY_REGISTRY");
    char masked[REG_PG_URI_MAX + 64];
    json_t *d = json_object();
    if (d && uri && uri[0]) {
        reg_pg_mask(uri, masked, sizeof masked);
        json_object_set_new(d, "registry", json_string(masked));
    }
    if (d && flags)
        json_object_set(d, "flags", flags);
    return d;
}

/* The daemon before this one (its state file says) ran on a PostgreSQL
 * registry, and this one was given none: its claims hold on this machine
 * only, while other machines may hold the same resources. A start pasted
 * in a shell without WTPROXY_REGISTRY did it silently, and two machines
 * held one emulator. Said loudly, and kept for ping (doctor says it). */
static void registry_lost(struct reg_server *rs, json_t *before)
{
    const char *was = json_string_value(json_object_get(before, "registry"));
    if (!was || json_object_get(rs->mine, "registry"))
        return;
    snprintf(rs->registry_before, sizeof rs->registry_before, "%s", was);
    fprintf(stderr,
            "wtproxy: WARNING: the daemon before this one ran on the PostgreSQL registry %s (its "
            "state file %s says), and this one was given no registry: it runs on the EMBEDDED "
            "store; its claims do not hold against other machines, which may hold the same "
            "resources now, and they do not see this machine's dev servers; start it on that "
            "registry: wtproxy stop --daemon, then its start with --registry %s (wtproxy doctor "
            "prints it whole)\n",
            was, rs->state_path, was);
}

struct reg_server *reg_server_new(struct event_base *base, const char *socket_path, int socket_fd,
                                  const char *state_path, const char *registry, json_t *flags,
                                  char *err, size_t errlen)
{
    struct reg_server *rs = calloc(1, sizeof *rs);
    if (!rs || !(rs->table = reg_table_new()) ||
        !(rs->sweep = event_new(base, -1, EV_PERSIST, reg_server_sweep, rs))) {
        snprintf(err, errlen, "out of memory");
        reg_server_free(rs);
        return NULL;
    }
    rs->base = base;
    snprintf(rs->socket_path, sizeof rs->socket_path, "%s", socket_path);
    snprintf(rs->state_path, sizeof rs->state_path, "%s", state_path);
    srandom((unsigned)(getpid() ^ host_wall_ms()));
    reg_machine_id(); /* its lazy first read, before the PostgreSQL thread reads it too */
    if (reg_mirror_start(registry, &rs->mirror, err, errlen) < 0 ||
        (reg_mirror_online(rs->mirror) &&
         !(rs->pg.pgw = reg_pgw_new(base, rs->mirror, err, errlen)))) {
        reg_server_free(rs);
        return NULL;
    }
    if (!(rs->saver = reg_saver_new(base, rs->state_path, written, rs, err, errlen))) {
        reg_server_free(rs);
        return NULL;
    }
    rs->daemon = reg_store_daemon(rs->state_path); /* kept by the saves until this one serves */
    rs->mine = daemon_record(registry, flags);
    registry_lost(rs, rs->daemon);
    load_state(rs);
    if (rs->pg.pgw)
        reg_pgw_on_reconnect(rs->pg.pgw, mirror_again, rs);
    reg_pgops_mirror(&rs->pg, rs->table); /* this machine's rows from before are stale */
    if (!(rs->leases = reg_lease_store_beside(base, rs->state_path, err, errlen))) {
        reg_server_free(rs);
        return NULL;
    }
    if (!(rs->control =
              reg_control_new(base, rs->socket_path, socket_fd, serve_line, rs, err, errlen))) {
        reg_server_free(rs);
        return NULL;
    }
    struct timeval tv = {REG_SWEEP_MS / 1000, (REG_SWEEP_MS % 1000) * 1000};
    event_add(rs->sweep, &tv);
    fprintf(stderr, "wtproxy: control socket %s%s, state %s\n", rs->socket_path,
            socket_fd >= 0 ? " (socket activation)" : "", rs->state_path);
    return rs;
}

void reg_server_free(struct reg_server *rs)
{
    if (!rs)
        return;
    reg_pgw_free(rs->pg.pgw);         /* first: its last answers go to control peers */
    reg_saver_free(rs->saver);        /* then the last writes, and the replies they held */
    reg_lease_store_free(rs->leases); /* the same for the leases file */
    reg_control_free(rs->control);
    if (rs->sweep)
        event_free(rs->sweep);
    for (size_t i = 0; rs->table && i < reg_table_count(rs->table); i++)
        reg_server_unwatch(reg_table_at(rs->table, i));
    reg_table_free(rs->table);
    json_decref(rs->listen);
    json_decref(rs->daemon);
    json_decref(rs->mine);
    json_decref(rs->pg.sync_out);
    reg_mirror_close(rs->mirror); /* the thread is gone: this one runs its last statement */
    free(rs);
}

void reg_server_serving(struct reg_server *rs)
{
    if (json_equal(rs->daemon, rs->mine))
        return;
    json_decref(rs->daemon);
    rs->daemon = json_incref(rs->mine);
    save_file(rs);
}

void reg_server_set_listen(struct reg_server *rs, const char *const *names, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        json_array_append_new(arr, json_string(names[i]));
    json_decref(rs->listen);
    rs->listen = arr;
}

struct reg_table *reg_server_table(struct reg_server *rs)
{
    return rs->table;
}
