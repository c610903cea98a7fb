/* doctor_env.c - `wtproxy doctor`'s checks of what surrounds the server:
 * the inotify limits the fingerprint watcher needs, the Playwright
 * config's recipe, this worktree's leases and claimed databases with the
 * database server's connection headroom (its dev database: doctor_devdb.c),
 * and the load. */
#include <ctype.h>
#include <dirent.h>
#include <ftw.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "doctor.h"
#include "front.h"
#include "packages.h"
#include "reg_db.h"
#include "reg_pg.h"
#include "registry.h"
#include "whoami.h"

static long read_long(const char *path)
{
    char buf[64];
    long v;
    if (host_read_small_file(path, buf, sizeof buf) <= 0)
        return -1;
    buf[strcspn(buf, "\n")] = '\0';
    return cli_number(buf, 0, 1L << 40, &v) == 0 ? v : -1;
}

/* nftw gives no user argument: the walk's state, for one walk at a time. */
static struct {
    size_t root_len, dirs;
    struct timespec deadline;
    int cut;
} walk;

static int count_dir(const char *path, const struct stat *st, int type, struct FTW *f)
{
    (void)st, (void)f;
    if (type != FTW_D)
        return FTW_CONTINUE;
    const char *rel = path + walk.root_len + (path[walk.root_len] == '/');
    if (*rel && whoami_patterns_prune(whoami_default_patterns(), rel))
        return FTW_SKIP_SUBTREE;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (++walk.dirs >= DOC_WALK_MAX_DIRS || now.tv_sec > walk.deadline.tv_sec ||
        (now.tv_sec == walk.deadline.tv_sec && now.tv_nsec > walk.deadline.tv_nsec)) {
        walk.cut = 1;
        return FTW_STOP;
    }
    return FTW_CONTINUE;
}

/* Worktrees of the repository: the main checkout and common/worktrees/. */
static long worktree_count(const char *common)
{
    char path[PATH_MAX + 16];
    long n = 1;
    snprintf(path, sizeof path, "%s/worktrees", common);
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

void doc_inotify(struct doc_ctx *c, struct doc_result *r)
{
    long watches = read_long("/proc/sys/fs/inotify/max_user_watches");
    long instances = read_long("/proc/sys/fs/inotify/max_user_instances");
    if (watches < 0 || instances < 0 || !c->have_wt) {
        doc_set(r, DOC_SKIP, "%s",
                !c->have_wt ? "not in a worktree"
                            : "cannot read /proc/sys/fs/inotify/max_user_{watches,instances}");
        return;
    }
    memset(&walk, 0, sizeof walk);
    walk.root_len = strlen(c->wt.root);
    clock_gettime(CLOCK_MONOTONIC, &walk.deadline);
    walk.deadline.tv_sec += DOC_WALK_MAX_MS / 1000;
    nftw(c->wt.root, count_dir, 32, FTW_PHYS | FTW_ACTIONRETVAL);
    long trees = worktree_count(c->wt.common), need = (long)walk.dirs * trees;
    char what[256];
    snprintf(what, sizeof what,
             "%s%zu folders here (node_modules, .git, venvs left out) x %ld "
             "worktree%s = %ld watches",
             walk.cut ? "at least " : "", walk.dirs, trees, trees == 1 ? "" : "s", need);
    if (need > watches || instances < trees) {
        doc_set(r, DOC_PROBLEM,
                "%s; the limits are max_user_watches %ld, max_user_instances "
                "%ld: the fingerprint watcher misses edits past them",
                what, watches, instances);
        long want = need * 2 > 524288 ? need * 2 : 524288;
        snprintf(r->fix, sizeof r->fix,
                 "sudo sysctl fs.inotify.max_user_watches=%ld "
                 "fs.inotify.max_user_instances=%ld",
                 want, instances < 1024 ? 1024 : instances);
        return;
    }
    doc_set(r, DOC_OK, "%s, within max_user_watches %ld (max_user_instances %ld)", what, watches,
            instances);
}

/* s with each run of blanks made one space, trimmed, into out: two
 * spellings of one command compare equal. */
static void squeeze(const char *s, char *out, size_t len)
{
    size_t n = 0;
    for (s += strspn(s, " \t"); *s && n + 1 < len; s++)
        if (!strchr(" \t\n", *s) || (s[1] && !strchr(" \t\n", s[1])))
            out[n++] = strchr(" \t\n", *s) ? ' ' : *s;
    out[n] = '\0';
}

/* start past a leading `exec`: the daemon's shell replaces itself with
 * the command after it, so `exec CMD` is CMD; and `wtproxy run -- exec
 * CMD` fails, exec being the shell's and no program on PATH. */
static const char *past_exec(const char *start)
{
    start += strspn(start, " \t");
    if (strncmp(start, "exec", 4) == 0 && (start[4] == ' ' || start[4] == '\t'))
        start += 4 + strspn(start + 4, " \t");
    return start;
}

/* The .wtproxy's start as a `wtproxy run` CMD, into out: as it is when
 * it is plain words, which run execs as given; else `sh -c "START"`, as
 * the daemon runs it (`&&`, a redirection, a `VAR=value` prefix), or with
 * single quotes when START has what double quotes expand. run takes
 * either as that service's command (cli/front_pick.c). No backslash: a
 * JavaScript string, where webServer.command is, would eat it. */
static void start_as_cmd(const char *start, char *out, size_t len)
{
    static const char plain[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                                "_@%+:,./{} -=";
    if (strspn(start, plain) == strlen(start) && !memchr(start, '=', strcspn(start, " ")))
        snprintf(out, len, "%s", start);
    else if (!strpbrk(start, "\"$`\\!"))
        snprintf(out, len, "sh -c \"%s\"", start);
    else if (!strchr(start, '\''))
        snprintf(out, len, "sh -c '%s'", start);
    else
        out[0] = '\0'; /* both quotes needed: a script of its own says it better */
}

/* Whether the .wtproxy's start is the richer of the two, which the other
 * must become: it fingerprints (whoami-protocol's recipe for a compiled
 * server: `go run` in its place has no /__whoami, or answers an old
 * fp.json and loops on 409), or it holds webServer's command whole (a
 * `cd`, variables, a build before it). */
static int start_richer(const struct doc_ctx *c, const char *run_cmd)
{
    char a[1024], b[2048];
    squeeze(run_cmd, a, sizeof a);
    squeeze(c->start, b, sizeof b);
    return doc_start_fingerprints(c->wt.root, c->start) || (a[0] && strstr(b, a));
}

/* Recipe url and a .wtproxy on the same front: Playwright's readiness
 * check is a request from this worktree, so the daemon starts the
 * .wtproxy's server and webServer.command runs only when no daemon
 * answers. The same command either way is fine; two commands mean the
 * tests run against the one nobody reading the config expects (other
 * settings, another database). The fix makes the poorer one the richer:
 * webServer's the .wtproxy's start when that fingerprints or holds it. */
static void both_recipes(struct doc_ctx *c, const struct cli_playwright *pw, struct doc_result *r)
{
    char a[1024], b[1024], as_cmd[sizeof c->start + 16], quoted[1024];
    squeeze(pw->run_cmd, a, sizeof a);
    squeeze(past_exec(c->start), b, sizeof b);
    start_as_cmd(past_exec(c->start), as_cmd, sizeof as_cmd);
    squeeze(as_cmd, quoted, sizeof quoted);
    if (strcmp(a, b) == 0 || (quoted[0] && strcmp(a, quoted) == 0)) {
        doc_set(r, DOC_OK,
                "%s: recipe url, and the .wtproxy declares the same command on front %d: "
                "the daemon starts it at Playwright's readiness check; webServer.command "
                "runs when no daemon answers",
                pw->file, c->front);
        return;
    }
    doc_set(r, DOC_PROBLEM,
            "%s: webServer.command runs `%.400s` through wtproxy run, but the .wtproxy "
            "declares `%.400s` on front %d: Playwright's readiness check reaches the daemon, "
            "which starts the .wtproxy's, and webServer.command never runs while a daemon "
            "answers, so the tests run against the .wtproxy's command",
            pw->file, pw->run_cmd[0] ? pw->run_cmd : "(a command doctor cannot read)", c->start,
            c->front);
    const char *why = doc_start_fingerprints(c->wt.root, c->start)
                          ? "it fingerprints the code before the build, webServer's does not"
                          : "it runs webServer's and more";
    if (!pw->run_cmd[0] || !start_richer(c, pw->run_cmd))
        snprintf(r->fix, sizeof r->fix, "make them one command: start = %.900s in .wtproxy",
                 pw->run_cmd[0] ? pw->run_cmd : "<webServer's command>");
    else if (as_cmd[0])
        snprintf(r->fix, sizeof r->fix,
                 "make them one command, the .wtproxy's (%s): in %s write command: "
                 "`wtproxy run --front %d -- %.700s`",
                 why, pw->file, c->front, as_cmd);
    else
        snprintf(r->fix, sizeof r->fix,
                 "make them one command, the .wtproxy's (%s): move its start into a script and "
                 "run it from both: start = ./dev-server.sh {port} in .wtproxy, and in %s "
                 "command: 'wtproxy run --front %d -- ./dev-server.sh {port}'",
                 why, pw->file, c->front);
}

/* Whether the .wtproxy of root declares a service on port, its fronts
 * into list (":15174 (web), :18001 (api)"); 1 when it cannot tell (no
 * file the daemon takes), so that only a known miss is said. A baseURL on
 * no front is never the daemon's: the tests reach whatever listens there,
 * and with reuseExistingServer every worktree's run reuses the first
 * one's server, testing its code. */
static int declares_front(const char *root, int port, char *list, size_t len)
{
    struct cli_wtproxy w;
    cli_wtproxy_read(root, &w);
    int yes = !w.file || wtfile_by_front(w.file, port);
    cli_wtproxy_list(&w, list, len);
    cli_wtproxy_free(&w);
    return yes;
}

/* The first port Playwright's run calls that the .wtproxy declares no
 * service on: the tests' own (baseURL, else webServer.url), *entry NULL;
 * else a webServer entry's url (an API's readiness url on 3001 beside its
 * service on 8101: Playwright runs the entry's command itself there),
 * *entry its command. 0 when each is a front. */
static int undeclared(const struct doc_ctx *c, const struct cli_playwright *pw, char *fronts,
                      size_t len, const char **entry)
{
    *entry = NULL;
    if (pw->front && !declares_front(c->wt.root, pw->front, fronts, len))
        return pw->front;
    for (int i = 0; i < pw->nservers; i++)
        if (pw->server[i].port && !declares_front(c->wt.root, pw->server[i].port, fronts, len)) {
            *entry = pw->server[i].command[0] ? pw->server[i].command : "...";
            return pw->server[i].port;
        }
    return 0;
}

/* Recipe url, whose webServer.command runs `wtproxy run` by that name in
 * Playwright's shell: from a build folder (the README's first command) it
 * finds none there, or another install (other). prog: this binary. */
static void not_found(const char *f, const char *prog, const char *other, struct doc_result *r)
{
    if (other[0])
        doc_set(r, DOC_PROBLEM,
                "%s: webServer.command runs `wtproxy run`, and Playwright's shell runs %s, "
                "the first wtproxy on PATH, not this one",
                f, other);
    else
        doc_set(r, DOC_PROBLEM,
                "%s: webServer.command runs `wtproxy run`, and no wtproxy is on PATH: "
                "Playwright's shell will not find it",
                f);
    snprintf(r->fix, sizeof r->fix, "export PATH=%.*s:$PATH (or install this one: README)",
             (int)(strrchr(prog, '/') - prog), prog);
}

/* A config without wtproxy's reporter: a test whose page swallowed a
 * refused fetch fails on an unrelated assertion, and only the reporter
 * puts what wtproxy refused under the failure. Said, not a problem: the
 * config works without it. */
static void reporter_note(const struct cli_playwright *pw, struct doc_result *r)
{
    size_t used = strlen(r->detail);
    if (r->status == DOC_OK && !strstr(pw->text ? pw->text : "", "wtproxy-whoami/playwright"))
        snprintf(r->detail + used, sizeof r->detail - used,
                 "; to see under a failed test what wtproxy refused during it, add "
                 "['wtproxy-whoami/playwright'] to its reporter list (wtproxy help playwright)");
}

/* A config that names wtproxy's reporter, in a folder from which Node
 * does not resolve it: the run fails at once ("Cannot find module
 * 'wtproxy-whoami/playwright'"). The app's folder has the package linked
 * (the middleware check's fix), but a top folder's config is resolved from
 * the top, and a new worktree has neither. */
static void reporter_resolves(const struct doc_ctx *c, const struct cli_playwright *pw,
                              struct doc_result *r)
{
    char found[2 * PATH_MAX + 64], link[3 * PATH_MAX];
    if (r->status == DOC_PROBLEM ||
        !strstr(pw->text ? pw->text : "", "wtproxy-whoami/playwright") ||
        doc_node_resolve(c->wt.root, found, sizeof found) == 0)
        return;
    /* init's entry resolves it first, and is none where it is not found */
    int guarded = strstr(pw->text, ".resolve('wtproxy-whoami/playwright')") != NULL;
    doc_set(r, DOC_PROBLEM,
            "%s names the reporter 'wtproxy-whoami/playwright', which Node does not find from "
            "%s: no node_modules/wtproxy-whoami there or in a folder above it (node_modules is "
            "per worktree, and an app folder's link serves that folder only); %s",
            pw->file, c->wt.root,
            guarded ? "its entry is then none: a run that no daemon answered passes on whatever "
                      "code answered, and a failed test says nothing of what wtproxy refused"
                    : "the test run would stop at once (\"Cannot find module "
                      "'wtproxy-whoami/playwright'\")");
    if (whoami_node_link(c->wt.root, link, sizeof link) < 0 || strlen(link) >= sizeof r->fix)
        snprintf(r->fix, sizeof r->fix, "wtproxy help whoami");
    else
        memcpy(r->fix, link, strlen(link) + 1);
}

/* Whether cmd names port as a whole number: `npm run dev -- --port 8410
 * --strictPort` binds the front port itself. */
static int names_port(const char *cmd, int port)
{
    char n[8];
    size_t len = (size_t)snprintf(n, sizeof n, "%d", port);
    for (const char *p = strstr(cmd, n); p; p = strstr(p + 1, n))
        if ((p == cmd || !isdigit((unsigned char)p[-1])) && !isdigit((unsigned char)p[len]))
            return 1;
    return 0;
}

/* The webServer command of pw that binds front itself, not through
 * `wtproxy run` (a config from before adoption, a .wtproxy copied in
 * since): NULL none. Playwright runs it whenever the daemon's answer to
 * its readiness check is not a success (a refusal: "Port 8410 is already
 * in use"), and with no daemon it takes the front for every worktree.
 * One object's only, the command `wtproxy init --apply` writes; a
 * webServer array's entries are a top folder's subfolder apps, which init
 * leaves as they are (reused from the daemon's port). Any front of the
 * .wtproxy, or the package script the command runs: a monorepo's
 * `npm run dev -w @big/web -- --port 8730`, on its web service's front,
 * was "ok" while doctor checked its api's, and with the daemon stopped a
 * worktree's tests passed on another's web server. The front it binds
 * into *front, and that front's start into *start. */
static const char *binds_front(const struct doc_ctx *c, const struct cli_playwright *pw, int *front,
                               const char **start)
{
    char run[sizeof pw->command + 1024];
    if (pw->uses_run || !pw->command[0])
        return NULL;
    cli_script_command(c->wt.root, pw->command, run, sizeof run);
    for (int k = 0; k < c->nfronts; k++)
        if (names_port(pw->command, c->fronts[k]) || names_port(run, c->fronts[k])) {
            *front = c->fronts[k];
            *start = c->front_start[k];
            return pw->command;
        }
    if (c->front <= 0 || (!names_port(pw->command, c->front) && !names_port(run, c->front)))
        return NULL;
    *front = c->front;
    *start = c->start;
    return pw->command;
}

/* The entry of a webServer array that binds one of the .wtproxy's fronts
 * itself, its command or the package script it runs (`npm run dev:web`,
 * whose script is `vite --port 8490 --strictPort`) naming that port, not
 * through `wtproxy run`: its index, the front into *front and what it
 * runs into run; -1 none. Seen with a Vite front end and its API: with
 * the daemon stopped, each worktree's run started both on the fronts,
 * the first to bind won, and a worktree's tests passed on another's API. */
static int entry_binding_front(const struct doc_ctx *c, const struct cli_playwright *pw, int *front,
                               char *run, size_t len)
{
    for (int i = 0; i < pw->nservers; i++) {
        const char *cmd = pw->server[i].command;
        if (!cmd[0] || strstr(cmd, "wtproxy run"))
            continue;
        cli_script_command(c->wt.root, cmd, run, len);
        for (int k = 0; k < c->nfronts; k++)
            if (names_port(run, c->fronts[k])) {
                *front = k;
                return i;
            }
    }
    return -1;
}

/* cmd with each whole-number port in it written {port}, into out. */
static void with_port(const char *cmd, int port, char *out, size_t len)
{
    char n[8];
    size_t k = (size_t)snprintf(n, sizeof n, "%d", port), used = 0;
    for (const char *p = cmd; *p && used + 7 < len;) {
        if ((p == cmd || !isdigit((unsigned char)p[-1])) && strncmp(p, n, k) == 0 &&
            !isdigit((unsigned char)p[k])) {
            used += (size_t)snprintf(out + used, len - used, "{port}");
            p += k;
        } else {
            out[used++] = *p++;
        }
    }
    out[used] = '\0';
}

static void say_entry_binds(const struct doc_ctx *c, const struct cli_playwright *pw, int i, int k,
                            const char *run, struct doc_result *r)
{
    const char *cmd = pw->server[i].command;
    int same = strcmp(run, cmd) == 0;
    doc_set(r, DOC_PROBLEM,
            "%s: its webServer entry `%.300s`%s%.300s%s binds port %d itself, a front port "
            "wtproxy listens on: whenever a daemon holds it, Playwright's run of it fails "
            "(\"Port %d is already in use\"), and with no daemon every worktree's run starts "
            "its own there, the first to bind wins, and the others' tests run on that "
            "worktree's code",
            pw->file, cmd, same ? "" : " runs `", same ? "" : run, same ? "" : "`, which",
            c->fronts[k], c->fronts[k]);
    char cmdline[1024];
    /* Its own command with {port}: it runs where the entry's cwd says,
     * which the .wtproxy's start (from the worktree's top) may not; a
     * script's port, fixed in package.json, takes the service's start. */
    if (same)
        with_port(cmd, c->fronts[k], cmdline, sizeof cmdline);
    else
        start_as_cmd(past_exec(c->front_start[k]), cmdline, sizeof cmdline);
    snprintf(r->fix, sizeof r->fix,
             "in that entry write command: 'wtproxy run --front %d -- %.900s'", c->fronts[k],
             cmdline[0] ? cmdline : "<server command with {port}>");
}

/* The front the config's `wtproxy run` registers on, as run picks it: its
 * --front; else the .wtproxy's one service's, or of several the one whose
 * start it runs (0 when none is: run refuses, naming each); else the
 * daemon's one port; else 8000. */
static int run_front(const struct doc_ctx *c, const struct cli_playwright *pw)
{
    if (pw->run_front)
        return pw->run_front;
    if (c->nfronts == 1)
        return c->fronts[0];
    if (c->nfronts > 1)
        return c->start[0] && strcmp(c->start, pw->run_cmd) == 0 ? c->front : 0;
    int daemon = cli_daemon_port(c->ping);
    return daemon ? daemon : WTP_DEFAULT_FRONT_PORT;
}

void doc_playwright(struct doc_ctx *c, struct doc_result *r)
{
    struct cli_playwright pw;
    const char *entry, *bound_start = "";
    int bound = 0;
    char fronts[512], prog[PATH_MAX], other[PATH_MAX], run[1024];
    int port, i, k;
    if (!c->have_wt) {
        doc_set(r, DOC_SKIP, "not in a worktree");
        return;
    }
    cli_playwright_read(c->wt.root, &pw);
    const char *f = pw.file;
    int front = run_front(c, &pw);
    if (!f[0])
        doc_set(r, DOC_SKIP, "no playwright.config.{ts,js,mjs,cjs} here");
    else if (!pw.web_server)
        doc_set(r, DOC_OK,
                "%s has no webServer: start the server with wtproxy run or the "
                ".wtproxy",
                f);
    else if (pw.uses_run && pw.has_url && pw.url_port && front && pw.url_port != front) {
        doc_set(r, DOC_PROBLEM,
                "%s: webServer.command's `wtproxy run` registers its server on front %d, "
                "but webServer.url is on port %d: Playwright waits there for a server "
                "that is never routed to",
                f, front, pw.url_port);
        snprintf(r->fix, sizeof r->fix, "in webServer.command write: wtproxy run --front %d -- ...",
                 pw.url_port);
    } else if (c->has_file && !pw.uses_run &&
               (port = undeclared(c, &pw, fronts, sizeof fronts, &entry))) {
        if (!entry)
            doc_set(r, DOC_PROBLEM,
                    "%s: its tests go to port %d (%s), which the .wtproxy declares no service "
                    "on (its fronts: %s): the daemon never sees them, so every worktree's run "
                    "reuses (or collides with) the one server there, another worktree's code",
                    f, port, pw.base_port ? "baseURL" : "webServer.url", fronts);
        else
            doc_set(r, DOC_PROBLEM,
                    "%s: its webServer entry `%.300s` waits for port %d, which the .wtproxy "
                    "declares no service on (its fronts: %s): the daemon never sees it, so "
                    "Playwright runs that command itself there, outside wtproxy, and every "
                    "worktree's run reuses (or collides with) the one server there, another "
                    "worktree's code",
                    f, entry, port, fronts);
        snprintf(r->fix, sizeof r->fix,
                 "front = %d in the .wtproxy's service for that server (or that url on its "
                 "service's front), then restart the daemon so that it listens there (this "
                 "doctor's daemon check prints the command)",
                 port);
    } else if (c->has_file && (i = entry_binding_front(c, &pw, &k, run, sizeof run)) >= 0) {
        say_entry_binds(c, &pw, i, k, run, r);
    } else if (pw.run_by_name && pw.has_url &&
               host_self_program(prog, sizeof prog, other, sizeof other) == 1)
        not_found(f, prog, other, r);
    else if (pw.uses_run && pw.has_url && c->start[0] && front == c->front &&
             (pw.run_front || pw.run_cmd[0])) /* a front inferred, a command unread: unknown */
        both_recipes(c, &pw, r);
    else if (pw.uses_run && pw.has_url)
        doc_set(r, DOC_OK, "%s: recipe url, webServer.command runs `wtproxy run`%s", f,
                pw.reuse ? ""
                         : " (reuseExistingServer is off: a second run in this "
                           "worktree is refused while the first runs)");
    else if (c->has_file && (entry = binds_front(c, &pw, &bound, &bound_start))) {
        doc_set(r, DOC_PROBLEM,
                "%s: webServer.command `%.300s` binds port %d itself, the front port wtproxy "
                "listens on: whenever a daemon holds it, Playwright's run of it fails (\"Port "
                "%d is already in use\"), and with no daemon it takes the front port for every "
                "worktree",
                f, entry, bound, bound);
        char as_cmd[sizeof c->start + 16] = "";
        if (bound_start[0]) /* quoted when it is a shell line: cut at its &&, run wrapped mkdir */
            start_as_cmd(past_exec(bound_start), as_cmd, sizeof as_cmd);
        int both = strchr(as_cmd, '\'') && strchr(as_cmd, '"'); /* in no '' or "" string */
        snprintf(r->fix, sizeof r->fix,
                 "in webServer.command write%s: wtproxy run --front %d -- %.850s",
                 both ? ", between backquotes" : "", bound,
                 as_cmd[0]        ? as_cmd
                 : bound_start[0] ? "sh ./start.sh (a script holding the .wtproxy's start, which "
                                    "needs both quotes)"
                                  : "<server command with {port}>");
    } else if (c->has_file && pw.reuse)
        doc_set(r, DOC_OK,
                "%s: recipe %s with a .wtproxy: the first request starts this "
                "worktree's own server, which is then reused",
                f, pw.has_port ? "port" : "url");
    else {
        doc_set(r, DOC_PROBLEM, "%s: webServer %s without wtproxy: %s", f,
                pw.has_port ? "port" : "url",
                pw.reuse ? "reuseExistingServer with a fixed port reuses whatever server holds "
                           "it, maybe another worktree's"
                         : "parallel worktrees collide on the fixed port");
        if (c->has_file && !pw.uses_run) /* init's recipe port leaves the config: its note */
            snprintf(r->fix, sizeof r->fix,
                     "reuseExistingServer: true in %s's webServer: its tests then reuse the "
                     ".wtproxy's server, the daemon's on that port",
                     f);
        else
            doc_init_fix(c, r->fix, sizeof r->fix);
    }
    reporter_resolves(c, &pw, r);
    reporter_note(&pw, r);
    free(pw.text);
}

/* The fix of an unreadable lease store (why: its error): with a
 * PostgreSQL registry, that server made to answer (rerunning `wtproxy
 * leases` fixed nothing), or, when it answered that its role lacks a
 * right, the GRANT (a server that runs was said to be started); the
 * daemon routes on from its own copy meanwhile. */
static void leases_fix(struct doc_result *r, const char *why)
{
    char uri[REG_PG_URI_MAX], err[512], host[256], port[32];
    if (reg_pg_configured(uri, sizeof uri, err, sizeof err) <= 0) {
        snprintf(r->fix, sizeof r->fix, "wtproxy leases");
        return;
    }
    if (reg_pg_denied(why)) {
        reg_pg_uri_grant_fix(uri, why, r->fix, sizeof r->fix);
        return;
    }
    reg_pg_where(uri, host, sizeof host, port, sizeof port);
    snprintf(r->fix, sizeof r->fix,
             "the registry at %s:%s does not answer: start it, and check that it answers: "
             "pg_isready -h %s -p %s (meanwhile routing goes on from the daemon's own copy; "
             "claims are refused until it answers)",
             host, port, host, port);
}

void doc_leases(struct doc_ctx *c, struct doc_result *r)
{
    void *pg = NULL;
    char err[1536];
    json_t *all = NULL;
    int opened = cli_lease_open(&pg, err, sizeof err) == 0;
    if (opened && !pg && !c->ping) { /* the embedded store is the daemon's: never start one */
        doc_set(r, DOC_SKIP, "no daemon and no PostgreSQL registry: no lease store to ask");
        return;
    }
    if (!opened || !(all = cli_lease_list(pg, err, sizeof err))) {
        doc_set(r, DOC_PROBLEM, "the lease store cannot be read: %s", err);
        leases_fix(r, err);
        cli_lease_close(pg);
        return;
    }
    cli_lease_close(pg);
    char mine[1024] = "", others[1024] = "";
    size_t i, n_mine = 0, n_others = 0;
    json_t *l;
    json_array_foreach(all, i, l) {
        const char *id = json_string_value(json_object_get(l, "id"));
        const char *w = json_string_value(json_object_get(l, "worktree"));
        int is_mine = c->have_wt && w && strcmp(w, c->wt.root) == 0;
        char *buf = is_mine ? mine : others;
        size_t len = strlen(buf);
        snprintf(buf + len, sizeof mine - len, "%s%s%s%s", len ? ", " : "", id ? id : "?",
                 is_mine ? "" : " by ", is_mine ? "" : (w ? w : "?"));
        is_mine ? n_mine++ : n_others++;
    }
    doc_set(r, DOC_OK, "this worktree holds %zu lease%s%s%s; others hold %zu%s%s", n_mine,
            n_mine == 1 ? "" : "s", n_mine ? ": " : "", mine, n_others, n_others ? ": " : "",
            others);
    json_decref(all);
}

/* One row of one column as a long, -1 when not there. */
static long pg_long(PGresult *res, int col)
{
    long v;
    const char *s = PQntuples(res) == 1 ? PQgetvalue(res, 0, col) : NULL;
    return s && cli_number(s, 0, 1L << 40, &v) == 0 ? v : -1;
}

/* The databases stamped by wtproxy db claim ('wtproxy:<machine>:<id>:
 * <worktree>|<field>', registry/CLAIMS.md), each with its kind (a dev
 * database is no test database): this worktree's into mine, the others'
 * with their owners into others, those of a worktree gone from this
 * machine said so, as `db ls` does. Returns how many are. */
static int stamped(struct doc_ctx *c, PGconn *conn, char *mine, char *others, size_t len)
{
    int n_gone = 0;
    PGresult *res = PQexec(conn, "SELECT datname, shobj_description(oid, 'pg_database') "
                                 "FROM pg_database WHERE shobj_description(oid, 'pg_database') "
                                 "LIKE 'wtproxy:%' ORDER BY 1");
    for (int i = 0; PQresultStatus(res) == PGRES_TUPLES_OK && i < PQntuples(res); i++) {
        static struct reg_db_owner o; /* PATH_MAX and more: not on the stack */
        if (reg_db_parse_stamp(PQgetvalue(res, i, 1), &o) < 0)
            continue;
        int is_mine = c->have_wt && strcmp(o.worktree, c->wt.root) == 0;
        char *buf = is_mine ? mine : others;
        size_t n = strlen(buf);
        int wlen = is_mine ? 0 : (int)strlen(o.worktree); /* %.*s: gcc would warn of a cut %s */
        int is_gone = !is_mine && reg_db_owner_gone(&o, reg_machine_id());
        n_gone += is_gone;
        snprintf(buf + n, len - n, "%s%s (%s%s%.*s%s)", n ? ", " : "", PQgetvalue(res, i, 0),
                 reg_db_kind_name(o.kind), is_mine ? "" : ", ", wlen, o.worktree,
                 is_gone ? ", gone" : "");
    }
    PQclear(res);
    return n_gone;
}

/* max_connections against what is in use, and the stamped databases. */
static void headroom(struct doc_ctx *c, PGconn *conn, const char *where, struct doc_result *r)
{
    PGresult *res = PQexec(conn, "SELECT current_setting('max_connections'), "
                                 "current_setting('superuser_reserved_connections'), "
                                 "(SELECT count(*) FROM pg_stat_activity)");
    long max = pg_long(res, 0), reserved = pg_long(res, 1), used = pg_long(res, 2);
    PQclear(res);
    if (max < 0 || reserved < 0 || used < 0) {
        doc_set(r, DOC_PROBLEM, "%s: cannot read max_connections: %s", where, PQerrorMessage(conn));
        snprintf(r->fix, sizeof r->fix, "psql -c 'SHOW max_connections'");
        return;
    }
    char mine[1024] = "", others[1024] = "", gone[160] = "";
    int n_gone = stamped(c, conn, mine, others, sizeof mine);
    long left = max - reserved - used;
    if (n_gone) /* not this worktree's problem: a note, with what frees them */
        snprintf(gone, sizeof gone,
                 "; note: %d of them %s of worktrees gone from this machine (wtproxy db release "
                 "--abandoned drops them)",
                 n_gone, n_gone == 1 ? "is" : "are");
    doc_set(r, left < DOC_PG_FREE_MIN ? DOC_PROBLEM : DOC_OK,
            "%s: %ld of max_connections %ld in use (%ld reserved), %ld left%s; this worktree's "
            "databases: %s; others': %s%s",
            where, used, max, reserved, left,
            left < DOC_PG_FREE_MIN ? ": a test run with parallel workers will be refused" : "",
            mine[0] ? mine : "none", others[0] ? others : "none", gone);
    if (left < DOC_PG_FREE_MIN)
        snprintf(r->fix, sizeof r->fix,
                 "psql -c 'ALTER SYSTEM SET max_connections = %ld' and "
                 "restart PostgreSQL (or stop idle dev servers: wtproxy ls)",
                 max * 2);
    if (left >= DOC_PG_FREE_MIN)
        doc_dev_database(c, conn, r);
}

/* $name when set and not empty, else NULL. */
static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

void doc_databases(struct doc_ctx *c, struct doc_result *r)
{
    const char *server = env("WTPROXY_DB_SERVER");
    if (!server && !env("PGHOST") && !env("PGPORT") && !env("PGSERVICE") && !env("PGDATABASE")) {
        doc_set(r, DOC_SKIP,
                "no database server named (WTPROXY_DB_SERVER or PGHOST/PGPORT, as "
                "wtproxy db claim takes it)");
        return;
    }
    const char *keys[] = {"dbname", "connect_timeout", "options", "application_name", NULL};
    const char *vals[] = {server ? server : "postgres", DOC_PG_TIMEOUT_S,
                          "-c statement_timeout=" DOC_PG_STATEMENT_MS, "wtproxy doctor", NULL};
    char where[512];
    if (server)
        reg_pg_mask(server, where, sizeof where);
    else
        snprintf(where, sizeof where, "the PG* server (host %s, port %s)",
                 env("PGHOST") ? env("PGHOST") : "default", env("PGPORT") ? env("PGPORT") : "5432");
    PGconn *conn = PQconnectdbParams(keys, vals, 1);
    if (PQstatus(conn) != CONNECTION_OK) {
        doc_set(r, DOC_PROBLEM, "%s cannot be reached: %s", where,
                conn ? PQerrorMessage(conn) : "out of memory");
        r->detail[strcspn(r->detail, "\n")] = '\0';
        snprintf(r->fix, sizeof r->fix,
                 "pg_isready%s%s (then start PostgreSQL, or fix "
                 "WTPROXY_DB_SERVER)",
                 server ? " -d " : "", server ? "\"$WTPROXY_DB_SERVER\"" : "");
    } else {
        headroom(c, conn, where, r);
    }
    PQfinish(conn);
}

void doc_load(struct doc_ctx *c, struct doc_result *r)
{
    (void)c;
    double load[1];
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (getloadavg(load, 1) != 1 || cpus < 1) {
        doc_set(r, DOC_SKIP, "cannot read the load average");
        return;
    }
    double per = load[0] / (double)cpus;
    doc_set(r, per > DOC_LOAD_PER_CPU_MAX ? DOC_PROBLEM : DOC_OK,
            "load %.2f over 1 minute on %ld CPU%s: %.2f per CPU%s", load[0], cpus,
            cpus == 1 ? "" : "s", per,
            per > DOC_LOAD_PER_CPU_MAX ? "; servers start slowly and timing-sensitive tests fail"
                                       : "");
    if (per > DOC_LOAD_PER_CPU_MAX)
        snprintf(r->fix, sizeof r->fix,
                 "run fewer test runs at once (playwright test "
                 "--workers 1), and look at what runs: top -o %%CPU");
}
