/* server.c - `wtproxy serve`: configuration, the loop, signals, shutdown.
 *
 * The rule of the loop: nothing that can take milliseconds runs on it.
 * One loop serves every connection of every worktree, so a stall here is
 * a stall for every agent's test at once. On the loop: parsing, relaying,
 * routing, the gate's decision, the control socket, and kernel reads that
 * take microseconds (one /proc file, one sock_diag lookup, one read of
 * inotify's queue). Off it, each on its own thread with a copy of its
 * input, its result handed back to the loop through a pipe while the
 * connection that needs it is parked and every other one proceeds:
 *
 *   identification  proxy/identify.c       the /proc/PID/fd scan for the
 *                                          process holding a socket
 *   fingerprints    whoami/fp_worker.c     hashing a worktree's files, the
 *                                          first time and after changes
 *   socket holders  whoami/holders.c       the /proc scan for every process
 *                                          holding a refused server's socket,
 *                                          which its kill names
 *   PostgreSQL      registry/reg_pg_worker.c  every libpq call: the mirror,
 *                                          leases, other machines' entries
 *   state file      registry/reg_store_worker.c  its write and fsyncs on a
 *                                          registration change; a second one
 *                                          for leases.json on a claim or release
 *   .wtproxy files  proxy/ondemand_reader.c  a worktree's file, for a
 *                                          connect, a request, the dashboard,
 *                                          the `services` and `start` ops and
 *                                          the dashboard's start button (the
 *                                          worktree's realpath too)
 *
 * Re-adding a tree's inotify watches after the kernel's queue overflowed,
 * and closing those of a tree whose last server is gone (a close waits for
 * an SRCU grace period), are the fingerprint worker's too (whoami/tree.c);
 * placing a caller not seen yet (its /proc files, its worktree's .git) the
 * identification worker's. */
#include "server.h"

#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/un.h>
#include <unistd.h>

#include "client.h"
#include "conn.h"
#include "dash.h"
#include "error_page.h"
#include "host.h"
#include "ondemand.h"
#include "ops.h"
#include "identify.h"
#include "gate.h"
#include "listener.h"
#include "log_flood.h"
#include "route.h"
#include "signals.h"
#include "verify.h"

unsigned long long proxy_now_ms(struct proxy_server *s)
{
    struct timeval tv;
    event_base_gettimeofday_cached(s->base, &tv);
    return (unsigned long long)tv.tv_sec * 1000 + (unsigned long long)tv.tv_usec / 1000;
}

/* Defaults, then the file, then the flags: the same path at start and on
 * SIGHUP. The backend named by the result is resolved here too, so a bad
 * reload changes nothing. */
static int load_config(struct proxy_server *s, struct proxy_config *cfg,
                       struct reg_backend **backend, char *err, size_t errlen)
{
    proxy_config_defaults(cfg);
    int r = proxy_config_from_args(cfg, s->argc, s->argv, err, errlen);
    if (r != 0)
        return r;
    *backend = NULL;
    if (cfg->backend[0] && !(*backend = reg_backend_new(cfg->backend, err, errlen)))
        return -1;
    if (*backend)
        (*backend)->state = REG_READY; /* configured, not started by us: no waiting */
    return 0;
}

static struct whoami_gate_config gate_config(const struct proxy_config *c)
{
    return (struct whoami_gate_config){c->whoami_timeout_ms,   c->stale_grace_ms,
                                       c->reload_grace_ms,     c->start_timeout_ms,
                                       (int)c->trust_registry, (int)c->whoami_inotify};
}

/* The gate takes the config's deadlines at start and on SIGHUP. Turning it
 * on or off applies at the next start: requests in flight hold it. */
static int apply_gate(struct proxy_server *s)
{
    struct whoami_gate_config gc = gate_config(&s->cfg);
    if (s->cfg.whoami && s->gate)
        whoami_gate_configure(s->gate, &gc);
    else if (s->cfg.whoami && !(s->gate = whoami_gate_new(s->base, &gc)))
        return -1;
    return 0;
}

static void reload(struct proxy_server *s, const char *from)
{
    struct proxy_config cfg;
    struct reg_backend *backend;
    char err[512];
    if (load_config(s, &cfg, &backend, err, sizeof err) != 0) {
        proxy_log("reload on %s failed, keeping the running configuration: %s", from, err);
        return;
    }
    if (cfg.nlisten != s->cfg.nlisten || memcmp(cfg.listen, s->cfg.listen, sizeof cfg.listen))
        proxy_log(s->ninherited ? "listen addresses changed in the config: ignored under socket "
                                  "activation (the socket unit's ListenStream= lines decide)"
                                : "listen addresses changed in the config: they apply at the "
                                  "next start");
    memcpy(cfg.listen, s->cfg.listen, sizeof cfg.listen);
    cfg.nlisten = s->cfg.nlisten;
    if (!cfg.whoami && s->cfg.whoami)
        proxy_log("whoami = off applies at the next start (requests are checked until then)");
    if (cfg.whoami && !s->cfg.whoami)
        proxy_log("whoami = on applies at the next start");
    cfg.whoami = s->cfg.whoami;
    proxy_keep_start_only(s, &cfg);
    s->cfg = cfg;
    listener_fit_fd_limit(s);
    apply_gate(s);
    reg_backend_unref(s->backend);
    s->backend = backend;
    proxy_log("reloaded configuration%s%s, on %s", cfg.config_path[0] ? " from " : "",
              cfg.config_path, from);
}

void proxy_server_client_gone(struct proxy_server *s, struct proxy_client *c)
{
    TAILQ_REMOVE(&s->clients, c, link);
    s->nclients--;
    if (s->stopping) {
        if (s->nclients == 0)
            event_base_loopbreak(s->base);
    } else if (!s->accepting && s->nclients < s->max_clients) {
        listener_set_accepting(s, 1);
    }
}

static void stop_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    struct proxy_server *s = arg;
    (void)fd;
    (void)what;
    proxy_log("shutdown_timeout passed: closing %u connection(s) still busy", s->nclients);
    while (!TAILQ_EMPTY(&s->clients))
        proxy_client_abort(TAILQ_FIRST(&s->clients));
    event_base_loopbreak(s->base);
}

/* Stop accepting; idle connections close now, busy ones after their
 * response; whatever is left at shutdown_timeout is cut. */
static void begin_stop(struct proxy_server *s, const char *why)
{
    if (s->stopping)
        return;
    s->stopping = 1;
    listener_close_all(s);
    proxy_log("stopping on %s: %u connection(s) to finish", why, s->nclients);
    struct proxy_client *c, *next;
    for (c = TAILQ_FIRST(&s->clients); c; c = next) {
        next = TAILQ_NEXT(c, link);
        proxy_client_shutdown(c);
    }
    if (s->nclients == 0) {
        event_base_loopbreak(s->base);
        return;
    }
    unsigned ms = s->cfg.shutdown_timeout_ms;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    s->stop_timer = evtimer_new(s->base, stop_deadline_cb, s);
    if (s->stop_timer)
        evtimer_add(s->stop_timer, &tv);
}

static void on_signal(int sig, const char *from, void *arg)
{
    if (sig == SIGHUP)
        reload(arg, from);
    else
        begin_stop(arg, from);
}

/* A dev machine's default soft limit (1024) caps connections far below
 * max_connections; the hard limit is ours to take. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* Buffers are allocated and freed per read and per response; glibc would
 * give the heap top back to the kernel (brk) and map bulk chains (mmap)
 * each time: measured, one brk per ten requests. Keep them. */
static void tune_malloc(void)
{
    mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
    mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
    /* libevent's own calloc (every evbuffer and its chains) skips glibc's
     * per-thread cache; through these it is malloc and memset, which hit
     * it: about 9 callocs a new connection (callgrind). The same
     * functions libevent used until now, so nothing allocated before
     * changes hands. */
    event_set_mem_functions(malloc, realloc, free);
}

/* A control socket from systemd must be where the CLI looks for it (the
 * path this daemon would bind): elsewhere, `wtproxy ls` would find no
 * daemon and start a second one. Returns 0, or -1 with err. */
static int check_inherited_control(struct proxy_server *s, const char *control, char *err,
                                   size_t errlen)
{
    const char *path = ((const struct sockaddr_un *)&s->control.addr)->sun_path;
    if (strcmp(path, control) == 0)
        return 0;
    snprintf(err, errlen,
             "fd %d passed by socket activation (LISTEN_FDS) is the Unix socket %.108s, but this "
             "daemon's control socket is %.200s: give the socket unit "
             "ListenStream=%%t/wtproxy/control.sock, or serve --control %.108s",
             s->control.fd, path, control, path);
    return -1;
}

/* The registry's files: from the config, else the per-user places. */
static int open_registry(struct proxy_server *s, char *err, size_t errlen)
{
    char control[PATH_MAX], state[PATH_MAX], dir[PATH_MAX - 32];
    if (s->cfg.control_socket[0])
        snprintf(control, sizeof control, "%s", s->cfg.control_socket);
    else if (reg_control_path(control, sizeof control, err, errlen) < 0)
        return -1;
    if (s->cfg.state_file[0])
        snprintf(state, sizeof state, "%s", s->cfg.state_file);
    else if (reg_state_dir(dir, sizeof dir, err, errlen) < 0)
        return -1;
    else
        snprintf(state, sizeof state, "%s/registry.json", dir);
    if (s->control.fd >= 0 && check_inherited_control(s, control, err, errlen) < 0)
        return -1;
    json_t *flags = proxy_start_flags(s);
    s->reg =
        reg_server_new(s->base, control, s->control.fd, state, s->cfg.registry, flags, err, errlen);
    json_decref(flags);
    if (!s->reg)
        return -1;
    const char *slash = strrchr(state, '/');
    snprintf(dir, sizeof dir, "%.*s/servers", slash ? (int)(slash - state) : 1,
             slash ? state : ".");
    s->ondemand = ondemand_new(s, control, dir);
    if (s->ondemand)
        ondemand_adopt(s->ondemand);
    proxy_ops_install(s);
    if (apply_gate(s) < 0) {
        snprintf(err, errlen, "cannot start the /__whoami gate: out of memory");
        return -1;
    }
    proxy_verify_install(s);
    if (!s->cfg.whoami)
        proxy_log("whoami = off: backends are not asked which checkout and code they serve");
    char why[256];
    struct identify_known known = {.snap = route_known_snap,
                                   .known = route_known_repo,
                                   .drop = free,
                                   .version = route_known_version,
                                   .arg = s};
    s->ident = identify_new(s->base, &known, why, sizeof why);
    if (!s->ident)
        proxy_log("callers cannot be identified by process (%s): requests must name their "
                  "worktree (X-Wtproxy-Worktree, or Host <name>.localhost)",
                  why);
    return 0;
}

static void server_free(struct proxy_server *s)
{
    while (!TAILQ_EMPTY(&s->clients))
        proxy_client_abort(TAILQ_FIRST(&s->clients));
    listener_close_all(s);
    dash_stop(s);
    ondemand_free(s->ondemand);
    identify_free(s->ident);
    whoami_gate_free(s->gate);
    reg_server_free(s->reg);
    proxy_pool_free(s->pool);
    /* after the pool: its backend streams' blocks join the spares */
    proxy_client_free_spares();
    reg_backend_unref(s->backend);
    log_flood_free(s->flood);
    proxy_signals_free(s->signals);
    if (s->stop_timer)
        event_free(s->stop_timer);
    if (s->base)
        event_base_free(s->base);
}

#define DISPATCH_MAX 64

/* The loop. Two priorities: the workers' answers (WTP_PRIO_ANSWERS) go
 * before the connections' reads and writes, so that a connection whose
 * caller was just found does not wait behind a saturated loop's traffic.
 * Priorities only order the events waiting at the start of an iteration,
 * and a burst (1,500 heads read at once) is one long iteration: after
 * DISPATCH_MAX callbacks of the traffic's priority the loop polls
 * again, so an answer that came meanwhile runs next. NULL: out of memory. */
static struct event_base *new_base(void)
{
    struct event_config *cfg = event_config_new();
    struct event_base *base = NULL;
    if (cfg &&
        event_config_set_max_dispatch_interval(cfg, NULL, DISPATCH_MAX, WTP_PRIO_ANSWERS + 1) == 0)
        base = event_base_new_with_config(cfg);
    if (cfg)
        event_config_free(cfg);
    if (base && event_base_priority_init(base, 2) < 0) {
        event_base_free(base);
        base = NULL;
    }
    return base;
}

/* The fixes the daemon writes name `wtproxy` commands; from a build
 * folder (the README's first command) a shell runs another wtproxy by
 * that name, or none: the pages say which binary they mean. An installed
 * one (in a bin folder) is not named: the systemd user manager's PATH
 * lacks ~/.local/bin, which the shells of its users have. */
static void name_program(void)
{
    char prog[PATH_MAX], other[PATH_MAX];
    if (host_self_program(prog, sizeof prog, other, sizeof other) != 1)
        return;
    const char *slash = strrchr(prog, '/');
    if (slash - prog >= 4 && strncmp(slash - 4, "/bin", 4) == 0 && !other[0])
        return;
    error_page_set_program(prog, other);
    char why[PATH_MAX + 64] = "no wtproxy is on its PATH";
    if (other[0])
        snprintf(why, sizeof why, "the first wtproxy on its PATH is another one, %s", other);
    proxy_log("`wtproxy` in the fixes this daemon writes means %s, and %s: its error pages say "
              "so; to run them as written: export PATH=%.*s:$PATH (or install it: README)",
              prog, why, (int)(strrchr(prog, '/') - prog), prog);
}

int proxy_serve(int argc, char **argv)
{
    static struct proxy_server srv;
    struct proxy_server *s = &srv;
    char err[1024];
    s->argc = argc;
    s->argv = argv;
    TAILQ_INIT(&s->clients);
    int r = load_config(s, &s->cfg, &s->backend, err, sizeof err);
    if (r == 1) {
        proxy_config_usage(stdout);
        return 0;
    }
    if (r < 0) {
        fprintf(stderr, "wtproxy serve: %s\n", err);
        return 2;
    }
    proxy_log_cap();
    char note[256];
    s->ninherited = proxy_sd_listen_fds(s->inherited, WTP_SD_MAX_FDS, &s->control, note,
                                        sizeof note, err, sizeof err);
    if (note[0])
        proxy_log("%s", note);
    if (s->ninherited < 0) {
        fprintf(stderr, "wtproxy: %s\n", err);
        reg_backend_unref(s->backend);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();
    tune_malloc();
    host_uid_words(geteuid(), s->user, sizeof s->user);
    s->base = new_base();
    s->pool = s->base ? proxy_pool_new(s->base) : NULL;
    s->flood = s->base ? log_flood_new(s->base) : NULL; /* NULL: every line written */
    int status = 1;
    if (!s->base || !s->pool) {
        fprintf(stderr, "wtproxy: cannot start: out of memory\n");
    } else if (!(s->signals = proxy_signals_new(s->base, on_signal, s))) {
        /* Before the listeners: a signal sent as soon as "listening on"
         * appears must already find its handler. */
        fprintf(stderr, "wtproxy: cannot install signal handlers\n");
    } else if (open_registry(s, err, sizeof err) < 0) {
        /* the log's last line: `ls` and doctor quote it (cli/client.c) */
        fprintf(stderr, "wtproxy: " WTP_NOT_STARTED "%s\n", err);
    } else if (dash_start(s) < 0) { /* before the listeners: a request may come at once */
        fprintf(stderr, "wtproxy: cannot start the dashboard at " WTP_DASH_PREFIX "/: out of "
                        "memory\n");
    } else if (listener_open_all(s, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy: %s\n", err);
    } else {
        dash_listening(s);
        reg_server_serving(s->reg);
        name_program(); /* before the loop serves a request */
        if (!s->backend)
            proxy_log("no default backend: requests that name no registered worktree get 503");
        event_base_dispatch(s->base);
        proxy_log("stopped");
        status = 0;
    }
    server_free(s);
    return status;
}
