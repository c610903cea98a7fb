/* refusal.c - see refusal.h. Agents read these, not READMEs: each names
 * the server (address, pid, checkout), what is wrong with it, and one
 * command to run. */
#include "refusal.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "host.h"
#include "kind.h"
#include "packages.h"

/* " --front N" when the registration's front is known: a `wtproxy run` or
 * `restart` without it acts on the default front, not this one. */
static void front_flag(const struct whoami_target *t, char *out, size_t outlen)
{
    if (t->front > 0)
        snprintf(out, outlen, " --front %d", t->front);
    else
        out[0] = '\0';
}

/* The registered command with its port put back as {port}: the command
 * as run names the port of that run, and a new `wtproxy run` reserves
 * another one, which the literal would never listen on. */
static void with_port_placeholder(const struct whoami_target *t, char *out, size_t outlen)
{
    char port[16];
    size_t used = 0, n = (size_t)snprintf(port, sizeof port, "%d", t->port);
    out[0] = '\0';
    for (const char *p = t->command; *p && used + 1 < outlen;) {
        int whole = strncmp(p, port, n) == 0 &&
                    (p == t->command || !isdigit((unsigned char)p[-1])) &&
                    !isdigit((unsigned char)p[n]);
        used += (size_t)snprintf(out + used, outlen - used, whole ? "{port}" : "%c", *p);
        p += whole ? n : 1;
    }
}

/* Whether path is dir or inside it. */
static int inside(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return n && strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Whether cmd runs code from outside checkout: a word that is a path in
 * other (the checkout that answered on the port, NULL none), or a `cd`
 * out of checkout (to an absolute path elsewhere, or up with ..). Pasted
 * in checkout, such a command serves the other's code again, and the gate
 * would verify it: it answers /__whoami for the folder it runs in. */
static int runs_elsewhere(const char *cmd, const char *checkout, const char *other)
{
    static const char *const seps = " \t\n'\";&|()=";
    char word[PATH_MAX];
    int after_cd = 0;
    for (const char *p = cmd; *p;) {
        size_t n = strcspn(p, seps);
        if (n && n < sizeof word) {
            memcpy(word, p, n), word[n] = '\0';
            if ((other && other[0] && word[0] == '/' && inside(word, other)) ||
                (after_cd &&
                 (word[0] == '/' ? !inside(word, checkout) : strncmp(word, "..", 2) == 0)))
                return 1;
            after_cd = strcmp(word, "cd") == 0;
        }
        p += n ? n : 1;
    }
    return 0;
}

/* " 24690 24701 ...": the pids of a whoami_holders, written out. */
#define HOLDERS_WORDS (HOST_PORT_HOLDERS_MAX * 12)

/* Whether pid is one of h's. */
static int holds(const struct whoami_holders *h, pid_t pid)
{
    for (size_t i = 0; h && pid > 0 && i < h->n; i++)
        if (h->pid[i] == pid)
            return 1;
    return 0;
}

/* Whether the process that answered shares its listening socket with
 * others (h): a prefork server's worker. Its kill alone stops nothing:
 * gunicorn's master forks another, morbo's manager holds the port with
 * nobody answering. */
static int shared(const struct whoami_holders *h, pid_t answered)
{
    return h && h->n > 1 && holds(h, answered);
}

/* " 24690 24701 24702" into out: every process holding the socket the
 * answer came from when shared, else the one that answered. */
static void server_pids(const struct whoami_holders *h, pid_t answered, char *out, size_t outlen)
{
    size_t used = 0;
    out[0] = '\0';
    if (!shared(h, answered)) {
        snprintf(out, outlen, " %d", (int)answered);
        return;
    }
    for (size_t i = 0; i < h->n && used < outlen; i++)
        used += (size_t)snprintf(out + used, outlen - used, " %d", (int)h->pid[i]);
}

/* "; it shares its listening socket with pids 24690 24702, which hold the
 * port after it exits" when shared, else "": why the kill names them. */
static void sharing_words(const struct whoami_holders *h, pid_t answered, char *out, size_t outlen)
{
    size_t used = 0;
    out[0] = '\0';
    if (!shared(h, answered))
        return;
    used = (size_t)snprintf(out, outlen, "; it shares its listening socket with pid%s",
                            h->n > 2 ? "s" : "");
    for (size_t i = 0; i < h->n && used < outlen; i++)
        if (h->pid[i] != answered)
            used += (size_t)snprintf(out + used, outlen - used, " %d", (int)h->pid[i]);
    if (used < outlen)
        snprintf(out + used, outlen - used, ", which hold%s the port after it exits",
                 h->n > 2 ? "" : "s");
}

/* How to start the worktree's server again once it is stopped. A
 * `.wtproxy` service from its file, whose `start` has the folder and
 * interpreter right (a hand-made `wtproxy run` would replace the daemon's
 * server, and the registered command may have run in another checkout's
 * folder, which `cd` to this one's top would miss); so too when the file
 * declares a server on t's front, which `wtproxy restart` starts. Else
 * `wtproxy run` with the words its wrapper quoted: what it was given, each
 * word whole (spaces, quotes, $, the && of `sh -c 'cd api && node
 * server.js'`), with {port} as given; quoting the registered command again
 * cannot be right, its words joined by spaces no longer say where each
 * ends. Without them (a `wtproxy register`, whose command is its
 * registrant's own text), that text with its port put back as {port}.
 * Never a command of another checkout's process (other_s: t was
 * registered with the pid of the server that answers for another
 * checkout) nor one that runs another checkout's code (runs_elsewhere):
 * run here, it would be verified and serve that checkout's code. */
static void restart_hint(const struct whoami_target *t, const char *other, int other_s, char *out,
                         size_t outlen)
{
    char front[24], cmd[1200];
    if (t->service && t->service[0]) {
        snprintf(out, outlen,
                 "cd %s && wtproxy restart --service %s (it starts the one its .wtproxy "
                 "declares)",
                 t->checkout, t->service);
        return;
    }
    front_flag(t, front, sizeof front);
    if (t->declared) {
        snprintf(out, outlen,
                 "cd %s && wtproxy restart%s (it starts the server its .wtproxy declares on "
                 "that front)",
                 t->checkout, front);
        return;
    }
    if (t->shell_command && t->shell_command[0])
        snprintf(cmd, sizeof cmd, "%s", t->shell_command);
    else if (t->command[0])
        with_port_placeholder(t, cmd, sizeof cmd);
    else
        cmd[0] = '\0';
    if (!cmd[0] || other_s || runs_elsewhere(cmd, t->checkout, other))
        snprintf(cmd, sizeof cmd, "<server command with {port}>");
    snprintf(out, outlen, "cd %s && wtproxy run%s --restart-on-stale -- %s", t->checkout, front,
             cmd);
}

/* How to restart t now, so that it loads the code on disk: through its
 * wrapper when it has one (the daemon's, for a `.wtproxy` service), else
 * stopped and started again. */
static void reload_hint(const struct whoami_target *t, char *out, size_t outlen)
{
    char front[24], run[PATH_MAX + 1300];
    front_flag(t, front, sizeof front);
    if (t->by_run && t->service && t->service[0])
        snprintf(out, outlen, "cd %s && wtproxy restart --service %s%s", t->checkout, t->service,
                 front);
    else if (t->by_run)
        snprintf(out, outlen, "cd %s && wtproxy restart%s", t->checkout, front);
    else {
        restart_hint(t, NULL, 0, run, sizeof run);
        snprintf(out, outlen, "stop pid %d, then %s", (int)t->pid, run);
    }
}

/* How to end this worktree's registration of t: its wrapper stops it; a
 * registration with a pid ends with that pid; one with a TTL only (pid 0,
 * where `kill 0` would signal the reader's own process group) is removed. */
static void drop_hint(const struct whoami_target *t, char *out, size_t outlen)
{
    char front[24];
    front_flag(t, front, sizeof front);
    if (t->by_run)
        snprintf(out, outlen, "cd %s && wtproxy stop%s", t->checkout, front);
    else if (t->pid > 0)
        snprintf(out, outlen, "kill %d", (int)t->pid);
    else
        snprintf(out, outlen, "cd %s && wtproxy unregister%s", t->checkout, front);
}

/* t's port is another worktree's registered server (t->other_front):
 * that server is in use, and a kill would end the other worktree's tests
 * mid-run. The mistake is this worktree's registration: dropped, then its
 * own server started, chained with && where one command does both. */
static void mismatch_owned(const struct whoami_target *t, const struct whoami_answer *ans,
                           const struct whoami_holders *h, const char *since, char *out,
                           size_t outlen)
{
    char front[24], drop[64], fix[PATH_MAX + 1400], run[PATH_MAX + 1300];
    front_flag(t, front, sizeof front);
    snprintf(drop, sizeof drop, "wtproxy %s%s", t->by_run ? "stop" : "unregister", front);
    if (t->service && t->service[0])
        snprintf(fix, sizeof fix,
                 "cd %s && %s && wtproxy restart --service %s (it starts the one its .wtproxy "
                 "declares)",
                 t->checkout, drop, t->service);
    else if (t->declared)
        snprintf(fix, sizeof fix,
                 "cd %s && %s && wtproxy restart%s (it starts the server its .wtproxy declares "
                 "on that front)",
                 t->checkout, drop, front);
    else {
        restart_hint(t, ans->checkout,
                     t->pid == ans->pid || t->pid == t->other_pid ||
                         (shared(h, ans->pid) && holds(h, t->pid)),
                     run, sizeof run);
        snprintf(fix, sizeof fix, "cd %s && %s, then start your own server: %s", t->checkout, drop,
                 run);
    }
    char reg[48] = "";
    if (t->other_pid > 0)
        snprintf(reg, sizeof reg, ", pid %d", (int)t->other_pid);
    snprintf(out, outlen,
             "port %d is served by %s, not by %s: the server there (pid %d, started %s ago) is "
             "%s's registered server (front :%d%s), in use: leave it running. Your worktree's "
             "registration names that port by mistake: drop it and start your own: %s",
             t->port, ans->checkout, t->checkout, (int)ans->pid, since, ans->checkout,
             t->other_front, reg, fix);
}

void whoami_refusal_mismatch(const struct whoami_target *t, const struct whoami_answer *ans,
                             const char *nested, const struct whoami_holders *h, char *out,
                             size_t outlen)
{
    char since[32], hint[PATH_MAX + 1200], whose[PATH_MAX + 64] = "";
    char pids[HOLDERS_WORDS], sharing[HOLDERS_WORDS + 96];
    host_age(ans->started_ms > 0 ? host_wall_ms() - ans->started_ms : 0, since, sizeof since);
    if (t->other_front > 0) {
        mismatch_owned(t, ans, h, since, out, outlen);
        return;
    }
    char drop[PATH_MAX + 64];
    /* Registered with that server's own pid (the one that answered, or
     * another holding its socket, a prefork master): its exit ends the
     * entry too, and the same kill said twice reads as two steps; its
     * command is that other checkout's. */
    int one_kill = !t->by_run && t->pid > 0 &&
                   (t->pid == ans->pid || (shared(h, ans->pid) && holds(h, t->pid)));
    restart_hint(t, ans->checkout, one_kill, hint, sizeof hint);
    drop_hint(t, drop, sizeof drop);
    server_pids(h, ans->pid, pids, sizeof pids);
    sharing_words(h, ans->pid, sharing, sizeof sharing);
    char dropping[PATH_MAX + 128] = "";
    if (!one_kill)
        snprintf(dropping, sizeof dropping, "; drop your worktree's registration of that port: %s",
                 drop);
    /* A folder inside the worktree is served when it is the worktree's own
     * (decide.c): one that is not is said whose it is, or its reader
     * takes it for the worktree's. */
    if (nested && strcmp(nested, ans->checkout) == 0)
        snprintf(whose, sizeof whose, " (a worktree of its own, nested inside yours)");
    else if (nested)
        snprintf(whose, sizeof whose, " (in the worktree %s, nested inside yours)", nested);
    snprintf(out, outlen,
             "port %d is served by %s, not by %s: the server there (pid %d, started %s ago%s) "
             "belongs to another checkout%s, so its answers would not be your code's. Stop it: "
             "kill%s (unless %s still needs it%s)%s; then start your own server: %s",
             t->port, ans->checkout, t->checkout, (int)ans->pid, since, sharing, whose, pids,
             ans->checkout, one_kill ? "; its exit ends your worktree's registration of it" : "",
             dropping, hint);
}

void whoami_refusal_silent(const struct whoami_target *t, const char *problem, int yet, char *out,
                           size_t outlen)
{
    char drop[PATH_MAX + 64], front[24], fix[2 * PATH_MAX + 128];
    drop_hint(t, drop, sizeof drop);
    front_flag(t, front, sizeof front);
    if (t->by_run) /* its wrapper started it: its output says why it is silent */
        snprintf(fix, sizeof fix, "its output says why: cd %s && wtproxy logs%s", t->checkout,
                 front);
    else
        snprintf(fix, sizeof fix,
                 "start the server for %s on port %d, or end this registration: %s", t->checkout,
                 t->port, drop);
    if (yet)
        snprintf(out, outlen,
                 "nothing answers on %s yet (%s): wtproxy keeps asking its /__whoami every 100 "
                 "ms for reload_grace, then at the next request to it; %s",
                 t->name, problem, fix);
    else
        snprintf(out, outlen,
                 "nothing answered GET /__whoami on %s within reload_grace (%s): %s. wtproxy asks "
                 "again at the next request to it",
                 t->name, problem, fix);
}

int whoami_refusal_file_newer(const struct whoami_file *f, long long since_ms)
{
    /* ctime too: a copy that keeps an old mtime (cp -p, rsync -t, touch -d)
     * is still a change, and the kernel sets ctime at every write */
    long long changed_ns = f->mtime_ns > f->ctime_ns ? f->mtime_ns : f->ctime_ns;
    return changed_ns / 1000000 > since_ms;
}

size_t whoami_refusal_newer_files(const struct whoami_fp *disk, long long since_ms, char *out,
                                  size_t outlen)
{
    size_t n = 0, used;
    out[0] = '\0';
    for (size_t i = 0; i < disk->n; i++) {
        if (!whoami_refusal_file_newer(&disk->file[i], since_ms))
            continue;
        if (++n > WHOAMI_NAMED_FILES)
            continue;
        used = strlen(out);
        snprintf(out + used, outlen - used, "%s%s", n > 1 ? ", " : "", disk->file[i].path);
    }
    if (n > WHOAMI_NAMED_FILES) {
        used = strlen(out);
        snprintf(out + used, outlen - used, ", ...");
    }
    return n;
}

void whoami_refusal_restart_why(const struct whoami_target *t, const struct whoami_fp *disk,
                                long long since_ms, int ignored, char *out, size_t outlen)
{
    char files[1024];
    size_t n = whoami_refusal_newer_files(disk, since_ms, files, sizeof files);
    if (!n) {
        snprintf(out, outlen, "the code on disk differs from the code it loaded (%s on disk)",
                 disk->hash);
        return;
    }
    int used = snprintf(out, outlen, "its code changed since it started (%zu file%s: %s)", n,
                        n == 1 ? "" : "s", files);
    if (ignored && used > 0 && (size_t)used < outlen)
        whoami_refusal_ignored(t, disk, since_ms, n, files, out + used, outlen - (size_t)used);
}

/* Appended to what changed: the server said it was taking the change in
 * (taking_in), and the gate waited for that as long as it does. */
static void took_too_long(const struct whoami_answer *ans, char *changed, size_t len)
{
    char age[32];
    size_t used = strlen(changed);
    host_age(host_wall_ms() - ans->taking_in_ms, age, sizeof age);
    snprintf(changed + used, len - used,
             "; it said it was taking the change in (taking_in in its /__whoami, since %s ago) "
             "but did not report the new code within start_timeout",
             age);
}

void whoami_refusal_stale(const struct whoami_target *t, const struct whoami_answer *ans,
                          const struct whoami_fp *disk, int restarted, int ignored,
                          const struct whoami_holders *h, char *out, size_t outlen)
{
    char since[32], files[1024], now[PATH_MAX + 1400], run[PATH_MAX + 1300], changed[6000];
    char sharing[HOLDERS_WORDS + 96];
    char front[24], offer[2 * PATH_MAX + 1400] = "";
    host_age(ans->started_ms > 0 ? host_wall_ms() - ans->started_ms : 0, since, sizeof since);
    reload_hint(t, now, sizeof now);
    sharing_words(h, ans->pid, sharing, sizeof sharing);
    front_flag(t, front, sizeof front);
    size_t n = whoami_refusal_newer_files(disk, ans->started_ms, files, sizeof files);
    if (n)
        snprintf(changed, sizeof changed, "the code changed since (%zu file%s: %s)", n,
                 n == 1 ? "" : "s", files);
    else
        snprintf(changed, sizeof changed,
                 "the code on disk differs from the code it loaded "
                 "(%s on disk, %s loaded)",
                 disk->hash, ans->hash);
    if (ans->taking_in_ms) /* past start_timeout: decide.c's taking_in() */
        took_too_long(ans, changed, sizeof changed);
    else if (ans->no_reloader && !t->restart_on_stale)
        snprintf(changed + strlen(changed), sizeof changed - strlen(changed),
                 "; nothing reloads it (its /__whoami says \"reloads\": false), so it "
                 "will not catch up by itself");
    if (ignored && n)
        whoami_refusal_ignored(t, disk, ans->started_ms, n, files, changed + strlen(changed),
                               sizeof changed - strlen(changed));
    /* Restarted at each edit from then on: run again with the flag. Not a
     * service's, which its .wtproxy starts: one run by hand would replace
     * the daemon's. */
    if (t->by_run && !t->restart_on_stale && !(t->service && t->service[0])) {
        restart_hint(t, NULL, 0, run, sizeof run);
        snprintf(offer, sizeof offer,
                 " (or, restarted at each edit from then on: wtproxy stop%s, then %s)", front, run);
    }
    if (restarted)
        snprintf(out, outlen,
                 "wtproxy restarted your server for %s (pid %d%s), and it still "
                 "reports older code than the disk's: %s. Look at its output for why it "
                 "did not come back with the new code; to restart it by hand: %s",
                 ans->checkout, (int)ans->pid, sharing, changed, now);
    else if (t->restart_on_stale)
        snprintf(out, outlen,
                 "this is your own server for %s (pid %d%s), started %s ago; %s. wtproxy "
                 "restarts it at the next request to it (it runs with --restart-on-stale), or "
                 "now: %s",
                 ans->checkout, (int)ans->pid, sharing, since, changed, now);
    else if (t->by_run)
        snprintf(out, outlen,
                 "this is your own server for %s (pid %d%s), started %s ago; %s. "
                 "Restart it: %s%s",
                 ans->checkout, (int)ans->pid, sharing, since, changed, now, offer);
    else {
        /* By hand: every process holding its socket, unless it was registered
         * with a pid outside them (a script that started it), whose end the
         * registration waits for. */
        char stop[HOLDERS_WORDS + 32], pids[HOLDERS_WORDS];
        if (shared(h, ans->pid) && (t->pid <= 0 || holds(h, t->pid))) {
            server_pids(h, ans->pid, pids, sizeof pids);
            snprintf(stop, sizeof stop, "kill%s", pids);
        } else {
            snprintf(stop, sizeof stop, "stop pid %d", t->pid > 0 ? (int)t->pid : (int)ans->pid);
        }
        restart_hint(t, NULL, 0, run, sizeof run);
        snprintf(out, outlen,
                 "this is your own server for %s (pid %d%s), started %s ago; %s. "
                 "Restart it: %s, then %s",
                 ans->checkout, (int)ans->pid, sharing, since, changed, stop, run);
    }
}

/* Where a Python server finds wtproxy_whoami: where an install put it is
 * on Debian's python3's path only outside a private prefix, and another
 * python3 (a virtualenv) never looks there; `wtproxy doctor` asks the
 * .wtproxy's own interpreter and prints the link that fixes it. */
#define PY_WHERE                                                                                   \
    "importable by that python3 (wtproxy help whoami says where it is; wtproxy doctor, run in "    \
    "the worktree, checks it and prints the command that makes it so)"

static const char *const vite[] = {"vite", NULL};
/* a package script may run Vite or a Node server: both lines */
static const char *const runner[] = {"npm", "npx", "pnpm", "yarn", "bun", NULL};

/* The middleware line for the server t's command starts (wtproxy help whoami):
 * a Next, a Vite, a Node or a Python server's; both when the command does
 * not say. */
static const char *middleware_hint(const struct whoami_target *t)
{
    static const char *const next[] = {"next", "next-server", NULL};
    static const char *const node[] = {"node", "tsx", NULL};
    static const char *const django[] = {"manage", "django-admin", NULL};
    static const char *const asgi[] = {"uvicorn", "hypercorn", "fastapi", NULL};
    static const char *const python[] = {"python", "gunicorn", "uwsgi", "waitress-serve", NULL};
    const char *cmd = t->command ? t->command : "";
    const struct whoami_kind *kind = whoami_kind_of(cmd);
    if (!kind->middleware) /* go, cargo, ruby...: no middleware line can help */
        return kind->guide;
    if (whoami_runs_one_of(cmd, next)) /* before node: `node node_modules/.bin/next dev` */
        return "add Next's /__whoami: wtproxy init --apply in the app writes "
               "app/%5F%5Fwhoami/route.js (or updates one from before Turbopack's support, "
               "which answers 501 under next dev's Turbopack) and wraps next.config.mjs in "
               "withWtproxyWhoami() from 'wtproxy-whoami/next' (wtproxy help whoami)";
    if (whoami_runs_one_of(cmd, vite))
        return "add the Vite plugin: wtproxy init --apply in the app adds wtproxyWhoami() from "
               "'wtproxy-whoami/vite' to vite.config.*'s plugins, loaded under wtproxy run only "
               "(wtproxy help whoami)";
    if (whoami_runs_one_of(cmd, node))
        return "add the Node middleware first: " WHOAMI_NODE_LINES
               " (in a CommonJS file: " WHOAMI_NODE_REQUIRE_LINE ", Node 20.19 or later; wtproxy "
               "help whoami)";
    if (whoami_runs_one_of(cmd, runner))
        return "add the Node middleware first (" WHOAMI_NODE_LINES
               ") or, for a Vite dev server, the "
               "Vite plugin (wtproxy init --apply in the app adds wtproxyWhoami() from "
               "'wtproxy-whoami/vite' to vite.config.*'s plugins; wtproxy help whoami)";
    if (whoami_runs_one_of(cmd, django))
        return "add 'wtproxy_whoami.django.WhoamiMiddleware' first in MIDDLEWARE, with "
               "wtproxy_whoami " PY_WHERE;
    if (whoami_runs_one_of(cmd, asgi))
        return "wrap the ASGI app at the end of the module it loads: app = "
               "WhoamiASGIMiddleware(app), from wtproxy_whoami.asgi, with "
               "wtproxy_whoami " PY_WHERE;
    if (whoami_runs_one_of(cmd, python))
        return "wrap the WSGI app: WhoamiWSGIMiddleware from wtproxy_whoami.wsgi, with "
               "wtproxy_whoami " PY_WHERE;
    return "add the whoami middleware (Node: app.use(whoami()) from 'wtproxy-whoami'; "
           "Vite: its plugin wtproxyWhoami() from 'wtproxy-whoami/vite'; Django: "
           "'wtproxy_whoami.django.WhoamiMiddleware' first in MIDDLEWARE; wtproxy help whoami), "
           "or, for a server no middleware covers (Go, Rust, a compiled binary), its own "
           "/__whoami (wtproxy help whoami-protocol)";
}

/* What --trust-registry would watch for t's server, appended to the offer
 * of it: trusted, a server is stale only once one of these files is newer
 * than it, so a user choosing it must know what goes unseen (a Go
 * server's templates were, and so were all its .go files before). */
static void trust_offer(const struct whoami_target *t, char *out, size_t outlen)
{
    const struct whoami_kind *kind = whoami_kind_of(t->command);
    char watched[512];
    whoami_kind_watched(kind, watched, sizeof watched);
    snprintf(out, outlen,
             "or start wtproxy with --trust-registry to trust the registration instead: it then "
             "calls %s stale once one of its files is newer than it, watching %s; not %s",
             kind->name, watched, kind->unseen);
}

/* A Vite server (or a package script's) started by hand: wtproxy's Vite
 * plugin, as `wtproxy init --apply` writes it into vite.config.*, loads
 * only when WTPROXY_PORT is set, which `wtproxy run` does. An app adopted
 * by init has the plugin and still answers 404 so: told to add it, a user
 * found it there and had no fix left but --trust-registry, which turns
 * the gate off. The fix is how the server is started. */
static void no_whoami_vite_by_hand(const struct whoami_target *t, int status, char *out,
                                   size_t outlen)
{
    char restart[PATH_MAX + 1400];
    reload_hint(t, restart, sizeof restart);
    snprintf(out, outlen,
             "%s (the server of %s, pid %d%s%s) answers GET /__whoami with HTTP %d, so wtproxy "
             "cannot tell which checkout and which code it serves. If it is a Vite dev server: "
             "wtproxy's Vite plugin (wtproxyWhoami() from 'wtproxy-whoami/vite' in "
             "vite.config.*, as wtproxy init --apply adds it) loads only under wtproxy run, which "
             "sets WTPROXY_PORT, and this server was started without it. Start it through "
             "wtproxy: %s; or, started by hand, with WTPROXY_PORT=%d in its environment, then "
             "wtproxy register again. A vite.config.* without the plugin: wtproxy init --apply in "
             "the app adds it%s (wtproxy help whoami)",
             t->name, t->checkout[0] ? t->checkout : "the default backend", (int)t->pid,
             t->command[0] ? ": " : "", t->command, status, restart, t->port,
             whoami_runs_one_of(t->command, vite) ? ""
                                                  : ". A Node server needs the middleware "
                                                    "first: " WHOAMI_NODE_LINES);
}

/* Its middleware answered that it is off, and why (said): the fix is
 * the server's start, not the middleware. */
static void no_whoami_off(const struct whoami_target *t, int status, const char *said, char *out,
                          size_t outlen)
{
    char drop[PATH_MAX + 64], run[PATH_MAX + 1300];
    drop_hint(t, drop, sizeof drop);
    restart_hint(t, NULL, 0, run, sizeof run);
    snprintf(out, outlen,
             "%s (the server of %s, pid %d) answers GET /__whoami with HTTP %d, its middleware "
             "saying that it is off: %s. Stop it: %s; then start it again from a shell without "
             "that setting: %s",
             t->name, t->checkout[0] ? t->checkout : "the default backend", (int)t->pid, status,
             said, drop, run);
}

void whoami_refusal_app_error(const struct whoami_target *t, int status, const char *traceback,
                              char *out, size_t outlen)
{
    snprintf(out, outlen,
             "%s (the server of %s, pid %d%s%s) answers every request, GET /__whoami too, with "
             "HTTP %d and a Python traceback: its app fails to load. The traceback's last "
             "lines:\n%s",
             t->name, t->checkout[0] ? t->checkout : "the default backend", (int)t->pid,
             t->command && t->command[0] ? ": " : "", t->command ? t->command : "", status,
             traceback);
}

/* What to do about a server that broke: wtproxy's restart where it
 * restarts it (after a change), else the user's fix and save, else a
 * restart by hand. */
static void broken_fix(const struct whoami_target *t, const struct whoami_broken *b, char *out,
                       size_t outlen)
{
    char now[PATH_MAX + 1400];
    reload_hint(t, now, sizeof now);
    if (b->restarted)
        snprintf(out, outlen,
                 "wtproxy restarted it after the change, and its new process answers HTTP %d "
                 "too: the error is in its files. Fix the error and save (wtproxy restarts it at "
                 "the next request after that), or restart it by hand: %s",
                 b->status, now);
    else if (t->restart_on_stale && b->changed)
        snprintf(out, outlen,
                 "wtproxy restarts it at the next request to it (it runs with "
                 "--restart-on-stale); or fix the error and save, or restart it now: %s",
                 now);
    else
        snprintf(out, outlen,
                 "Fix the error and save (a server that reloads itself is then served again), "
                 "or restart it: %s",
                 now);
}

/* What broke it: "until its files changed (1 file: x), and now answers
 * it with HTTP 500: the change broke it", or, no file its fingerprint
 * covers having changed, since when it answered. */
static void broken_cause(const struct whoami_broken *b, char *out, size_t outlen)
{
    char files[1024], named[1100] = "", at[16];
    if (!b->changed) {
        host_time_of_day(b->good_ms, at, sizeof at);
        snprintf(out, outlen,
                 "until %s, and now answers it with HTTP %d, though no file its fingerprint "
                 "covers changed since: a file it does not fingerprint, or its own trouble, broke "
                 "it",
                 at, b->status);
        return;
    }
    size_t n = whoami_refusal_newer_files(b->disk, b->good_ms, files, sizeof files);
    if (n)
        snprintf(named, sizeof named, " (%zu file%s: %s)", n, n == 1 ? "" : "s", files);
    snprintf(out, outlen,
             "until its files changed%s, and now answers it with HTTP %d: the change "
             "broke it",
             named, b->status);
}

void whoami_refusal_broken(const struct whoami_target *t, const struct whoami_broken *b, char *out,
                           size_t outlen)
{
    char cause[1300], fix[PATH_MAX + 1700];
    broken_cause(b, cause, sizeof cause);
    broken_fix(t, b, fix, sizeof fix);
    snprintf(out, outlen,
             "%s (the server of %s, pid %d%s%s) answered GET /__whoami for %s %s (its /__whoami "
             "is not missing). %s:\n%s\n%s",
             t->name, t->checkout[0] ? t->checkout : "the default backend", (int)t->pid,
             t->command && t->command[0] ? ": " : "", t->command ? t->command : "", b->checkout,
             cause, b->head[0] ? "The first lines of its answer" : "Its answer",
             b->head[0] ? b->head : "(an empty body)", fix);
}

void whoami_refusal_no_whoami(const struct whoami_target *t, int status, const char *said,
                              char *out, size_t outlen)
{
    char restart[PATH_MAX + 1400];
    if (said && said[0]) {
        no_whoami_off(t, status, said, out, outlen);
        return;
    }
    if (!t->by_run && t->command &&
        (whoami_runs_one_of(t->command, vite) || whoami_runs_one_of(t->command, runner))) {
        no_whoami_vite_by_hand(t, status, out, outlen);
        return;
    }
    char trust[1024], guard[256] = "";
    reload_hint(t, restart, sizeof restart);
    trust_offer(t, trust, sizeof trust);
    /* A Tornado user's server, started by hand with the middleware under
     * `if os.environ.get("WTPROXY_PORT")` (as init writes it), was told to
     * wrap its app, which it did */
    int middleware = whoami_kind_of(t->command)->middleware;
    if (!t->by_run && middleware)
        snprintf(guard, sizeof guard,
                 " If its middleware is loaded under WTPROXY_PORT only (as wtproxy init writes "
                 "it), a server started by hand needs WTPROXY_PORT=%d in its environment "
                 "(wtproxy run sets it).",
                 t->port);
    snprintf(out, outlen,
             "%s (the server of %s, pid %d%s%s) answers GET /__whoami with HTTP %d, so "
             "wtproxy cannot tell which checkout and which code it serves.%s If you added %s "
             "after it started, restart it: %s. Otherwise %s, then restart it; %s",
             t->name, t->checkout[0] ? t->checkout : "the default backend", (int)t->pid,
             t->command && t->command[0] ? ": " : "", t->command ? t->command : "", status, guard,
             middleware ? "the whoami middleware" : "its /__whoami", restart, middleware_hint(t),
             trust);
}

void whoami_refusal_invalid(const struct whoami_target *t, const char *problem, char *out,
                            size_t outlen)
{
    static const char *const next[] = {"next", "next-server", NULL};
    /* next dev compiles the route at its first ask: a slow answer is
     * likely that, not a broken /__whoami */
    int compiling = t->command && whoami_runs_one_of(t->command, next);
    snprintf(out, outlen,
             "%s (the server of %s, pid %d) answered GET /__whoami with something wtproxy "
             "cannot use: %s. %s",
             t->name, t->checkout[0] ? t->checkout : "the default backend", (int)t->pid, problem,
             compiling ? "next dev compiles /__whoami the first time it is asked, which can take "
                         "longer than whoami_timeout: ask again; to wait for it at the start, "
                         "declare ready = /__whoami in the .wtproxy (wtproxy init --apply does) or "
                         "run it with wtproxy run --health /__whoami"
                       : "Fix the server's /__whoami (wtproxy help whoami-protocol), or restart "
                         "it if it hangs");
}

void whoami_refusal_unreadable(const struct whoami_target *t, const char *error, char *out,
                               size_t outlen)
{
    snprintf(out, outlen,
             "wtproxy cannot fingerprint the code of %s to check %s: %s. "
             "Check that the folder exists and is readable",
             t->checkout, t->name, error);
}

void whoami_refusal_trusted_stale(const struct whoami_target *t, char *out, size_t outlen)
{
    char files[1024], hint[PATH_MAX + 1400];
    snprintf(files, sizeof files, "%s", out);
    reload_hint(t, hint, sizeof hint);
    snprintf(out, outlen,
             "the server of %s (pid %d, no /__whoami, trusted from its "
             "registration) started before these changed: %s. Restart it: %s",
             t->checkout, (int)t->pid, files, hint);
}
