/* reg_server.c - the registry inside the daemon: what a control line does
 * (PROTOCOL.md; the socket is reg_control.c), port reservations, liveness
 * watches, and saving every change to the state file before it is
 * acknowledged.
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
#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "reg_control.h"
#include "reg_lease.h"
#include "reg_pg.h"
#include "registry.h"
#include "host.h"

#define REG_SWEEP_MS 1000        /* TTLs, removed worktrees, reused pids */
#define REG_RESERVE_MS 60000     /* a reserved port is held this long */
/* Ports handed to dev servers: below Linux's ephemeral range (32768+), so
 * an outgoing connection never takes a port between reserve and bind. */
#define REG_PORT_FIRST 20000
#define REG_PORT_COUNT 10000
#define REG_MAX_RESERVED 1024

struct reservation {
    int port;
    long long until_ms;
};

struct reg_server {
    struct event_base *base;
    struct reg_control *control;
    struct event *sweep;
    struct reg_table *table;
    struct reg_lease_store *leases; /* claims on this machine (reg_lease_store.c) */
    struct reg_mirror *mirror;       /* the PostgreSQL store (reg_pg_backends.c), or NULL */
    struct reg_pgops pg;             /* its thread, when the daemon runs on it */
    char socket_path[PATH_MAX];
    char state_path[PATH_MAX];
    struct reservation reserved[REG_MAX_RESERVED];
    size_t nreserved;
    json_t *listen; /* the front addresses, for ping; NULL until told */
    struct reg_saver *saver; /* writes the state file off the loop */
    int line_saved;    /* the control line being handled changed the table */
    int line_leases;   /* it claimed or released in the embedded store */
    char unsaved[640]; /* why the last save failed; "" once one succeeds */
    reg_server_ext ext; /* the ops of the layer above, or NULL */
    void *ext_arg;
};

struct watch {
    struct reg_server *rs;
    struct reg_backend *b;
    struct event *ev;
    int pidfd;
};


/* reg_saver_done, after each write of the state file. A failed save keeps
 * the previous file and the change in memory: routing goes on, and every
 * acknowledgement says what a restart would forget (unsaved_warning), so
 * the agent that registered reads it, not only our log. */
static void written(void *arg, const char *err)
{
    struct reg_server *rs = arg;
    if (err[0])
        fprintf(stderr, "wtproxy: cannot save registrations, the previous state file is kept: "
                        "%s\n", err);
    snprintf(rs->unsaved, sizeof rs->unsaved, "%s", err);
}

/* Hand the table to the writer thread and the PostgreSQL mirror. */
static void save(struct reg_server *rs)
{
    char *dump = reg_store_dump(rs->table);
    if (dump)
        reg_saver_put(rs->saver, dump);
    else
        written(rs, "out of memory: the change is not saved");
    rs->line_saved = 1;
    reg_pgops_mirror(&rs->pg, rs->table);
}

/* ---- liveness ---- */

static void unwatch(struct reg_backend *b)
{
    struct watch *w = b->watch;
    if (!w)
        return;
    event_free(w->ev);
    close(w->pidfd);
    free(w);
    b->watch = NULL;
}

/* Drop b from the table: marked dead first, for requests that hold it. */
static void drop(struct reg_server *rs, struct reg_backend *b, const char *why)
{
    fprintf(stderr, "wtproxy: dropped %s (front :%d, port %d): %s\n", b->worktree, b->front,
            b->port, why);
    b->state = REG_DEAD;
    unwatch(b);
    reg_backend_unref(reg_table_take(rs->table, b->front, b->worktree));
    save(rs);
}

static void pid_exited(evutil_socket_t fd, short what, void *arg)
{
    struct watch *w = arg;
    char why[128];
    (void)fd;
    (void)what;
    snprintf(why, sizeof why, "pid %d exited", (int)w->b->pid);
    drop(w->rs, w->b, why);
}

/* A pidfd turns readable when its process ends, whoever ended it. Where
 * pidfds are missing, the one-second sweep catches the death instead. */
static void watch(struct reg_server *rs, struct reg_backend *b)
{
    if (b->pid <= 0)
        return;
    int fd = (int)syscall(SYS_pidfd_open, b->pid, 0);
    struct watch *w = fd >= 0 ? calloc(1, sizeof *w) : NULL;
    if (w)
        w->ev = event_new(rs->base, fd, EV_READ, pid_exited, w);
    if (!w || !w->ev || event_add(w->ev, NULL) < 0) {
        if (w && w->ev)
            event_free(w->ev);
        free(w);
        if (fd >= 0)
            close(fd);
        return;
    }
    w->rs = rs;
    w->b = b;
    w->pidfd = fd;
    b->watch = w;
}

static void sweep_cb(evutil_socket_t fd, short what, void *arg)
{
    struct reg_server *rs = arg;
    char why[PATH_MAX + 64];
    long long now = host_wall_ms();
    (void)fd;
    (void)what;
    for (size_t i = 0; i < reg_table_count(rs->table);) {
        struct reg_backend *b = reg_table_at(rs->table, i);
        if (reg_backend_alive(b, now, why, sizeof why))
            i++;
        else
            drop(rs, b, why);
    }
    size_t kept = 0;
    for (size_t i = 0; i < rs->nreserved; i++)
        if (rs->reserved[i].until_ms > now)
            rs->reserved[kept++] = rs->reserved[i];
    rs->nreserved = kept;
    reg_lease_store_sweep(rs->leases);
}

/* ---- port reservations ---- */

static int port_taken(struct reg_server *rs, int port)
{
    for (size_t i = 0; i < rs->nreserved; i++)
        if (rs->reserved[i].port == port)
            return 1;
    for (size_t i = 0; i < reg_table_count(rs->table); i++)
        if (reg_table_at(rs->table, i)->port == port)
            return 1;
    return 0;
}

/* Whether nothing listens on 127.0.0.1:port now (we can bind it). */
static int port_free(int port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int ok = bind(fd, (struct sockaddr *)&sin, sizeof sin) == 0;
    close(fd);
    return ok;
}

/* A port no entry, reservation or listener has; 0 when none is left. The
 * start is random so two daemons (or a restarted one) spread out. */
static int reserve_port(struct reg_server *rs)
{
    if (rs->nreserved >= REG_MAX_RESERVED)
        return 0;
    int start = (int)(random() % REG_PORT_COUNT);
    for (int i = 0; i < REG_PORT_COUNT; i++) {
        int port = REG_PORT_FIRST + (start + i) % REG_PORT_COUNT;
        if (!port_taken(rs, port) && port_free(port)) {
            rs->reserved[rs->nreserved++] = (struct reservation){port, host_wall_ms() + REG_RESERVE_MS};
            return port;
        }
    }
    return 0;
}

static void unreserve(struct reg_server *rs, int port)
{
    for (size_t i = 0; i < rs->nreserved; i++)
        if (rs->reserved[i].port == port) {
            rs->reserved[i] = rs->reserved[--rs->nreserved];
            return;
        }
}

/* ---- operations ---- */

/* r, with what a restart would forget when the last save failed. */
static json_t *unsaved_warning(const struct reg_server *rs, json_t *r)
{
    if (r && rs->unsaved[0])
        json_object_set_new(
            r, "warning",
            json_sprintf("the daemon cannot save its registrations (%s): they are served now "
                         "but forgotten if the daemon restarts; free space there, or restart "
                         "the daemon with --state PATH on a writable disk",
                         rs->unsaved));
    return r;
}

static json_t *ok_entry(const struct reg_server *rs, const struct reg_backend *b)
{
    return unsaved_warning(rs, json_pack("{s:b, s:o}", "ok", 1, "entry",
                                         reg_backend_to_json(b)));
}

static uid_t pid_uid(pid_t pid)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    return stat(path, &st) == 0 ? st.st_uid : (uid_t)-1;
}

static json_t *conflict(const struct reg_backend *h)
{
    char age[32];
    host_age(host_wall_ms() - h->registered_ms, age, sizeof age);
    json_t *r = reg_fail("conflict",
                     "%s already has a live server on front :%d: pid %d (%s), port %d, "
                     "registered %s ago. Stop it, or remove it: wtproxy unregister --worktree %s "
                     "--front %d",
                     h->worktree, h->front, (int)h->pid, h->command, h->port, age, h->worktree,
                     h->front);
    json_object_set_new(r, "holder", reg_backend_to_json(h));
    return r;
}

/* The entry a ready/unregister names, checked against the peer's uid. */
static json_t *find_owned(struct reg_server *rs, uid_t uid, json_t *req,
                          struct reg_backend **out)
{
    json_int_t front = 0;
    const char *wt = NULL;
    char real[PATH_MAX];
    if (json_unpack(req, "{s:I, s:s}", "front", &front, "worktree", &wt) < 0)
        return reg_fail("bad-request", "give \"front\" (a port) and \"worktree\" (a path)");
    *out = reg_table_get(rs->table, (int)front, wt);
    if (!*out && realpath(wt, real))
        *out = reg_table_get(rs->table, (int)front, real);
    if (!*out)
        return reg_fail("not-found", "nothing is registered for %s on front :%d (see: wtproxy ls)",
                    wt, (int)front);
    if (uid != 0 && uid != (*out)->uid)
        return reg_fail("not-permitted", "%s on front :%d belongs to uid %d; only that user or "
                                     "root may change it", (*out)->worktree, (int)front,
                    (int)(*out)->uid);
    return NULL;
}

static json_t *op_register(struct reg_server *rs, uid_t uid, json_t *req)
{
    json_int_t front = 0, port = 0, pid = 0, ttl = 0;
    const char *wt = NULL, *command = "", *host = "127.0.0.1";
    int ready = 0, restart = 0;
    char real[PATH_MAX], name[320], err[256];
    if (json_unpack(req, "{s:I, s:s, s:I, s?I, s?I, s?s, s?s, s?b, s?b}", "front", &front,
                    "worktree", &wt, "port", &port, "pid", &pid, "ttl_ms", &ttl, "command",
                    &command, "host", &host, "ready", &ready, "restart_on_stale",
                    &restart) < 0 ||
        front < 1 || front > 65535 || port < 1 || port > 65535 || pid < 0 || ttl < 0)
        return reg_fail("bad-request", "register needs front and port (1-65535), worktree, and a "
                                   "pid >= 0 or ttl_ms");
    if (!realpath(wt, real))
        return reg_fail("bad-request", "worktree %s: %s", wt, strerror(errno));
    if (pid == 0 && ttl == 0)
        return reg_fail("bad-request", "an entry without a pid needs a TTL (--ttl 1h), so that it "
                                   "cannot outlive its server forever");
    if (pid > 0 && !host_pid_start((pid_t)pid))
        return reg_fail("bad-request", "pid %d does not run", (int)pid);
    if (pid > 0 && uid != 0 && pid_uid((pid_t)pid) != uid)
        return reg_fail("not-permitted", "pid %d is not yours", (int)pid);
    snprintf(name, sizeof name, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, (int)port);
    struct reg_backend *holder = reg_table_get(rs->table, (int)front, real);
    if (holder && !reg_backend_alive(holder, host_wall_ms(), err, sizeof err))
        drop(rs, holder, err);
    else if (holder)
        return conflict(holder);
    struct reg_backend *b = reg_backend_new(name, err, sizeof err);
    if (!b)
        return reg_fail("bad-request", "%s", err);
    if (reg_backend_read_labels(b, req, err, sizeof err) < 0) {
        reg_backend_unref(b);
        return reg_fail("bad-request", "%s", err);
    }
    snprintf(b->machine, sizeof b->machine, "%s", reg_machine_id());
    snprintf(b->worktree, sizeof b->worktree, "%s", real);
    snprintf(b->command, sizeof b->command, "%s", command);
    b->front = (int)front;
    b->uid = uid;
    b->port = (int)port;
    b->pid = (pid_t)pid;
    b->pid_start = pid ? host_pid_start((pid_t)pid) : 0;
    b->registered_ms = b->started_ms = host_wall_ms();
    b->expires_ms = ttl ? b->registered_ms + ttl : 0;
    b->state = ready ? REG_READY : REG_STARTING;
    b->restart_on_stale = restart && pid > 0; /* only a wrapper can restart it */
    reg_table_put(rs->table, b, &holder);
    reg_backend_unref(b);
    unreserve(rs, b->port);
    watch(rs, b);
    save(rs);
    fprintf(stderr, "wtproxy: registered %s on front :%d -> %s (pid %d)\n", b->worktree,
            b->front, b->name, (int)b->pid);
    return ok_entry(rs, b);
}

static json_t *op_list(struct reg_server *rs, struct reg_peer *peer)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < reg_table_count(rs->table); i++)
        json_array_append_new(arr, reg_backend_to_json(reg_table_at(rs->table, i)));
    if (rs->pg.pgw) /* the other machines' entries, from the store */
        return reg_pgops_list(&rs->pg, peer, arr,
                              unsaved_warning(rs, json_pack("{s:b}", "ok", 1)));
    return unsaved_warning(rs, json_pack("{s:b, s:o}", "ok", 1, "entries", arr));
}

/* The reply to req, or NULL when it comes later (through peer). */
static json_t *handle(struct reg_server *rs, struct reg_peer *peer, uid_t uid, json_t *req)
{
    const char *op = json_is_object(req) ? json_string_value(json_object_get(req, "op")) : NULL;
    struct reg_backend *b = NULL;
    json_t *err;
    if (!op)
        return reg_fail("bad-request", "each line must be a JSON object with an \"op\"");
    if (strcmp(op, "ping") == 0)
        return reg_mirror_status(rs->mirror,
                                 json_pack("{s:b, s:s, s:i, s:s, s:O}", "ok", 1, "version",
                                           WTP_VERSION, "pid", (int)getpid(), "machine",
                                           reg_machine_id(), "listen",
                                           rs->listen ? rs->listen : json_null()));
    if (strcmp(op, "list") == 0)
        return op_list(rs, peer);
    if (strcmp(op, "register") == 0)
        return op_register(rs, uid, req);
    if (strcmp(op, "claim") == 0 || strcmp(op, "release") == 0 || strcmp(op, "leases") == 0) {
        if (rs->pg.pgw)
            return reg_pgops_lease_op(&rs->pg, peer, req);
        rs->line_leases = strcmp(op, "leases") != 0; /* its reply waits for the file */
        return reg_lease_store_op(rs->leases, op, req, uid);
    }
    if (strcmp(op, "reserve") == 0) {
        int port = reserve_port(rs);
        return port ? json_pack("{s:b, s:i}", "ok", 1, "port", port)
                    : reg_fail("no-port", "no free port is left in %d-%d", REG_PORT_FIRST,
                           REG_PORT_FIRST + REG_PORT_COUNT - 1);
    }
    if (strcmp(op, "ready") == 0 || strcmp(op, "restarting") == 0 ||
        strcmp(op, "unregister") == 0) {
        if ((err = find_owned(rs, uid, req, &b)))
            return err;
        if (strcmp(op, "unregister") != 0) {
            /* restarting: requests wait for it again, as for a new server */
            b->state = strcmp(op, "ready") == 0 ? REG_READY : REG_STARTING;
            save(rs);
            return ok_entry(rs, b);
        }
        json_t *r = ok_entry(rs, b); /* before drop: it frees b */
        drop(rs, b, "unregistered");
        return r;
    }
    json_t *r = rs->ext ? rs->ext(rs->ext_arg, uid, op, req) : NULL;
    return r ? r : reg_fail("unknown-op", "unknown op \"%s\" (see registry/PROTOCOL.md)", op);
}

void reg_server_set_ext(struct reg_server *rs, reg_server_ext fn, void *arg)
{
    rs->ext = fn;
    rs->ext_arg = arg;
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
    return line ? line : strdup("{\"ok\":false,\"error\":\"internal\",\"message\":\"out of memory\"}");
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
        unsaved_warning(h->rs, h->reply);
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
static json_t *request(struct reg_server *rs, struct reg_peer *peer, uid_t uid,
                       const char *line, size_t len)
{
    json_error_t je;
    json_t *req = json_loadb(line, len, 0, &je);
    if (!req)
        return reg_fail("bad-request", "not JSON: %s (line %d, column %d)", je.text, je.line,
                    je.column);
    int outer = rs->line_saved, outer_leases = rs->line_leases;
    rs->line_saved = rs->line_leases = 0;
    rs->pg.in_line = 1;
    json_t *r = handle(rs, peer, uid, req);
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

static void serve_line(void *rs, struct reg_peer *peer, uid_t uid, const char *line,
                       size_t len)
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
            drop(rs, b, why);
            dropped = 1;
            continue;
        }
        watch(rs, b);
        fprintf(stderr, "wtproxy: restored %s on front :%d -> %s\n", b->worktree, b->front,
                b->name);
        i++;
    }
    if (dropped || warn[0])
        save(rs);
}

struct reg_server *reg_server_new(struct event_base *base, const char *socket_path,
                                  int socket_fd, const char *state_path, const char *registry,
                                  char *err, size_t errlen)
{
    struct reg_server *rs = calloc(1, sizeof *rs);
    if (!rs || !(rs->table = reg_table_new()) ||
        !(rs->sweep = event_new(base, -1, EV_PERSIST, sweep_cb, rs))) {
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
    load_state(rs);
    reg_pgops_mirror(&rs->pg, rs->table); /* this machine's rows from before are stale */
    if (!(rs->leases = reg_lease_store_beside(base, rs->state_path, err, errlen))) {
        reg_server_free(rs);
        return NULL;
    }
    if (!(rs->control = reg_control_new(base, rs->socket_path, socket_fd, serve_line, rs, err,
                                       errlen))) {
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
    reg_pgw_free(rs->pg.pgw); /* first: its last answers go to control peers */
    reg_saver_free(rs->saver); /* then the last writes, and the replies they held */
    reg_lease_store_free(rs->leases); /* the same for the leases file */
    reg_control_free(rs->control);
    if (rs->sweep)
        event_free(rs->sweep);
    for (size_t i = 0; rs->table && i < reg_table_count(rs->table); i++)
        unwatch(reg_table_at(rs->table, i));
    reg_table_free(rs->table);
    json_decref(rs->listen);
    json_decref(rs->pg.sync_out);
    reg_mirror_close(rs->mirror); /* the thread is gone: this one runs its last statement */
    free(rs);
}

void reg_server_set_listen(struct reg_server *rs, const char *const *names, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        json_array_append_new(arr, json_string(names[i]));
    json_decref(rs->listen);
    rs->listen = arr;
}

struct reg_table *reg_server_table(struct reg_server *rs) { return rs->table; }
