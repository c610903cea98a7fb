/* doctor_checks.c - `wtproxy doctor`'s checks of the daemon and of this
 * worktree's server: the daemon owns the front port (else who does, in
 * the daemon's own words for a taken port), this folder is a worktree,
 * it has a .wtproxy or a registered server, and that server answers
 * /__whoami with this checkout and the fingerprint of the code on disk
 * now (the gate's contract, asked with the gate's own fetch and parser). */
#include <event2/event.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor.h"
#include "fetch.h"
#include "host.h"
#include "port_stranger.h"
#include "port_taken.h"
#include "reg_pg.h"
#include "registry.h"
#include "whoami.h"

/* Stop a process and wait until it is gone: a daemon drains its
 * connections for up to shutdown_timeout and holds its ports and control
 * socket meanwhile, so a `wtproxy serve` pasted right after `kill` alone
 * finds them taken. */
#define KILL_WAIT "kill %ld && tail --pid=%ld -f /dev/null; "

static int has_port(const int *ports, int n, int port)
{
    for (int i = 0; i < n; i++)
        if (ports[i] == port)
            return 1;
    return 0;
}

/* The ports the daemon must own for this worktree: the front checked and
 * every front its .wtproxy declares (an API's too, which the front end's
 * proxy calls: on a port the daemon does not own, that call reaches
 * whatever else listens there). Each once; returns how many. */
static int wanted_ports(const struct doc_ctx *c, int *ports)
{
    int n = 0;
    ports[n++] = c->front;
    for (int i = 0; i < c->nfronts; i++)
        if (!has_port(ports, n, c->fronts[i]))
            ports[n++] = c->fronts[i];
    return n;
}

/* "port 3001 (service api's front in the .wtproxy)", "port 3000
 * (playwright.config.ts baseURL)" for the front checked: where it came
 * from, since a port the tests do not use is no answer; or "port 3001". */
static void port_name(const struct doc_ctx *c, int port, char *out, size_t outlen)
{
    for (int i = 0; i < c->nfronts; i++)
        if (c->fronts[i] == port && c->front_svc[i][0]) {
            snprintf(out, outlen, "port %d (service %s's front in the .wtproxy)", port,
                     c->front_svc[i]);
            return;
        }
    if (port == c->front && c->front_from[0])
        snprintf(out, outlen, "port %d (%s)", port, c->front_from);
    else
        snprintf(out, outlen, "port %d", port);
}

/* For each port in ports another process listens on: "kill PID && tail
 * ...; " into kills (each holder once, every process sharing its socket) and the daemon's own
 * sentence for a taken port into said, whose other port is none of serving (ns ports: the
 * fronts this worktree needs). Returns -1 when a holder's pid is unknown (another user's:
 * unseen_holder says whose), with its port in *unknown; else how many
 * holders. */
static int port_holders(const int *ports, int n, const int *serving, int ns, char *kills,
                        size_t klen, char *said, size_t slen, int *unknown)
{
    long pids[64];
    int np = 0, found = 0;
    size_t ku = 0, su = 0;
    kills[0] = said[0] = '\0';
    for (int k = 0; k < n; k++) {
        struct host_port_owner o;
        if (!host_port_owner_find(ports[k], &o))
            continue;
        if (o.pid <= 0) {
            *unknown = ports[k];
            return -1;
        }
        char taken[1024];
        proxy_port_taken("127.0.0.1", ports[k], serving, ns, taken, sizeof taken);
        su += (size_t)snprintf(said + su, su < slen ? slen - su : 0, "%s%s", found ? "; " : "",
                               taken);
        found++;
        int seen = 0;
        for (int j = 0; j < np; j++)
            seen |= pids[j] == (long)o.pid;
        if (!seen && np < 64) {
            char kill[HOST_PORT_HOLDERS_MAX * 24 + 64];
            pids[np++] = (long)o.pid;
            proxy_port_kill(&o, 1, kill, sizeof kill); /* each holder: PHP's workers too */
            if (ku + strlen(kill) + 3 <= klen) /* whole or not at all: a cut pid is another */
                ku += (size_t)snprintf(kills + ku, klen - ku, "%s; ", kill);
        }
    }
    return found;
}

/* The problem and the fix for a port whose holder this user cannot see
 * (port_holders' unknown). Another user's socket is named with its user
 * and, when it answers as one, as their wtproxy daemon, which only they
 * can stop: the fix is their stop, or a port of this user's own, which
 * the tests must then name too. stop is what frees this user's daemon
 * before that serve ("" when none runs). With ss alone, as before, for a
 * socket of this user's that /proc does not show (another PID namespace). */
static void unseen_holder(const struct doc_ctx *c, int port, const int *ports, int n,
                          const char *stop, char *said, size_t slen, char *fix, size_t flen)
{
    struct host_port_owner o;
    struct proxy_port_stranger s;
    char who[160], serve[512], cmd[700], tests[200];
    int mine[WTFILE_MAX_SERVICES + 1], other = proxy_port_other(port, ports, n);
    if (!host_port_owner_find(port, &o) || !proxy_port_stranger("127.0.0.1", port, &o, &s)) {
        snprintf(said, slen, "port %d is held by a process this user cannot see", port);
        snprintf(fix, flen, "ss -ltnp 'sport = :%d'", port);
        return;
    }
    proxy_port_stranger_who(&s, who, sizeof who);
    snprintf(said, slen, "port %d is held by %s%s", port, who,
             s.daemon_pid ? ", which serves that user's worktrees only" : "");
    for (int k = 0; k < n; k++)
        mine[k] = ports[k] == port ? other : ports[k];
    cli_serve_cmd(c->ping, mine, n, serve, sizeof serve);
    snprintf(cmd, sizeof cmd, "%s%s", stop, serve);
    if (port == c->front && c->front_in_tests)
        snprintf(tests, sizeof tests, "change %s to port %d", c->front_from, other);
    else
        snprintf(tests, sizeof tests,
                 "point your app's tests at port %d (their baseURL or port setting)", other);
    proxy_port_stranger_fix(&s, port, cmd, tests, fix, flen);
}

/* A daemon started inside a pid namespace below this one (autostarted by
 * a `wtproxy run` in an agent's sandbox, bwrap --unshare-pid): it cannot
 * see the processes outside it, so it places no caller from here (503
 * "could not be placed") and drops the servers it cannot see, while it
 * answers every op. Into r when it is one; 0 when not. */
static int daemon_sandboxed(struct doc_ctx *c, struct doc_result *r, long pid)
{
    json_t *there = json_object_get(c->ping, "pid_there");
    if (!there || pid <= 1 || !host_pid_namespaced((pid_t)pid))
        return 0;
    char serve[700];
    cli_serve_cmd(c->ping, NULL, 0, serve, sizeof serve);
    doc_set(r, DOC_PROBLEM,
            "the daemon (pid %ld here, %lld in its own pid namespace) runs inside a pid "
            "namespace of its own (started from a sandbox: bwrap --unshare-pid, unshare "
            "--pid): it cannot see the processes outside it, so it places no caller from "
            "here (503 \"could not be placed\") and drops the servers it cannot see",
            pid, (long long)json_integer_value(there));
    snprintf(r->fix, sizeof r->fix,
             "outside the sandbox: kill %ld && tail --pid=%ld -f /dev/null; %s", pid, pid, serve);
    return 1;
}

/* The daemon answers: does it own every port this worktree needs? */
static void daemon_ports(struct doc_ctx *c, struct doc_result *r, const int *ports, int n)
{
    long pid = (long)json_integer_value(json_object_get(c->ping, "pid"));
    if (daemon_sandboxed(c, r, pid))
        return;
    char *listen = json_dumps(json_object_get(c->ping, "listen"), JSON_COMPACT);
    int missing[64], nm = 0;
    char names[1024] = "", name[128];
    for (int k = 0; k < n; k++)
        if (cli_listens_on(c->ping, ports[k]) != 1) {
            missing[nm++] = ports[k];
            port_name(c, ports[k], name, sizeof name);
            size_t u = strlen(names);
            snprintf(names + u, sizeof names - u, "%s%s", u ? ", nor on " : "", name);
        }
    if (!nm) {
        port_name(c, c->front, name, sizeof name);
        doc_set(r, DOC_OK, "wtproxy daemon pid %ld listens on %s, %s among them", pid,
                listen ? listen : "?", name);
        free(listen);
        return;
    }
    char kills[384], said[1200], serve[512], stop[300], prog[256];
    int unknown = 0, held = port_holders(missing, nm, ports, n, kills, sizeof kills, said,
                                         sizeof said, &unknown);
    if (held < 0) { /* its fix yields to the .wtproxy's below */
        host_self_program(prog, sizeof prog, NULL, 0);
        snprintf(stop, sizeof stop, "%.256s stop --daemon && ", prog);
        unseen_holder(c, unknown, ports, n, stop, said, sizeof said, r->fix, sizeof r->fix);
    }
    doc_set(r, DOC_PROBLEM, "the daemon (pid %ld) listens on %s, not on %s: requests to %s%s%s",
            pid, listen ? listen : "?", names,
            nm == 1 ? "that port do not reach it" : "those ports do not reach it",
            held != 0 ? ", and " : "", held != 0 ? said : "");
    free(listen);
    cli_serve_cmd(c->ping, ports, n, serve, sizeof serve);
    if (c->file_err[0]) /* its fronts unreadable: the ports are a guess, not a reason */
        snprintf(r->fix, sizeof r->fix,
                 "correct the .wtproxy first (see the server check), then run "
                 "wtproxy doctor again");
    else if (held >= 0)
        snprintf(r->fix, sizeof r->fix, KILL_WAIT "%s%s", pid, pid, held > 0 ? kills : "", serve);
}

/* The daemon's store in words, from its ping: "the embedded store", or
 * "the PostgreSQL registry URI" (masked). */
static void daemon_store(json_t *ping, char *out, size_t len)
{
    const char *store = json_string_value(json_object_get(ping, "store"));
    const char *reg = json_string_value(json_object_get(ping, "registry"));
    if (store && strcmp(store, "postgresql") == 0)
        snprintf(out, len, "the PostgreSQL registry %s", reg ? reg : "?");
    else if (reg)
        snprintf(out, len, "the embedded store (its registry %s did not answer at its start)", reg);
    else
        snprintf(out, len, "the embedded store");
}

/* Whether the PostgreSQL server uri names answers now (a refusal to log
 * in answers too), within DOC_PG_TIMEOUT_S. */
static int pg_answers(const char *uri)
{
    const char *keys[] = {"dbname", "connect_timeout", NULL};
    const char *vals[] = {uri, DOC_PG_TIMEOUT_S, NULL};
    PGPing p = PQpingParams(keys, vals, 1);
    return p == PQPING_OK || p == PQPING_REJECT;
}

/* The fix that moves the daemon onto the registry at uri (serve starts
 * it there): stop and serve. While that registry does not answer (the daemon that
 * fell back to the embedded store under WTPROXY_REGISTRY_OPTIONAL=1 is
 * the only one that routes), pasted, it stopped the working daemon and
 * the new one refused to start: PostgreSQL first, and the restart only
 * once pg_isready says it answers. */
static void move_fix(const char *uri, const char *serve, char *out, size_t len)
{
    char prog[256], host[256], port[32];
    size_t used = 0;
    host_self_program(prog, sizeof prog, NULL, 0);
    if (!pg_answers(uri)) {
        reg_pg_where(uri, host, sizeof host, port, sizeof port);
        used = (size_t)snprintf(out, len,
                                "the registry at %s:%s does not answer yet: start PostgreSQL "
                                "there first, then: pg_isready -h %s -p %s && ",
                                host, port, host, port);
    }
    if (used < len)
        snprintf(out + used, len - used, "%s stop --daemon && %s", prog, serve);
}

/* The store this shell's commands use (cli/lease_client.c: WTPROXY_REGISTRY,
 * else WTPROXY_CONFIG's `registry =`) against the daemon's. A daemon
 * autostarted from a shell without WTPROXY_CONFIG runs on the embedded
 * store while claims here go to PostgreSQL, and doctor said ok. With no
 * registry here the CLI's leases are the daemon's, whatever its store.
 * Returns 1 (r set) when they differ. */
static int store_differs(struct doc_ctx *c, struct doc_result *r, const int *ports, int n)
{
    char uri[REG_PG_URI_MAX], err[512], mine[REG_PG_URI_MAX + 64], theirs[REG_PG_URI_MAX + 128];
    if (reg_pg_configured(uri, sizeof uri, err, sizeof err) <= 0)
        return 0;
    const char *store = json_string_value(json_object_get(c->ping, "store"));
    const char *reg = json_string_value(json_object_get(c->ping, "registry"));
    if (store && strcmp(store, "postgresql") == 0 && reg && reg_pg_same_server(uri, reg))
        return 0;
    const char *env = getenv("WTPROXY_REGISTRY"), *conf = getenv("WTPROXY_CONFIG");
    char from[PATH_MAX + 64], serve[700];
    if (env && env[0])
        snprintf(from, sizeof from, "WTPROXY_REGISTRY");
    else
        snprintf(from, sizeof from, "`registry =` in %s (WTPROXY_CONFIG)", conf);
    reg_pg_mask(uri, mine, sizeof mine);
    daemon_store(c->ping, theirs, sizeof theirs);
    doc_set(r, DOC_PROBLEM,
            "the daemon (pid %lld) runs on %s, but commands in this shell use the PostgreSQL "
            "registry %s (%s): leases claimed here are not the ones the daemon and its dashboard "
            "see, the servers it registers are not in this registry, so other machines do not "
            "see this one's servers",
            json_integer_value(json_object_get(c->ping, "pid")), theirs, mine, from);
    cli_serve_cmd(c->ping, ports, n, serve, sizeof serve);
    move_fix(uri, serve, r->fix, sizeof r->fix);
    return 1;
}

/* The daemon was given no registry while the one before it ran on a
 * PostgreSQL registry (ping's registry_before, from the state file): a
 * start pasted in a shell without WTPROXY_REGISTRY runs on the embedded
 * store, and two machines held one emulator while doctor said ok. Its fix
 * restarts it on that registry (cli_daemon_flags repeats it). Returns 1
 * (r set) when so. */
static int registry_lost(struct doc_ctx *c, struct doc_result *r, const int *ports, int n)
{
    const char *was = json_string_value(json_object_get(c->ping, "registry_before"));
    char serve[700], uri[REG_PG_URI_MAX], err[512];
    if (!was || reg_pg_configured(uri, sizeof uri, err, sizeof err) != 0)
        return 0; /* this shell's registry: store_differs says how the two differ */
    doc_set(r, DOC_PROBLEM,
            "the daemon (pid %lld) runs on the embedded store, given no registry, while the "
            "daemon before it ran on the PostgreSQL registry %s (its state file says): claims "
            "made here do not hold against other machines, which may hold the same resources "
            "now, and they do not see this machine's servers",
            json_integer_value(json_object_get(c->ping, "pid")), was);
    cli_serve_cmd(c->ping, ports, n, serve, sizeof serve);
    move_fix(was, serve, r->fix, sizeof r->fix);
    return 1;
}

/* The daemon is another build than this doctor (an install over it, a
 * rebuild): it behaves as that build, whatever this one's checks say, until
 * it is restarted. Returns 1 (r set) when it is. */
static int build_differs(struct doc_ctx *c, struct doc_result *r, const int *ports, int n)
{
    char said[PATH_MAX + 256], prog[256], serve[700];
    if (!cli_daemon_other_build(c->ping, said, sizeof said))
        return 0;
    doc_set(r, DOC_PROBLEM, "%s", said);
    host_self_program(prog, sizeof prog, NULL, 0);
    cli_serve_cmd(c->ping, ports, n, serve, sizeof serve);
    snprintf(r->fix, sizeof r->fix, "%.256s stop --daemon && %.700s", prog, serve);
    return 1;
}

/* Outside a worktree, without --front: no .wtproxy and no tests name a
 * port, so the front checked is only the default. Demanding it proposed
 * killing the daemon every worktree uses and serving 8000 besides, for a
 * folder with no app: the worktree check alone says what is wrong here. */
static void daemon_no_front(struct doc_ctx *c, struct doc_result *r)
{
    if (!c->ping) {
        doc_set(r, DOC_SKIP, "not in a worktree: no front port here to check a daemon for");
        return;
    }
    char *listen = json_dumps(json_object_get(c->ping, "listen"), JSON_COMPACT);
    doc_set(r, DOC_OK,
            "wtproxy daemon pid %lld listens on %s; not in a worktree, so no front port here to "
            "check it for",
            json_integer_value(json_object_get(c->ping, "pid")), listen ? listen : "?");
    free(listen);
}

/* No daemon answers here, and a port is held by this user's daemon that
 * listens on a control socket this process does not look at or cannot
 * see (a sandbox's own /tmp): said with the way to reach it. Its kill,
 * pasted in the sandbox, stopped the daemon every other shell used, and
 * the one started there could not start. Returns 1 (r set) when so. */
static int daemon_hidden(struct doc_result *r, const int *ports, int n)
{
    char where[PATH_MAX];
    const char *from;
    reg_control_where(where, sizeof where, &from);
    if (!cli_daemon_hidden(where, from, ports, n, r->detail, sizeof r->detail, r->fix,
                           sizeof r->fix))
        return 0;
    r->status = DOC_PROBLEM;
    return 1;
}

void doc_daemon(struct doc_ctx *c, struct doc_result *r)
{
    int ports[WTFILE_MAX_SERVICES + 1];
    int n = wanted_ports(c, ports);
    /* outside a worktree no port is wanted: it starts again on its own */
    if (c->ping && build_differs(c, r, ports, c->have_wt || c->front_given ? n : 0))
        return;
    if (c->ping && registry_lost(c, r, ports, c->have_wt || c->front_given ? n : 0))
        return;
    if (!c->have_wt && !c->front_given) {
        daemon_no_front(c, r);
        return;
    }
    if (c->ping && store_differs(c, r, ports, n))
        return;
    if (c->ping) {
        daemon_ports(c, r, ports, n);
        return;
    }
    if (daemon_hidden(r, ports, n))
        return;
    char kills[384], said[1200], serve[512], name[128];
    int unknown = 0,
        held = port_holders(ports, n, ports, n, kills, sizeof kills, said, sizeof said, &unknown);
    cli_serve_cmd(NULL, ports, n, serve, sizeof serve);
    port_name(c, c->front, name, sizeof name);
    if (held < 0) {
        unseen_holder(c, unknown, ports, n, "", said, sizeof said, r->fix, sizeof r->fix);
        doc_set(r, DOC_PROBLEM, "no wtproxy daemon answers for %s (%s), and %s", name,
                c->daemon_err, said);
    } else if (held > 0) {
        doc_set(r, DOC_PROBLEM, "no wtproxy daemon answers for %s (%s), and %s", name,
                c->daemon_err, said);
        snprintf(r->fix, sizeof r->fix, "%s%s", kills, serve);
    } else {
        doc_set(r, DOC_PROBLEM, "no wtproxy daemon answers for %s: %s", name, c->daemon_err);
        snprintf(r->fix, sizeof r->fix, "%s", serve);
    }
}

void doc_worktree(struct doc_ctx *c, struct doc_result *r)
{
    if (!c->have_wt) {
        doc_set(r, DOC_PROBLEM, "%s", c->wt_err);
        snprintf(r->fix, sizeof r->fix,
                 "cd into your app's git worktree and run wtproxy doctor "
                 "there");
        return;
    }
    doc_set(r, DOC_OK, "%s (branch %s)%s%s", c->wt.root, c->wt.branch[0] ? c->wt.branch : "?",
            c->wt.note[0] ? "; " : "", c->wt.note);
}

/* " :5173 (web), :3001 (api)": the fronts the .wtproxy declares. */
static void declared_fronts(const struct doc_ctx *c, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < c->nfronts && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s :%d%s%s%s", i ? "," : "", c->fronts[i],
                                 c->front_svc[i][0] ? " (" : "", c->front_svc[i],
                                 c->front_svc[i][0] ? ")" : "");
}

/* start with each {port} made port, as its wrapper ran it, into out; -1
 * when it does not fit. */
static int with_port(const char *start, int port, char *out, size_t len)
{
    size_t n = 0;
    while (*start) {
        int is_port = strncmp(start, "{port}", 6) == 0;
        int w = is_port ? snprintf(out + n, len - n, "%d", port)
                        : snprintf(out + n, len - n, "%c", *start);
        if (w < 0 || (size_t)w >= len - n)
            return -1;
        n += (size_t)w;
        start += is_port ? 6 : 1;
    }
    if (n == 0 && len)
        out[0] = '\0';
    return 0;
}

/* The entry the daemon started from the .wtproxy ran its start as it
 * was then; one edited since (a worker added to it, a flag) changed
 * nothing of the server that runs: ls and doctor said ready and verified,
 * and its tests ran on a server the file no longer describes (found by a
 * user whose new start line added a job worker that never ran). 1 with
 * r set when the entry runs another start than the file's. */
static int older_start(struct doc_ctx *c, struct doc_result *r)
{
    const char *cmd = json_string_value(json_object_get(c->entry, "command"));
    static const char sh[] = "/bin/sh -c ";
    char now[sizeof c->start + 256];
    if (!json_is_true(json_object_get(c->entry, "daemon_started")) || !c->has_file ||
        !c->start[0] || !cmd || strncmp(cmd, sh, sizeof sh - 1) != 0 ||
        with_port(c->start, (int)json_integer_value(json_object_get(c->entry, "port")), now,
                  sizeof now) < 0 ||
        strcmp(cmd + sizeof sh - 1, now) == 0)
        return 0;
    doc_set(r, DOC_PROBLEM,
            "registered on front %d: pid %lld, %s, started from an older start line of the "
            ".wtproxy (`%.400s`); the file now says `%.400s`, which no server here runs",
            c->front, json_integer_value(json_object_get(c->entry, "pid")),
            json_string_value(json_object_get(c->entry, "state")), cmd + sizeof sh - 1, c->start);
    snprintf(r->fix, sizeof r->fix, "wtproxy restart --front %d", c->front);
    return 1;
}

static void server_state(struct doc_ctx *c, struct doc_result *r)
{
    if (!c->have_wt) {
        doc_set(r, DOC_SKIP, "not in a worktree");
        return;
    }
    if (c->entry && older_start(c, r))
        return;
    if (c->entry) {
        doc_set(r, DOC_OK, "registered on front %d: %s, pid %lld, %s", c->front,
                json_string_value(json_object_get(c->entry, "backend")),
                json_integer_value(json_object_get(c->entry, "pid")),
                json_string_value(json_object_get(c->entry, "state")));
        return;
    }
    if (c->has_file && c->file_err[0]) {
        doc_set(r, DOC_PROBLEM, "the daemon refuses the .wtproxy, so it starts no server: %s",
                c->file_err);
        snprintf(r->fix, sizeof r->fix,
                 "correct that line of the .wtproxy, then run wtproxy doctor again");
        return;
    }
    if (c->has_file && !c->start[0] && c->nfronts) {
        char list[256];
        declared_fronts(c, list, sizeof list);
        doc_set(r, DOC_PROBLEM,
                "no server runs now, and the .wtproxy declares none on front %d, only on%s: "
                "requests to :%d from here get 503 no-backend",
                c->front, list, c->front);
        snprintf(r->fix, sizeof r->fix,
                 "give the server meant for :%d front = %d in .wtproxy (or check another port: "
                 "wtproxy doctor --front PORT)",
                 c->front, c->front);
        return;
    }
    if (c->has_file) {
        doc_set(r, DOC_OK,
                "no server runs now; the .wtproxy makes the daemon start one on this "
                "worktree's first request");
        return;
    }
    if (c->main_has_file) { /* the daemon's 503 says the same (ondemand_reader.c) */
        char main[PATH_MAX];
        cli_main_checkout(&c->wt, main, sizeof main);
        doc_set(r, DOC_PROBLEM,
                "no server runs now, and this worktree (branch %s) has no .wtproxy: the daemon "
                "starts a worktree's servers only from its own, and %s/.wtproxy is in the main "
                "checkout only. Requests from here get 503 no-backend",
                c->wt.branch[0] ? c->wt.branch : "?", main);
        snprintf(r->fix, sizeof r->fix,
                 "cp %.480s/.wtproxy %.480s/ (or merge the branch that added it)", main,
                 c->wt.root);
        return;
    }
    doc_set(r, DOC_PROBLEM,
            "no .wtproxy and no registered server%s: requests from here get "
            "503 no-backend",
            c->ping ? "" : " known (no daemon to ask)");
    doc_init_fix(c, r->fix, sizeof r->fix);
}

/* The server on c->front; without --front, when the .wtproxy declares
 * several, also which others there are and the command that checks each:
 * an app's API is a server of its own, and doctor judges one. */
void doc_server(struct doc_ctx *c, struct doc_result *r)
{
    server_state(c, r);
    if (c->front_given || c->nfronts < 2)
        return;
    size_t used = strlen(r->detail);
    int others = 0;
    used += (size_t)snprintf(
        r->detail + used, sizeof r->detail - used,
        " (front %d is the .wtproxy's first service's; to check its others:", c->front);
    for (int i = 0; i < c->nfronts && used < sizeof r->detail; i++)
        if (c->fronts[i] != c->front)
            used += (size_t)snprintf(r->detail + used, sizeof r->detail - used,
                                     "%s %s on :%d: wtproxy doctor --front %d", others++ ? ";" : "",
                                     c->front_svc[i], c->fronts[i], c->fronts[i]);
    if (used < sizeof r->detail)
        snprintf(r->detail + used, sizeof r->detail - used, ")");
}

struct fetched {
    int done, status;
    enum whoami_fetch_result result;
    char *body;
    size_t len;
    char error[256];
};

static void on_fetch(void *arg, const struct whoami_fetch_reply *rep)
{
    struct fetched *f = arg;
    f->done = 1;
    f->result = rep->result;
    f->status = rep->status;
    snprintf(f->error, sizeof f->error, "%s", rep->error ? rep->error : "");
    if (rep->result == WF_OK && (f->body = malloc(rep->len + 1))) {
        if (rep->len) /* an empty body may come as NULL (Vite's bare 404) */
            memcpy(f->body, rep->body, rep->len);
        f->len = rep->len;
    }
}

/* GET /__whoami from backend ("HOST:PORT", [v6] bracketed) on a private
 * event loop, within DOC_WHOAMI_TIMEOUT_MS. 0 with f, -1 with f->error. */
static int fetch_whoami(const char *backend, struct fetched *f)
{
    char host[256];
    const char *colon = strrchr(backend, ':');
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
                             .ai_socktype = SOCK_STREAM},
                    *ai = NULL;
    if (!colon || (size_t)(colon - backend) >= sizeof host)
        goto bad;
    snprintf(host, sizeof host, "%.*s", (int)(colon - backend - (backend[0] == '[') * 2),
             backend + (backend[0] == '['));
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
        goto bad;
    struct event_base *base = event_base_new();
    struct whoami_fetch *wf = base ? whoami_fetch_start(base, ai->ai_addr, ai->ai_addrlen, backend,
                                                        DOC_WHOAMI_TIMEOUT_MS, on_fetch, f)
                                   : NULL;
    freeaddrinfo(ai);
    if (wf)
        event_base_dispatch(base);
    if (base)
        event_base_free(base);
    if (!wf)
        snprintf(f->error, sizeof f->error, "connection refused");
    return f->done && f->result == WF_OK ? 0 : -1;
bad:
    snprintf(f->error, sizeof f->error, "the entry's address %s is not HOST:PORT", backend);
    return -1;
}

/* The command that makes this worktree's registration right again, as
 * the gate's refusals say it (whoami/refusal.c): a `wtproxy run` server
 * (its entry has a log) is restarted, or stopped, through wtproxy; a
 * `register --pid` one ends with its pid; a TTL one (pid 0, where `kill 0`
 * would signal the reader's own process group) is unregistered. */
static void entry_fix(struct doc_ctx *c, int restart, char *out, size_t len)
{
    long pid = (long)json_integer_value(json_object_get(c->entry, "pid"));
    if (json_string_value(json_object_get(c->entry, "log")))
        snprintf(out, len, "wtproxy %s --front %d", restart ? "restart" : "stop", c->front);
    else if (pid > 0)
        snprintf(out, len, "kill %ld (then start it again: wtproxy run --front %d -- CMD {port})",
                 pid, c->front);
    else
        snprintf(out, len,
                 "wtproxy unregister --front %d (then start it: wtproxy run --front %d -- "
                 "CMD {port})",
                 c->front, c->front);
}

/* The fix for a server without /__whoami that no Node check knows: init's
 * addition; where init knows no app, the protocol's, or, when its code has
 * it already (added after the server started: a Sinatra user's config.ru
 * got its `use` back), the restart, where the addition was all doctor
 * said. */
static void not_answering_fix(const struct doc_ctx *c, const char *restart, char *out, size_t len)
{
    char add[640];
    if (doc_init_fix(c, add, sizeof add)) /* init says when there is nothing to add */
        snprintf(out, len, "%s", add);
    else
        snprintf(out, len,
                 "%s; or, if its code answers /__whoami already (added after it started): %s", add,
                 restart);
}

/* Compare a parsed answer with this checkout and its code on disk. */
static void judge(struct doc_ctx *c, const struct whoami_answer *a, struct doc_result *r)
{
    char real[PATH_MAX], err[PATH_MAX + 256];
    struct whoami_fp fp;
    if (!realpath(a->checkout, real) || strcmp(real, c->wt.root) != 0) {
        doc_set(r, DOC_PROBLEM, "the server (pid %ld) serves %s, not this worktree %s",
                (long)a->pid, a->checkout, c->wt.root);
        entry_fix(c, 0, r->fix, sizeof r->fix);
        return;
    }
    if (whoami_fp_compute(c->wt.root, &a->patterns, NULL, &fp, err, sizeof err) < 0) {
        doc_set(r, DOC_PROBLEM, "cannot fingerprint %s: %s", c->wt.root, err);
        snprintf(r->fix, sizeof r->fix, "wtproxy fingerprint --list %.900s", c->wt.root);
        return;
    }
    if (strcmp(fp.hash, a->hash) != 0) {
        doc_set(r, DOC_PROBLEM,
                "stale: the server (pid %ld, started %s) loaded %s, the code on "
                "disk is %s",
                (long)a->pid, a->started_at, a->hash, fp.hash);
        entry_fix(c, 1, r->fix, sizeof r->fix);
    } else {
        doc_set(r, DOC_OK,
                "the server (pid %ld) serves this checkout, current code %s (%zu "
                "files)",
                (long)a->pid, fp.hash, fp.n);
    }
    whoami_fp_free(&fp);
}

/* The entry's server failed and lives on, its wrapper said (a failed
 * start or an edit that broke it): the daemon refuses its requests with
 * its last lines, which doctor says too, with the fix the 503 gives. Its
 * /__whoami is not asked: a gunicorn whose app fails to load answers it
 * with a 500, which read as a missing middleware, fixed by an `init
 * --apply` that had nothing to change. 1 when said. */
static int failed_entry(struct doc_ctx *c, struct doc_result *r)
{
    json_t *f = json_object_get(c->entry, "start_failed");
    const char *lines = json_string_value(json_object_get(f, "lines"));
    const char *reloader = json_string_value(json_object_get(f, "reloader"));
    const char *when = json_string_value(json_object_get(f, "when"));
    if (!lines || !when || (strcmp(when, "start") != 0 && strcmp(when, "edit") != 0))
        return 0; /* another port, a dead server: the server check and why say those */
    doc_set(r, DOC_PROBLEM,
            "the server (pid %lld) %s and waits for a change to its files (%s): requests get "
            "503 with its last lines: %s",
            json_integer_value(json_object_get(c->entry, "pid")),
            strcmp(when, "edit") == 0 ? "failed after an edit" : "failed at start",
            reloader ? reloader : "its autoreloader", lines);
    snprintf(r->fix, sizeof r->fix,
             "fix the error its last lines name and save (%s starts it again); all its "
             "output: wtproxy logs --front %d",
             reloader ? reloader : "its autoreloader", c->front);
    return 1;
}

/* The entry's server answers /__whoami with an error (f) and the daemon
 * says it answered until its files changed: "broken" (whoami/decide.c),
 * or "changed" while it asks again after the change. The change broke it:
 * a hugo server after a save was told "the whoami middleware is missing
 * or broken", whose fix, init, had nothing to add. 1 when said. */
static int broken_entry(struct doc_ctx *c, const char *backend, const struct fetched *f,
                        struct doc_result *r)
{
    const char *state =
        json_string_value(json_object_get(json_object_get(c->entry, "whoami"), "state"));
    char head[512], restart[256];
    if (f->status < 500 || !state ||
        (strcmp(state, "broken") != 0 && strcmp(state, "changed") != 0))
        return 0;
    whoami_error_head(f->body, f->len, head, sizeof head);
    doc_set(r, DOC_PROBLEM,
            "GET http://%s/__whoami answered %d; it answered /__whoami until its files changed: "
            "the change broke it (its whoami middleware is not missing). %s:\n%s",
            backend, f->status, head[0] ? "The first lines of its answer" : "Its answer",
            head[0] ? head : "(an empty body)");
    entry_fix(c, 1, restart, sizeof restart);
    snprintf(r->fix, sizeof r->fix, "fix the error and save, or restart it: %s", restart);
    return 1;
}

void doc_whoami(struct doc_ctx *c, struct doc_result *r)
{
    if (!c->entry) {
        doc_set(r, DOC_SKIP, "no registered server to ask%s", c->ping ? "" : " (no daemon)");
        return;
    }
    if (failed_entry(c, r))
        return;
    const char *state = json_string_value(json_object_get(c->entry, "state"));
    if (!state || strcmp(state, "ready") != 0) {
        doc_set(r, DOC_SKIP,
                "the server is %s, not ready yet: run wtproxy doctor again once it "
                "listens",
                state ? state : "in no known state");
        return;
    }
    const char *backend = json_string_value(json_object_get(c->entry, "backend"));
    struct fetched f = {0};
    struct whoami_answer a;
    char err[512], tail[1024];
    if (fetch_whoami(backend ? backend : "", &f) < 0) {
        doc_set(r, DOC_PROBLEM, "GET http://%s/__whoami: %s", backend, f.error);
        entry_fix(c, 1, r->fix, sizeof r->fix);
    } else if (f.status != 200 && f.len > 22 && !memcmp(f.body, "wtproxy-whoami: off: ", 21)) {
        /* the Node middleware, off (NODE_ENV=production): its line, and the
         * server's start to fix, not the middleware */
        const char *nl = memchr(f.body, '\n', f.len);
        doc_set(r, DOC_PROBLEM,
                "GET http://%s/__whoami answered %d, its middleware saying that it is off: %.*s",
                backend, f.status, (int)((nl ? (size_t)(nl - f.body) : f.len) - 21), f.body + 21);
        snprintf(r->fix, sizeof r->fix,
                 "wtproxy stop --front %d, then start it again from a shell without "
                 "NODE_ENV=production",
                 c->front);
    } else if (f.status >= 500 && whoami_traceback_tail(f.body, f.len, tail, sizeof tail)) {
        /* its app fails to load (gunicorn's fail app): the middleware is not what is missing */
        char restart[256];
        entry_fix(c, 1, restart, sizeof restart);
        doc_set(r, DOC_PROBLEM,
                "GET http://%s/__whoami answered %d with a Python traceback: its app fails to "
                "load; the traceback's last lines:\n%s",
                backend, f.status, tail);
        snprintf(r->fix, sizeof r->fix,
                 "fix the error the traceback names and save (its autoreloader loads the app "
                 "again; a server without one: %s)",
                 restart);
    } else if (broken_entry(c, backend ? backend : "", &f, r)) {
        /* said */
    } else if (f.status != 200 || whoami_answer_parse(f.body, f.len, &a, err, sizeof err) < 0) {
        doc_set(r, DOC_PROBLEM,
                "GET http://%s/__whoami answered %d%s%s: the whoami middleware "
                "is missing or broken",
                backend, f.status, f.status == 200 ? ", " : "", f.status == 200 ? err : "");
        char restart[256];
        entry_fix(c, 1, restart, sizeof restart);
        if (!doc_node_whoami_fix(c, restart, r->fix, sizeof r->fix))
            not_answering_fix(c, restart, r->fix, sizeof r->fix);
    } else {
        judge(c, &a, r);
        whoami_answer_free(&a);
    }
    free(f.body);
}
