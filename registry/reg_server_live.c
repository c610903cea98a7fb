/* reg_server_live.c - the registry server's liveness: a pidfd watch per
 * entry, the one-second sweep (TTLs, removed worktrees, reused pids,
 * ended leases), and the ports reserved for servers about to register. */
#include <event2/event.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "reg_control.h"
#include "reg_lease.h"
#include "reg_pg.h"
#include "registry.h"
#include "host.h"
#include "reg_server_int.h"

/* ---- liveness ---- */

void reg_server_unwatch(struct reg_backend *b)
{
    struct watch *w = b->watch;
    if (!w)
        return;
    event_free(w->ev);
    close(w->pidfd);
    free(w);
    b->watch = NULL;
}

/* Drop b from the table: marked dead first, for requests that hold it,
 * and the layer above told, so that those waiting for it are answered now
 * rather than when their own wait for its port ends. */
void reg_server_drop(struct reg_server *rs, struct reg_backend *b, const char *why)
{
    fprintf(stderr, "wtproxy: dropped %s (front :%d, port %d): %s\n", b->worktree, b->front,
            b->port, why);
    b->state = REG_DEAD;
    if (rs->on_state)
        rs->on_state(rs->on_state_arg, b);
    reg_server_unwatch(b);
    reg_backend_unref(reg_table_take(rs->table, b->front, b->worktree));
    reg_server_save(rs);
}

static void pid_exited(evutil_socket_t fd, short what, void *arg)
{
    struct watch *w = arg;
    char why[sizeof w->b->command + 64];
    (void)fd;
    (void)what;
    snprintf(why, sizeof why, "pid %d%s%s%s exited, and nothing unregistered it", (int)w->b->pid,
             w->b->command[0] ? " (" : "", w->b->command, w->b->command[0] ? ")" : "");
    reg_server_drop(w->rs, w->b, why);
}

/* A pidfd turns readable when its process ends, whoever ended it. Where
 * pidfds are missing, the one-second sweep catches the death instead. */
void reg_server_watch(struct reg_server *rs, struct reg_backend *b)
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

void reg_server_sweep(evutil_socket_t fd, short what, void *arg)
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
            reg_server_drop(rs, b, why);
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
int reg_server_reserve_port(struct reg_server *rs)
{
    if (rs->nreserved >= REG_MAX_RESERVED)
        return 0;
    int start = (int)(random() % REG_PORT_COUNT);
    for (int i = 0; i < REG_PORT_COUNT; i++) {
        int port = REG_PORT_FIRST + (start + i) % REG_PORT_COUNT;
        if (!port_taken(rs, port) && port_free(port)) {
            rs->reserved[rs->nreserved++] =
                (struct reservation){port, host_wall_ms() + REG_RESERVE_MS};
            return port;
        }
    }
    return 0;
}

void reg_server_unreserve(struct reg_server *rs, int port)
{
    for (size_t i = 0; i < rs->nreserved; i++)
        if (rs->reserved[i].port == port) {
            rs->reserved[i] = rs->reserved[--rs->nreserved];
            return;
        }
}
