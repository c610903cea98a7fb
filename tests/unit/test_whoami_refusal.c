/* test_whoami_refusal.c - the commands the gate's refusals tell a person
 * (or an agent) to run (whoami/refusal.c). Each must work when pasted: a
 * `wtproxy run` server is restarted or stopped through wtproxy, on its own
 * front port; a command is given back with {port}, never the port of the
 * run that is over; a registration without a pid is never answered with
 * `kill 0`, which signals the reader's own process group. A server without
 * /__whoami is told the middleware of its own kind, after the restart; one
 * that never answered the daemon's own ask, how to start or drop it. */
#include "../../host/clock.c"
#include "../../whoami/kind.c"
#include "../../whoami/refusal.c"
#include "../../whoami/refusal_ignored.c"
#include "../../whoami/traceback.c"
#include "tap.h"

#define WT "/w/app"
#define OTHER "/w/other"

static char out[8192];

static struct whoami_target target(pid_t pid, int by_run, const char *command)
{
    return (struct whoami_target){.name = "127.0.0.1:23833",
                                  .port = 23833,
                                  .checkout = WT,
                                  .pid = pid,
                                  .command = command,
                                  .front = 18000,
                                  .by_run = by_run};
}

static void says(const char *want, const char *what, int line)
{
    if (!tap_ok(strstr(out, want) != NULL, __FILE__, line, "%s: says \"%s\"", what, want))
        printf("#   got: %s\n", out);
}

static void never_says(const char *bad, const char *what, int line)
{
    if (!tap_ok(strstr(out, bad) == NULL, __FILE__, line, "%s: never says \"%s\"", what, bad))
        printf("#   got: %s\n", out);
}

/* A stale server's fix as a shell takes it: the words its wrapper quoted
 * (the registered command joined them by spaces, so a shell split `sh -c`'s
 * script at its &&, running `node server.js` outside wtproxy); one that
 * runs with --restart-on-stale is restarted at the next request; a
 * `.wtproxy` service is started again from its file, never by a hand-made
 * `wtproxy run` in place of the daemon's. */
static void stale_shapes(struct whoami_answer *ans, const struct whoami_fp *disk)
{
    struct whoami_target t = target(3186, 1, "/bin/sh -c cd api && node server.js");
    t.shell_command = "/bin/sh -c 'cd api && node server.js'";
    whoami_refusal_stale(&t, ans, disk, 0, 0, NULL, out, sizeof out);
    says("(or, restarted at each edit from then on: wtproxy stop --front 18000, then cd " WT
         " && wtproxy run --front 18000 --restart-on-stale -- /bin/sh -c 'cd api && node "
         "server.js')",
         "stale, sh -c", __LINE__);

    ans->no_reloader = 1;
    t.restart_on_stale = 1;
    whoami_refusal_stale(&t, ans, disk, 0, 0, NULL, out, sizeof out);
    says("wtproxy restarts it at the next request to it (it runs with --restart-on-stale), or "
         "now: cd " WT " && wtproxy restart --front 18000",
         "stale, --restart-on-stale", __LINE__);
    never_says("nothing reloads it", "stale, --restart-on-stale", __LINE__);
    never_says("wtproxy run", "stale, --restart-on-stale", __LINE__);

    t.service = "api"; /* the daemon's, from a .wtproxy */
    whoami_refusal_stale(&t, ans, disk, 0, 0, NULL, out, sizeof out);
    says("(it runs with --restart-on-stale), or now: cd " WT
         " && wtproxy restart --service api --front 18000",
         "stale, .wtproxy service", __LINE__);
    never_says("wtproxy run", "stale, .wtproxy service", __LINE__);
    whoami_refusal_stale(&t, ans, disk, 1, 0, NULL, out, sizeof out);
    says("to restart it by hand: cd " WT " && wtproxy restart --service api --front 18000",
         "stale after its restart, .wtproxy service", __LINE__);
    never_says("wtproxy run", "stale after its restart, .wtproxy service", __LINE__);
    t.restart_on_stale = 0; /* wtproxy run --service api, by hand */
    whoami_refusal_stale(&t, ans, disk, 0, 0, NULL, out, sizeof out);
    says("Restart it: cd " WT " && wtproxy restart --service api --front 18000", "stale, service",
         __LINE__);
    never_says("wtproxy run", "stale, service", __LINE__);
    snprintf(out, sizeof out, "server.js");
    whoami_refusal_trusted_stale(&t, out, sizeof out);
    says("Restart it: cd " WT " && wtproxy restart --service api --front 18000",
         "trusted stale, service", __LINE__);
    t = target(4242, 0, "node server.mjs 23833"); /* wtproxy register --service backend */
    t.service = "backend";
    whoami_refusal_stale(&t, ans, disk, 0, 0, NULL, out, sizeof out);
    says("Restart it: stop pid 4242, then cd " WT " && wtproxy restart --service backend",
         "stale, registered service", __LINE__);
    never_says("wtproxy run", "stale, registered service", __LINE__);
    ans->no_reloader = 0;
}

/* The stale page of a prefork server: a worker answered; one started by
 * hand is stopped by every process holding its socket. */
static void stale_prefork(struct whoami_answer *ans, const struct whoami_fp *disk)
{
    static const pid_t pids[] = {3180, 3188};
    struct whoami_holders h = {pids, 2};
    struct whoami_target t = target(3180, 0, "/usr/bin/gunicorn --workers 1 app:application");
    whoami_refusal_stale(&t, ans, disk, 0, 0, &h, out, sizeof out);
    says("this is your own server for " WT " (pid 3188; it shares its listening socket with pid "
         "3180, which holds the port after it exits), started ",
         "stale, prefork by hand", __LINE__);
    says("Restart it: kill 3180 3188, then cd " WT, "stale, prefork by hand", __LINE__);
    never_says("stop pid", "stale, prefork by hand", __LINE__);

    t = target(3186, 1, "/usr/bin/gunicorn --workers 1 app:application");
    whoami_refusal_stale(&t, ans, disk, 0, 0, &h, out, sizeof out);
    says("(pid 3188; it shares its listening socket with pid 3180, which holds the port after it "
         "exits)",
         "stale, prefork under wtproxy run", __LINE__);
    says("Restart it: cd " WT " && wtproxy restart --front 18000",
         "stale, prefork under wtproxy run", __LINE__);
}

/* A server stale only by files git ignores (a JSON store it writes, an
 * upload) is told the exclude of its own middleware, beside the restart:
 * the next write would stale it again. */
static void stale_ignored(void)
{
    struct whoami_answer ans = {.pid = 3188, .started_ms = 1000};
    struct whoami_file files[] = {{.path = "data/notes.json", .mtime_ns = 2000000000LL},
                                  {.path = "server.js", .mtime_ns = 500000000LL}};
    struct whoami_fp disk = {"sha256:new", 2, files, 0};
    snprintf(ans.checkout, sizeof ans.checkout, "%s", WT);
    snprintf(ans.hash, sizeof ans.hash, "sha256:old");
    struct whoami_target t = target(3186, 1, "node server.js");
    whoami_refusal_stale(&t, &ans, &disk, 0, 1, NULL, out, sizeof out);
    says("the code changed since (1 file: data/notes.json); data/notes.json is ignored by git: "
         "if the server writes it itself (a data store, uploads, a cache), it is not code: leave "
         "it out of the fingerprint: app.use(whoami({ exclude: [...DEFAULT_EXCLUDE, "
         "'**/data/**'] })), with import { whoami, DEFAULT_EXCLUDE } from 'wtproxy-whoami'",
         "stale by an ignored file, node", __LINE__);
    says("Restart it: cd " WT " && wtproxy restart --front 18000", "stale by an ignored file",
         __LINE__);
    t = target(3186, 1, "/usr/bin/python3 manage.py runserver 127.0.0.1:23833");
    files[0].path = "media/up.py";
    whoami_refusal_stale(&t, &ans, &disk, 0, 1, NULL, out, sizeof out);
    says("WTPROXY_WHOAMI = {'exclude': [*DEFAULT_EXCLUDE, '**/media/**']} in settings.py, with "
         "from wtproxy_whoami.fingerprint import DEFAULT_EXCLUDE",
         "stale by an ignored file, django", __LINE__);
    whoami_refusal_stale(&t, &ans, &disk, 0, 0, NULL, out, sizeof out);
    never_says("ignored by git", "stale by a file git does not ignore", __LINE__);
}

static void stale(void)
{
    struct whoami_answer ans = {.pid = 3188};
    struct whoami_fp disk = {"sha256:new", 0, NULL, 0};
    snprintf(ans.checkout, sizeof ans.checkout, "%s", WT);
    snprintf(ans.hash, sizeof ans.hash, "sha256:old");
    struct whoami_target t =
        target(3186, 1, "/usr/bin/python3 manage.py runserver --noreload 127.0.0.1:23833");
    whoami_refusal_stale(&t, &ans, &disk, 0, 0, NULL, out, sizeof out);
    says("Restart it: cd " WT " && wtproxy restart --front 18000", "stale, wtproxy run", __LINE__);
    says("wtproxy run --front 18000 --restart-on-stale -- /usr/bin/python3 manage.py runserver "
         "--noreload 127.0.0.1:{port}",
         "stale, wtproxy run", __LINE__);
    never_says(":23833", "stale, wtproxy run", __LINE__);

    t = target(4242, 0, "node server.mjs 23833 --max 238330");
    whoami_refusal_stale(&t, &ans, &disk, 0, 0, NULL, out, sizeof out);
    says("Restart it: stop pid 4242, then cd " WT
         " && wtproxy run --front 18000 --restart-on-stale -- node server.mjs {port} "
         "--max 238330",
         "stale, registered with a pid", __LINE__);
    stale_shapes(&ans, &disk);
    stale_prefork(&ans, &disk);
}

/* The port is another worktree's registered server, in use by its tests:
 * never told to be killed; this worktree's registration is dropped and
 * its own server started, one pasteable line where one command does it. */
static void mismatch_owned_port(const struct whoami_answer *ans)
{
    struct whoami_target t = target(0, 0, ""); /* wtproxy register --port, a TTL */
    t.other_front = 18000;
    t.other_pid = 5150;
    t.declared = 1;
    whoami_refusal_mismatch(&t, ans, NULL, NULL, out, sizeof out);
    says("is " OTHER "'s registered server (front :18000, pid 5150), in use: leave it running",
         "mismatch, another worktree's registered port", __LINE__);
    says("drop it and start your own: cd " WT " && wtproxy unregister --front 18000 && wtproxy "
         "restart --front 18000",
         "mismatch, another worktree's registered port", __LINE__);
    never_says("kill", "mismatch, another worktree's registered port", __LINE__);

    t = target(5150, 0, "node server.mjs 23833"); /* register --pid of that server */
    t.other_front = 18000;
    t.other_pid = 5150;
    whoami_refusal_mismatch(&t, ans, NULL, NULL, out, sizeof out);
    says("cd " WT " && wtproxy unregister --front 18000, then start your own server: cd " WT
         " && wtproxy run --front 18000 --restart-on-stale -- <server command with {port}>",
         "mismatch, another worktree's registered pid", __LINE__);
    never_says("kill", "mismatch, another worktree's registered pid", __LINE__);
}

/* A prefork server (gunicorn, morbo, uvicorn --workers) answers from a
 * worker, 5150: its kill alone has the master, 5140, fork another (or
 * hold the port with nobody answering). The kill names every process
 * holding its socket, and says why; the worker's pid is still named. A
 * pid that is none of them (a proxy in front, another pid namespace) is
 * killed alone, as before. */
static void mismatch_prefork(const struct whoami_answer *ans)
{
    static const pid_t pids[] = {5140, 5150, 5151};
    struct whoami_holders h = {pids, 3};
    struct whoami_target t = target(5140, 0, "/usr/bin/gunicorn --workers 2 app:application");
    t.declared = 1;
    whoami_refusal_mismatch(&t, ans, NULL, &h, out, sizeof out);
    says("the server there (pid 5150, started ", "mismatch, prefork", __LINE__);
    says("; it shares its listening socket with pids 5140 5151, which hold the port after it "
         "exits) belongs to another checkout",
         "mismatch, prefork", __LINE__);
    says("Stop it: kill 5140 5150 5151 (unless " OTHER " still needs it; its exit ends your "
         "worktree's registration of it); then start your own server: cd " WT
         " && wtproxy restart --front 18000",
         "mismatch, prefork registered with its master", __LINE__);
    never_says("registration of that port", "mismatch, prefork registered with its master",
               __LINE__);

    t = target(4000, 0, "");
    whoami_refusal_mismatch(&t, ans, NULL, &h, out, sizeof out);
    says("Stop it: kill 5140 5150 5151 (unless " OTHER " still needs it); drop your worktree's "
         "registration of that port: kill 4000",
         "mismatch, prefork registered with another pid", __LINE__);

    static const pid_t others[] = {6000, 6001};
    h = (struct whoami_holders){others, 2};
    whoami_refusal_mismatch(&t, ans, NULL, &h, out, sizeof out);
    says("Stop it: kill 5150 (unless", "mismatch, holders without the pid that answered", __LINE__);
    never_says("shares", "mismatch, holders without the pid that answered", __LINE__);
}

static void mismatch(void)
{
    struct whoami_answer ans = {.pid = 5150};
    snprintf(ans.checkout, sizeof ans.checkout, "%s", OTHER);
    struct whoami_target t = target(0, 0, "");
    whoami_refusal_mismatch(&t, &ans, NULL, NULL, out, sizeof out);
    says("kill 5150 (unless " OTHER " still needs it)", "mismatch, TTL registration", __LINE__);
    says("cd " WT " && wtproxy unregister --front 18000", "mismatch, TTL registration", __LINE__);
    says("then start your own server: cd " WT " && wtproxy run --front 18000 --restart-on-stale "
         "-- <server command with {port}>",
         "mismatch, TTL registration", __LINE__);
    never_says("kill 0", "mismatch, TTL registration", __LINE__);

    t = target(3186, 1, "sh -c 'cd ../other && exec node server.mjs 23833'");
    whoami_refusal_mismatch(&t, &ans, NULL, NULL, out, sizeof out);
    says("drop your worktree's registration of that port: cd " WT " && wtproxy stop --front 18000",
         "mismatch, wtproxy run", __LINE__);

    /* `wtproxy register --pid` of the other checkout's server, as a
     * `.wtproxy` service: one kill ends both; its start is the file's,
     * not the other server's command run from this worktree's top. */
    t = target(5150, 0, "/usr/bin/python3 manage.py runserver 127.0.0.1:23833");
    t.service = "backend";
    whoami_refusal_mismatch(&t, &ans, NULL, NULL, out, sizeof out);
    says("Stop it: kill 5150 (unless " OTHER " still needs it; its exit ends your worktree's "
         "registration of it); then start your own server: cd " WT
         " && wtproxy restart --service backend",
         "mismatch, registered service", __LINE__);
    never_says("registration of that port: kill 5150", "mismatch, registered service", __LINE__);
    never_says("manage.py runserver", "mismatch, registered service", __LINE__);

    /* `wtproxy register --pid` of another checkout's prebuilt binary: its
     * command line is that checkout's, and run here it would be verified
     * while serving that code. This worktree's .wtproxy declares the
     * server of that front: `wtproxy restart` starts it. */
    t = target(5150, 0, "/tmp/xe/goshop-b");
    whoami_refusal_mismatch(&t, &ans, NULL, NULL, out, sizeof out);
    says("then start your own server: cd " WT " && wtproxy run --front 18000 --restart-on-stale "
         "-- <server command with {port}>",
         "mismatch, another checkout's pid", __LINE__);
    never_says("goshop-b", "mismatch, another checkout's pid", __LINE__);
    t.declared = 1;
    whoami_refusal_mismatch(&t, &ans, NULL, NULL, out, sizeof out);
    says("then start your own server: cd " WT " && wtproxy restart --front 18000",
         "mismatch, declared front", __LINE__);
    never_says("wtproxy run", "mismatch, declared front", __LINE__);

    /* A wrapper of this worktree whose command runs the other's code */
    t = target(3186, 1, "");
    t.shell_command = "sh -c 'cd " OTHER "/api && exec node server.mjs {port}'";
    whoami_refusal_mismatch(&t, &ans, NULL, NULL, out, sizeof out);
    says("-- <server command with {port}>", "mismatch, cd to the other checkout", __LINE__);
    t.shell_command = OTHER "/bin/server --port {port}";
    whoami_refusal_mismatch(&t, &ans, NULL, NULL, out, sizeof out);
    says("-- <server command with {port}>", "mismatch, the other checkout's binary", __LINE__);
    t.shell_command = "sh -c 'cd api && exec node server.mjs {port}'";
    whoami_refusal_mismatch(&t, &ans, NULL, NULL, out, sizeof out);
    says("-- sh -c 'cd api && exec node server.mjs {port}'", "mismatch, its own command", __LINE__);

    /* A worktree nested inside this one (repo/.worktrees/wt-b in the main
     * checkout): inside, it reads as this worktree's unless said */
    snprintf(ans.checkout, sizeof ans.checkout, "%s", WT "/.worktrees/b");
    whoami_refusal_mismatch(&t, &ans, WT "/.worktrees/b", NULL, out, sizeof out);
    says("port 23833 is served by " WT "/.worktrees/b, not by " WT ": the server there",
         "mismatch, a nested worktree", __LINE__);
    says("belongs to another checkout (a worktree of its own, nested inside yours), so",
         "mismatch, a nested worktree", __LINE__);
    snprintf(ans.checkout, sizeof ans.checkout, "%s", WT "/.worktrees/b/api");
    whoami_refusal_mismatch(&t, &ans, WT "/.worktrees/b", NULL, out, sizeof out);
    says("belongs to another checkout (in the worktree " WT "/.worktrees/b, nested inside yours)",
         "mismatch, a folder of a nested worktree", __LINE__);
    snprintf(ans.checkout, sizeof ans.checkout, "%s", OTHER);
    mismatch_owned_port(&ans);
    mismatch_prefork(&ans);
}

/* A Vite server started by hand and registered: the plugin init writes
 * loads under wtproxy run only, so the fix is how it is started (through
 * wtproxy, or with WTPROXY_PORT), never --trust-registry, which turns the
 * gate off. */
static void no_whoami_vite_by_hand_fix(void)
{
    struct whoami_target t = target(4242, 0, "npm run dev -- --port 23833 --strictPort");
    whoami_refusal_no_whoami(&t, 404, NULL, out, sizeof out);
    says("loads only under wtproxy run, which sets WTPROXY_PORT, and this server was started "
         "without it. Start it through wtproxy: stop pid 4242, then cd " WT
         " && wtproxy run --front 18000 --restart-on-stale -- npm run dev -- --port {port} "
         "--strictPort; or, started by hand, with WTPROXY_PORT=23833 in its environment",
         "no-whoami, Vite by hand", __LINE__);
    says("A Node server needs the middleware first", "no-whoami, npm by hand", __LINE__);
    never_says("trust-registry", "no-whoami, Vite by hand", __LINE__);
    t = target(4242, 0, "node /w/app/node_modules/.bin/vite dev --port 23833");
    t.declared = 1;
    whoami_refusal_no_whoami(&t, 404, NULL, out, sizeof out);
    says("Start it through wtproxy: stop pid 4242, then cd " WT " && wtproxy restart --front 18000",
         "no-whoami, Vite by hand, declared", __LINE__);
    never_says("Node server", "no-whoami, Vite by hand, declared", __LINE__);
}

/* no-whoami: the restart first (a middleware added since the server
 * started is loaded by it), then the middleware of the server's kind. */
static void no_whoami(void)
{
    static const struct {
        const char *command, *want, *never;
    } kinds[] = {
        {"/bin/sh -c node api/server.mjs",
         "`app.use(mw)` first (Express, Connect) or `http.createServer((req, res) => mw(req, res, "
         "() => handler(req, res)))` (node:http)",
         "Django"},
        {"/bin/sh -c node_modules/.bin/vite --port 23833", "wtproxy-whoami/vite", "Django"},
        {"/usr/bin/node /w/app/node_modules/vite/bin/vite.js --port 23833", "wtproxyWhoami()",
         "app.use"},
        {"/bin/sh -c node_modules/.bin/next dev --hostname 127.0.0.1 --port 23833",
         "updates one from before Turbopack's support, which answers 501 under next dev's "
         "Turbopack) and wraps next.config.mjs in withWtproxyWhoami()",
         "app.use"},
        {"node /w/app/node_modules/.bin/next dev --port 23833", "'wtproxy-whoami/next'", "Django"},
        {"next-server (v14.2.35)", "wtproxy init --apply", "Vite"},
        {"npm run dev -- --port 23833", "for a Vite dev server, the Vite plugin", "Django"},
        {"npm run dev -- --port 23833", "const mw = whoami();`, then `app.use(mw)", "Django"},
        {"/usr/bin/python3 manage.py runserver 127.0.0.1:23833", "WhoamiMiddleware' first",
         "app.use"},
        {".venv/bin/gunicorn app:application -b 127.0.0.1:23833", "WhoamiWSGIMiddleware",
         "app.use"},
        {"python3 -m uvicorn app:app --port 23833", "WhoamiASGIMiddleware(app)", "WSGI"},
        {"./serve 23833", "Node: app.use(whoami())", NULL},
        {"./serve 23833",
         "(Go, Rust, a compiled binary), its own /__whoami (wtproxy help "
         "whoami-protocol)",
         NULL},
        /* no middleware covers these: the protocol guide, and what
         * --trust-registry would watch for them */
        {"go run . -port 23833", "wtproxy help whoami-protocol, section 1, has the recipe for Go",
         "wtproxy-whoami"},
        {"go run . -port 23833",
         "calls a Go server stale once one of its files is newer than it, watching **/*.go, "
         "**/go.mod, **/go.sum, **/go.work; not the files it embeds (//go:embed)",
         "middleware"},
        {"/bin/sh -c cargo run -- --port 23833",
         "wtproxy help whoami-protocol says what it answers", "Django"},
        {"php -S 127.0.0.1:23833", "wtproxy help whoami-protocol", "app.use"},
        {"morbo -l http://127.0.0.1:23833 app.pl",
         "wtproxy help whoami-protocol, section 1, has the recipe for a server that loads its "
         "code itself (wtproxy fingerprint --json --unknown-after-start PID",
         "middleware"},
        {"morbo -l http://127.0.0.1:23833 app.pl",
         "calls a Perl server stale once one of its files is newer than it, watching **/*.pl, "
         "**/*.pm, **/*.psgi, **/cpanfile, **/cpanfile.snapshot, **/*.ep, **/*.tt, **/*.tx, "
         "**/.env, **/.env.*",
         "Django"},
        {"/usr/bin/perl app.pl daemon", "a Perl server", "a server of another language"},
        {"node api/server.mjs", "calls a Node server stale once one of its files is newer", NULL},
        {"./serve 23833",
         "calls a server of an unknown kind stale once one of its files is newer than it, "
         "watching the sources of Go, Rust, Ruby, Node, Python and Perl servers (listed by wtproxy "
         "help config, trust_registry)",
         "**/*.rs"},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        struct whoami_target t = target(3186, 1, kinds[i].command);
        whoami_refusal_no_whoami(&t, 404, NULL, out, sizeof out);
        says(kinds[i].want, kinds[i].command, __LINE__);
        if (kinds[i].never)
            never_says(kinds[i].never, kinds[i].command, __LINE__);
    }
    struct whoami_target t = target(3186, 1, "/bin/sh -c node api/server.mjs");
    t.service = "api";
    whoami_refusal_no_whoami(&t, 404, NULL, out, sizeof out);
    says("restart it: cd " WT " && wtproxy restart --service api --front 18000. Otherwise add",
         "no-whoami, a .wtproxy service", __LINE__);
    t = target(4242, 0, "node server.mjs 23833");
    whoami_refusal_no_whoami(&t, 404, NULL, out, sizeof out);
    says("restart it: stop pid 4242, then cd " WT
         " && wtproxy run --front 18000 --restart-on-stale -- node server.mjs {port}",
         "no-whoami, registered with a pid", __LINE__);
    no_whoami_vite_by_hand_fix();
}

/* whoami-invalid: a next dev server's slow first answer is its compile */
static void invalid(void)
{
    struct whoami_target t =
        target(3186, 1, "/bin/sh -c node_modules/.bin/next dev --hostname 127.0.0.1 --port 1");
    whoami_refusal_invalid(&t, "no whole answer in time", out, sizeof out);
    says("next dev compiles /__whoami the first time it is asked", "invalid, next dev", __LINE__);
    says("ready = /__whoami in the .wtproxy", "invalid, next dev", __LINE__);
    t = target(3186, 1, "node server.mjs");
    whoami_refusal_invalid(&t, "no whole answer in time", out, sizeof out);
    says("Fix the server's /__whoami", "invalid, node", __LINE__);
    never_says("next dev", "invalid, node", __LINE__);
}

/* A server the daemon asked at its registration and that never answered:
 * a `wtproxy run` one is looked at in its log, a registered one is started
 * or its registration ended (never `kill 0` for one with a TTL only). */
static void silent(void)
{
    struct whoami_target t = target(3186, 1, "node server.mjs 23833");
    whoami_refusal_silent(&t, "Connection refused", 0, out, sizeof out);
    says("on 127.0.0.1:23833 within reload_grace (Connection refused)", "silent, wtproxy run",
         __LINE__);
    says("cd " WT " && wtproxy logs --front 18000", "silent, wtproxy run", __LINE__);
    t = target(4242, 0, "node server.mjs 23833");
    whoami_refusal_silent(&t, "Connection refused", 0, out, sizeof out);
    says("start the server for " WT " on port 23833, or end this registration: kill 4242",
         "silent, registered with a pid", __LINE__);
    t = target(0, 0, "");
    whoami_refusal_silent(&t, "Connection refused", 0, out, sizeof out);
    says("end this registration: cd " WT " && wtproxy unregister --front 18000",
         "silent, registered with a TTL", __LINE__);
    never_says("kill 0", "silent, registered with a TTL", __LINE__);
    /* Said at the first ask already: asked again, the fix the same. */
    whoami_refusal_silent(&t, "Connection refused", 1, out, sizeof out);
    says("nothing answers on 127.0.0.1:23833 yet (Connection refused)", "silent yet", __LINE__);
    says("keeps asking its /__whoami every 100 ms for reload_grace", "silent yet", __LINE__);
    says("end this registration: cd " WT " && wtproxy unregister --front 18000", "silent yet",
         __LINE__);
}

/* The error answers that are a Python traceback, and their last lines. */
static void traceback_tail(void)
{
    static const char gunicorn[] = /* its fail app's body: print_tb's frames only */
        "  File \"/usr/lib/python3/dist-packages/gunicorn/workers/base.py\", line 146, in "
        "load_wsgi\n    self.wsgi = self.app.wsgi()\n                ^^^^^^^^^^^^^^^\n"
        "  File \"/w/app/shop/wsgi.py\", line 4, in <module>\n"
        "    application = get_wsgi_application()\n"
        "  File \"<frozen importlib._bootstrap>\", line 241, in _call_with_frames_removed\n\n";
    static const char django[] = /* the technical 500 as text */
        "NameError at /__whoami\nname 'x' is not defined\n\nRequest Method: GET\n"
        "Traceback (most recent call last):\n  File \"/w/app/app/views.py\", line 3, in hello\n"
        "    return x\n\nException Type: NameError at /__whoami\n"
        "Exception Value: name 'x' is not defined\nRequest information:\nUSER: me\n";
    char tail[1024];
    ok(whoami_traceback_tail(gunicorn, sizeof gunicorn - 1, tail, sizeof tail) == 1 &&
           strncmp(tail, "    self.wsgi", 13) != 0 && strstr(tail, "_call_with_frames_removed") &&
           tail[strlen(tail) - 1] != '\n',
       "gunicorn's fail app: its last frames, the blank line after them cut");
    ok(whoami_traceback_tail(django, sizeof django - 1, tail, sizeof tail) == 1 &&
           strstr(tail, "views.py\", line 3") &&
           strstr(tail, "Exception Value: name 'x' is not defined") && !strstr(tail, "USER"),
       "Django's technical 500: up to its Exception Value, not the request's facts");
    ok(whoami_traceback_tail("Internal Server Error\n", 22, tail, sizeof tail) == 0,
       "a plain 500: no traceback");
    ok(whoami_traceback_tail(NULL, 0, tail, sizeof tail) == 0, "an empty body: none");
}

int main(void)
{
    stale();
    stale_ignored();
    mismatch();
    no_whoami();
    invalid();
    silent();
    traceback_tail();
    return done_testing();
}
