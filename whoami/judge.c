/* judge.c - the gate's decision for one request: decide.c's pure
 * function, asked again with each fact it names looked up here: the
 * socket listening now (sock_diag), a restart sent (SIGUSR1), the disk's
 * fingerprint (tree.c), the processes holding the server's socket
 * (holders.c), whether git ignores the files that changed (ignored.c). */
#include <signal.h>
#include <sys/time.h>

#include "gate_impl.h"
#include "host.h"
#include "refusal.h"
#include "tree.h"

long long whoami_gate_now(struct whoami_gate *g)
{
    struct timeval tv;
    event_base_gettimeofday_cached(g->base, &tv);
    return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

unsigned long whoami_gate_listener(struct whoami_server *s)
{
    unsigned long inode;
    uid_t uid;
    if (!s->g->diag || host_diag_socket(s->g->diag, s->t.addr, NULL, &inode, &uid) < 0)
        return 0;
    return inode;
}

/* Whether another socket listens on s's address than the one that gave
 * its answer: a server swapped behind the port (a recycled port, a
 * registration with a TTL outliving its server) has not answered yet.
 * Looked at most every WHOAMI_LISTENER_MS. */
static int listener_moved(struct whoami_server *s, long long now)
{
    if (!s->listener || now - s->listener_ms < WHOAMI_LISTENER_MS)
        return 0;
    s->listener_ms = now;
    return whoami_gate_listener(s) != s->listener;
}

/* Ask the wrapper of a server started with --restart-on-stale to restart
 * it (SIGUSR1; cli/run.c), keeping why: the files that changed since its
 * process started, for its log and the daemon's. Its pid is checked
 * against its start time first: a reused pid is never signalled. */
static int ask_restart(struct whoami_server *s, const struct whoami_case *c, long long now)
{
    const struct whoami_memory *m = c->mem;
    if (host_pid_start(s->t.pid) != s->t.pid_start || kill(s->t.pid, SIGUSR1) < 0)
        return 0;
    long long since = m->ans ? m->ans->started_ms : s->t.started_ms;
    s->restart_why[0] = '\0';
    if (c->disk && c->disk->fp) /* every restart's decision read the disk first */
        whoami_refusal_restart_why(&s->t, c->disk->fp, since, m->ignored_all, s->restart_why,
                                   sizeof s->restart_why);
    s->prior_restart_ms = s->restart_ms;
    s->restart_ms = now;
    s->restart_start_ms = s->t.started_ms;
    return 1;
}

int whoami_gate_judge(struct whoami_server *s, long long since, int no_restart,
                      unsigned long *disk_ticket, char *detail, size_t detlen)
{
    struct whoami_gate *g = s->g;
    struct whoami_memory m = {s->have,
                              s->res.result,
                              s->res.status,
                              s->have_ans ? &s->ans : NULL,
                              s->problem,
                              s->asked_ms,
                              s->answered,
                              s->restart_ms,
                              s->restart_start_ms,
                              s->prior_restart_ms,
                              0,
                              0,
                              0,
                              0,
                              {NULL, 0},
                              0,
                              0,
                              s->traceback[0] ? s->traceback : NULL,
                              s->have_good ? &s->good : NULL,
                              s->good_ms,
                              s->error_head};
    struct whoami_disk disk = {NULL, 0, NULL, ""};
    struct whoami_case c = {&g->cfg, &s->t, &m, NULL, since, whoami_gate_now(g), no_restart};
    struct whoami_disk_want want = {NULL, NULL};
    char err[512];
    for (;;) {
        int d = whoami_decide(&c, &s->st, &want, detail, detlen);
        if (d == WA_LISTENER) {
            m.listener_checked = 1;
            m.listener_moved = listener_moved(s, c.now_ms);
        } else if (d == WA_RESTART) {
            if (ask_restart(s, &c, c.now_ms))
                return WA_RETRY;
            m.restart_failed = 1;
        } else if (d == WA_HOLDERS) {
            if (whoami_holders_get(s, &m.holders) == 0)
                return G_LOOKUP;
            m.holders_checked = 1;
        } else if (d == WA_IGNORED) {
            if (whoami_ignored_get(s, m.ans->checkout, c.disk->fp, m.ans->started_ms,
                                   &m.ignored_all) == 0)
                return G_LOOKUP;
            m.ignored_checked = 1;
        } else if (d == WA_DISK) {
            int r = whoami_tree_get(g->trees, want.root, want.patterns, c.now_ms, disk_ticket,
                                    &disk.fp, &disk.changed_ms, &disk.worktree, err, sizeof err);
            if (r == WT_PENDING)
                return G_DISK;
            disk.err = err;
            c.disk = &disk;
        } else {
            if (d == WHOAMI_PASS)
                s->restart_ms = 0; /* the next staleness may restart it again */
            return d;
        }
    }
}
