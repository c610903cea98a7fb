/* run_died.c - a ready server whose serving process died while another
 * process of its tree holds its listening socket on: nobody accepts there,
 * and connections queue unanswered.
 *
 * uvicorn --reload (0.17): its reloader binds the port and spawns the
 * server process, which listens on that socket; a kill -9 of the server
 * process (an OOM kill, a crash in a C extension) leaves the reloader
 * holding the socket, its child a zombie it never reaps, and restarting
 * nothing until a watched file changes. The port listens, so requests
 * were relayed and waited response_timeout (120 s) for a 504 that called
 * the request stuck, while `ls` said ready and verified (found by a
 * FastAPI user). run_fail.c reads the same shape from the output after an
 * edit; a kill prints nothing, so this reads the process tree.
 *
 * Before the wrapper says its server is ready it takes the processes of its
 * tree that hold the listening socket (cli_tree_descendants: the tree's
 * few fd tables). Every LOOK_MS while ready it reads each one's start
 * time (one small /proc read each; a zombie has none). One gone, and no
 * other process new to the tree (a reloader that restarts its server
 * after an edit starts one at once; Django's and werkzeug's children hold
 * a socket of their own) for SETTLE_MS, the port still listening, the
 * port is asked as failed_when_ready asks it: nobody answering is told to
 * the daemon as a failure ("when": "died"), whose 503 says what died and
 * the restart of the whole tree that fixes it. A port that answers (other
 * workers serve on) is fine: the survivors are taken as the holders. */
#include "run.h"

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host.h"

#define LOOK_MS 500    /* how often the holders are looked at while ready */
#define SETTLE_MS 1000 /* one died, and no new process in the tree since: not a reload */

/* The processes of r's tree that hold its port's listening socket, into
 * h (the tree too, into h->tree). */
static void take(const struct cli_run *r, struct host_diag *d, struct cli_run_holders *h)
{
    unsigned long inode = 0;
    h->n = 0;
    h->ntree = cli_tree_descendants(getpid(), h->tree, CLI_TREE_MAX);
    if (!cli_cmd_listens(r->port, getpid(), d, 1, &inode) || !inode)
        return;
    for (size_t i = 0; i < h->ntree && h->n < CLI_RUN_HOLDERS_MAX; i++)
        if (host_pid_socket_fd(h->tree[i], inode) >= 0) {
            h->pid[h->n] = h->tree[i];
            h->start[h->n++] = host_pid_start(h->tree[i]);
        }
}

void cli_run_died_take(struct cli_run *r, struct host_diag *d)
{
    take(r, d, &r->holders);
    r->holders.ended = 0;
    r->holders.dead_ms = 0;
    r->holders.next_ms = host_mono_ms() + LOOK_MS;
}

/* The first holder of h that no longer runs (gone, or a zombie), -1 none. */
static int first_dead(const struct cli_run_holders *h)
{
    for (size_t i = 0; i < h->n; i++)
        if (host_pid_start(h->pid[i]) != h->start[i])
            return (int)i;
    return -1;
}

/* Whether now holds a process that was not in then (by pid and start). */
static int has_new(const struct cli_run_holders *then, const struct cli_run_holders *now)
{
    for (size_t i = 0; i < now->n; i++) {
        size_t j = 0;
        while (j < then->n && (then->pid[j] != now->pid[i] || then->start[j] != now->start[i]))
            j++;
        if (j == then->n)
            return 1;
    }
    return 0;
}

/* Whether tree now has a pid that the tree of then had not. */
static int tree_grew(const struct cli_run_holders *then, const struct cli_run_holders *now)
{
    for (size_t i = 0; i < now->ntree; i++) {
        size_t j = 0;
        while (j < then->ntree && then->tree[j] != now->tree[i])
            j++;
        if (j == then->ntree)
            return 1;
    }
    return 0;
}

/* Say and tell that dead (pid, its command as taken) died, how (a
 * zombie's wait status, read before its parent reaps it), and that
 * holder lives on with the port. */
static void tell(struct cli_run *r, pid_t dead, const char *how, pid_t holder)
{
    char cmd[160], line[PATH_MAX + 1024];
    host_pid_cmdline(holder, cmd, sizeof cmd);
    snprintf(line, sizeof line,
             "wtproxy: %s's server process (pid %d) %s, while its parent (pid %d: %s) lives on "
             "holding port %d, where nobody answers: restart it, its reloader and all: wtproxy "
             "restart --front %d (its reloader starts a new server only after a change to a file "
             "it watches); meanwhile requests through wtproxy get a 503 saying so",
             cli_run_folder(r->worktree), (int)dead, how, (int)holder, cmd, r->port, r->front);
    cli_run_tell_said(r, line, "its reloader", REG_FAILED_DIED);
    cli_run_fail_hold(r);
}

/* How pid died, from its wait status while a zombie ("was killed by
 * signal 9 (SIGKILL)"), into out. */
static void how_died(pid_t pid, char *out, size_t len)
{
    int st = host_zombie_status(pid);
    if (st < 0)
        snprintf(out, len, "ended");
    else if (WIFSIGNALED(st))
        host_exit_words(-1, WTERMSIG(st), "", NULL, out, len);
    else
        host_exit_words(WEXITSTATUS(st), 0, "", NULL, out, len);
}

pid_t cli_run_died_ended(const struct cli_run *r)
{
    int dead = first_dead(&r->holders);
    return dead >= 0 ? r->holders.pid[dead] : r->holders.ended;
}

int cli_run_died_poll(struct cli_run *r, struct host_diag *d)
{
    struct cli_run_holders *h = &r->holders, now = {0};
    long long ms = host_mono_ms();
    if (ms < h->next_ms)
        return 0;
    h->next_ms = ms + LOOK_MS;
    int dead = first_dead(h);
    if (dead < 0) {
        if (h->n == 0) /* taken while none was seen: look again */
            cli_run_died_take(r, d);
        return 0;
    }
    take(r, d, &now);
    if (has_new(h, &now) || !cli_port_listened(r->port)) {
        /* a new server holds it (a reload done), or nothing listens: the
         * exit or the output says the rest, run_fail.c with the pid */
        pid_t ended = now.n ? 0 : h->pid[dead];
        if (now.n)
            cli_run_fail_serving(&r->log.fail);
        *h = now; /* dead_ms 0 */
        h->ended = ended;
        h->next_ms = ms + LOOK_MS;
        return 0;
    }
    if (!h->dead_ms || tree_grew(h, &now)) { /* a new server may be starting: wait for it */
        h->ntree = now.ntree;
        memcpy(h->tree, now.tree, now.ntree * sizeof now.tree[0]);
        h->dead_ms = ms;
        return 0;
    }
    if (ms - h->dead_ms < SETTLE_MS)
        return 0;
    char how[256];
    how_died(h->pid[dead], how, sizeof how);
    if (now.n == 0 || cli_port_answers(r->port)) { /* others serve on */
        *h = now;                                  /* dead_ms 0 */
        h->next_ms = host_mono_ms() + LOOK_MS;
        return 0;
    }
    tell(r, h->pid[dead], how, now.pid[0]);
    h->n = 0;
    return 1;
}
