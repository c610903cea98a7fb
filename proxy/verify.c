/* verify.c - see verify.h. Why the daemon verifies a server nobody sent
 * a request to: after a restart, `wtproxy ls` and the dashboard showed
 * the old process's verdict ("stale", naming the edit the restart was
 * for) until the next request asked the new one, and an agent reading it
 * restarted again; a server added with `wtproxy register` showed "-"
 * until its first request, so one serving another checkout looked fine
 * until a test hit it. Now a restart makes the verdict "unchecked" at
 * once, and a server ready (registered so, its wrapper's ready, or so in
 * the state file a daemon starts with) makes the gate ask its /__whoami
 * (one exchange on the loop, the fingerprint on its worker) as for a
 * request, refusing nothing: ls soon says the true verdict. After an edit
 * the gate itself asks the servers whose code changed on disk again
 * (whoami/recheck.c); the same watch copies what it finds. */
#include "verify.h"

#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "ondemand.h"
#include "ondemand_cache.h"

static void status_changed(void *arg)
{
    proxy_backend_show(arg);
}

struct whoami_server *proxy_backend_gate(struct proxy_server *s, struct reg_backend *b)
{
    if (!b->gate && s->gate && b->worktree[0] && (b->gate = whoami_server_new(s->gate))) {
        b->gate_release = whoami_server_release;
        whoami_server_watch(b->gate, status_changed, b);
    }
    return b->gate;
}

/* Whether b's worktree's .wtproxy declares a server on b's front. */
static int declared(struct proxy_server *s, const struct reg_backend *b)
{
    if (b->service[0])
        return 0;
    /* The daemon started it from that file: known without a lookup, and
     * so on the first refusal of a server verified until then. */
    if (b->daemon_started)
        return 1;
    /* Only a refusal's fix reads it: a verified server's requests keep
     * their one string compare (the next check of a refused one has it). */
    const char *was = b->gate ? whoami_server_status(b->gate)->state : "";
    if (strcmp(was, "verified") == 0 || strcmp(was, "trusted") == 0)
        return 0;
    const struct ondemand_cached *e =
        s->ondemand ? ondemand_cached(s->ondemand, b->worktree) : NULL;
    return e && e->rc == 0 && wtfile_by_front(&e->f, b->front) != NULL;
}

/* Another worktree's live registration of b's port, NULL none: b was
 * registered with that server's port by mistake (`wtproxy register
 * --port` of a port another worktree's tests use). Looked for as
 * declared() is, for a refusal's fix only. */
static const struct reg_backend *port_owner(struct proxy_server *s, const struct reg_backend *b)
{
    const char *was = b->gate ? whoami_server_status(b->gate)->state : "";
    struct reg_table *t = s->reg ? reg_server_table(s->reg) : NULL;
    if (!t || strcmp(was, "verified") == 0 || strcmp(was, "trusted") == 0)
        return NULL;
    for (size_t i = 0; i < reg_table_count(t); i++) {
        const struct reg_backend *o = reg_table_at(t, i);
        if (o != b && o->port == b->port && o->state != REG_DEAD &&
            strcmp(o->worktree, b->worktree) != 0)
            return o;
    }
    return NULL;
}

struct whoami_target proxy_backend_target(struct proxy_server *s, const struct reg_backend *b)
{
    const struct reg_backend *owner = port_owner(s, b);
    return (struct whoami_target){
        (const struct sockaddr *)&b->addr,
        b->addrlen,
        b->name,
        b->port,
        b->worktree,
        b->pid,
        b->pid_start,
        b->restart_on_stale,
        b->command,
        b->started_ms,
        b->registered_ms,
        b->front,
        b->log[0] != '\0', /* only `wtproxy run` registers a log */
        b->service,
        b->shell_command,
        declared(s, b),
        owner ? owner->front : 0,
        owner ? owner->pid : 0,
    };
}

void proxy_backend_show(struct reg_backend *b)
{
    const struct whoami_status *st = whoami_server_status(b->gate);
    struct reg_whoami *w = &b->whoami;
    if (st->seq == w->seq)
        return;
    snprintf(w->state, sizeof w->state, "%s", st->state);
    snprintf(w->detail, sizeof w->detail, "%s", st->detail);
    snprintf(w->checkout, sizeof w->checkout, "%s", st->checkout);
    snprintf(w->hash, sizeof w->hash, "%s", st->hash);
    snprintf(w->disk_hash, sizeof w->disk_hash, "%s", st->disk_hash);
    w->checked_ms = st->checked_ms;
    w->refused = st->refused;
    w->silent = st->silent;
    w->seq = st->seq;
}

/* reg_server_on_state: a restart drops the old process's verdict; a
 * failed start, or a server gone, refuses the requests waiting for it (a
 * restart whose new process exited left them asking its dead port for
 * start_timeout, then a 502 naming that port); a server ready (new, or
 * back from a restart) is asked at once. */
static void on_state(void *arg, struct reg_backend *b)
{
    struct proxy_server *s = arg;
    if (b->state == REG_DEAD) {
        conn_backend_failed(s, b);
        return;
    }
    if (b->state == REG_STARTING) {
        if (b->gate) {
            char failed[160];
            snprintf(failed, sizeof failed,
                     "its server failed and does not listen: its last lines say why (wtproxy "
                     "logs --front %d); wtproxy asks its /__whoami once it is ready",
                     b->front);
            whoami_server_restart_why(b->gate, b->restart_why, sizeof b->restart_why);
            if (b->restart_why[0])
                proxy_log(
                    "restarting %s's server on front %d (it runs with --restart-on-stale): %s",
                    b->worktree, b->front, b->restart_why);
            whoami_server_restarted(b->gate, b->start_failed[0]
                                                 ? failed
                                                 : "its server is restarting: what the gate found "
                                                   "was the old process's; wtproxy asks the new "
                                                   "one's /__whoami once it is ready");
            proxy_backend_show(b);
        }
        if (b->start_failed[0]) /* it will not listen until a file changes */
            conn_backend_failed(s, b);
        return;
    }
    if (b->state != REG_READY || !proxy_backend_gate(s, b))
        return;
    struct whoami_target t = proxy_backend_target(s, b);
    whoami_gate_probe(b->gate, &t);
    proxy_backend_show(b);
}

void proxy_verify_install(struct proxy_server *s)
{
    reg_server_set_on_state(s->reg, on_state, s);
    struct reg_table *t = reg_server_table(s->reg);
    for (size_t i = 0; i < reg_table_count(t); i++) /* a starting one: at its ready */
        on_state(s, reg_table_at(t, i));
}
