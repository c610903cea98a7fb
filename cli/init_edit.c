/* init_edit.c - the edits `wtproxy init` makes to an app, as new file
 * texts: the .wtproxy file, the whoami middleware line and the dev-database
 * lines of Django settings (FastAPI's, Starlette's and Flask's whoami
 * wrap: init_python.c; a Vite config's plugin: init_vite_plugin.c;
 * Next's: init_next.c), and the Playwright webServer command of recipe
 * "url". Each edit is made only where the file has the literal form we
 * can edit safely; elsewhere a note says what to do by hand. An edit
 * already made is recognised by its distinctive text, so a second run
 * changes nothing.
 *
 * Every line we add carries a comment saying why, and that it must stay:
 * an agent tidying the file later must not "simplify" a {port} back into
 * a fixed port, or drop the middleware the gate needs. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "init.h"

#define MIDDLEWARE_CLASS "wtproxy_whoami.django.WhoamiMiddleware"
#define TEST_RUNNER_CLASS "wtproxy_whoami.django_db.ClaimingTestRunner"
#define CLAIMED_CALL "claimed_databases(DATABASES)"
#define SERVICE_NAME_MAX 33 /* 1-32 characters and the NUL, as the daemon reads them */

const char init_why_file[] =
    "# wtproxy: the daemon starts THIS worktree's dev server on a port it picks ({port}); a "
    "fixed port would serve another worktree's code under parallel worktrees - do not "
    "simplify\n";
static const char why_middleware[] =
    "# wtproxy: answers /__whoami so wtproxy routes only to a server of this checkout's "
    "current code; without it requests are refused - do not remove\n";
static const char why_runner[] =
    "# wtproxy: each worktree's tests claim their own test database; a shared one breaks "
    "parallel runs - do not remove\n";
static const char why_databases[] =
    "# wtproxy: this worktree's claimed database names; a fixed name comes back wrong under "
    "parallel worktrees - do not remove\n";
static const char why_caches[] =
    "# wtproxy: this worktree's own cache keys; a cache shared by worktrees serves one "
    "branch's cached pages and sessions to another's tests - do not remove\n";
static const char why_playwright[] =
    "// wtproxy: starts this worktree's server on a port wtproxy picks and routes the "
    "baseURL's port to it; a fixed port here serves another worktree's code - do not "
    "simplify\n";

void init_note(struct init_plan *p, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_array_append_new(p->notes, json_string(buf));
}

void init_put(struct init_text *t, const char *s, size_t n)
{
    /* a length near SIZE_MAX (one gone negative) would wrap the doubled sum
     * below: out of memory, never a memcpy of it. gcc's LTO saw that path
     * and warned at every meson install */
    if (t->oom || n > SIZE_MAX / 4 - t->len) {
        t->oom = 1;
        return;
    }
    if (t->len + n + 1 > t->cap) {
        size_t cap = (t->len + n + 1) * 2;
        char *s2 = realloc(t->s, cap);
        if (!s2) {
            t->oom = 1;
            return;
        }
        t->s = s2, t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

void init_puts(struct init_text *t, const char *s)
{
    init_put(t, s, strlen(s));
}

int init_add_change(struct init_plan *p, const char *path, char *old, struct init_text *t)
{
    if (t->oom || p->n == INIT_MAX_CHANGES) {
        free(old);
        free(t->s);
        return -1;
    }
    struct init_change *c = &p->ch[p->n++];
    snprintf(c->path, sizeof c->path, "%s", path);
    c->old = old;
    c->new = t->s;
    return 0;
}

/* The start of the line at column 0 beginning with "NAME" then blanks and
 * '=', or NULL. */
static const char *assignment(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *l = text; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (strncmp(l, name, n) == 0 && l[n + strspn(l + n, " \t")] == '=')
            return l;
    return NULL;
}

/* A service's name from its url's first path segment ("/api/health":
 * "api"), else "port<N>"; never one of the n names already taken. */
static void service_name(const struct cli_pw_server *sv, char taken[][SERVICE_NAME_MAX], int n,
                         char *out, size_t outlen)
{
    size_t len = strspn(sv->path + (sv->path[0] == '/'), "abcdefghijklmnopqrstuvwxyz0123456789-_");
    snprintf(out, outlen, "%.*s", len < 32 ? (int)len : 32, sv->path + (sv->path[0] == '/'));
    for (int i = 0; i < n && out[0]; i++)
        if (strcmp(taken[i], out) == 0)
            out[0] = '\0';
    if (!out[0])
        snprintf(out, outlen, "port%d", sv->port);
}

/* Next compiles a route when it is first asked for, seconds on a busy
 * machine: its server is ready once /__whoami answers, not once it
 * listens, or the first requests meet a whoami-invalid timeout. */
static const char *next_ready(const struct init_plan *p)
{
    return p->app.kind == CLI_APP_NEXT ? "ready = /__whoami\n" : "";
}

/* A Playwright config that starts several servers (a front end on the
 * baseURL's port and its API on another): one [service] each, the front
 * end started after the others, so that each worktree's front end calls
 * its own worktree's API through the API's front. */
static void services_text(struct init_plan *p, struct init_text *t)
{
    const struct cli_playwright *pw = &p->app.pw;
    /* line holds a start command (1024) and the after list (400) */
    char names[CLI_PW_MAX_SERVERS][SERVICE_NAME_MAX], line[1600], after[400] = "";
    char listen[200] = "";
    int n = 0;
    snprintf(listen, sizeof listen, " --listen %d", p->front);
    for (int i = 0; i < pw->nservers; i++) {
        const struct cli_pw_server *sv = &pw->server[i];
        if (sv->port == p->front)
            continue; /* the front end: app.start, below */
        if (!sv->port || !sv->command[0] || strstr(sv->command, "{port}")) {
            init_note(p,
                      "%s: webServer entry %d has no literal command and url port; declare "
                      "it in .wtproxy by hand as a [service NAME] (wtproxy help wtproxy-file)",
                      pw->file, i + 1);
            continue;
        }
        service_name(sv, names, n, names[n], sizeof names[n]);
        snprintf(line, sizeof line, "\n[service %s]\nstart = %s\nfront = %d\n%s%s%s", names[n],
                 sv->command, sv->port, sv->path[0] ? "ready = " : "", sv->path,
                 sv->path[0] ? "\n" : "");
        init_puts(t, line);
        init_note(p,
                  "service %s: `%s` must listen on $PORT (wtproxy sets it) on 127.0.0.1, "
                  "not on %d: the daemon owns that port",
                  names[n], sv->command, sv->port);
        init_service_whoami(p, names[n], sv->command);
        size_t u = strlen(after), l = strlen(listen);
        snprintf(after + u, sizeof after - u, "%s%s", u ? ", " : "", names[n]);
        snprintf(listen + l, sizeof listen - l, " --listen %d", sv->port);
        n++;
    }
    snprintf(line, sizeof line, "\n[service web]\nstart = %s\nfront = %d\n%s%s%s%s", p->app.start,
             p->front, n ? "after = " : "", after, n ? "\n" : "", next_ready(p));
    init_puts(t, line);
    init_note(p,
              "%s starts %d servers: each is a service of the .wtproxy, and the daemon must "
              "own every front: wtproxy serve%s",
              pw->file, pw->nservers, listen);
}

/* The .wtproxy file: a new one, or a note when one is there already (it
 * is the project's: never overwritten). */
static int plan_wtproxy_file(struct init_plan *p)
{
    struct init_text t = {0};
    char path[PATH_MAX], err[PATH_MAX + 64], line[1200];
    if (p->top[0]) /* a .wtproxy here would never be read: init_top.c edits the top one */
        return 0;
    init_puts(&t, init_why_file);
    if (p->app.pw.nservers > 1) {
        services_text(p, &t);
    } else {
        snprintf(line, sizeof line, "start = %s\nfront = %d\n%s", p->app.start, p->front,
                 next_ready(p));
        init_puts(&t, line);
    }
    char *now = cli_join(path, sizeof path, p->dir, ".wtproxy") < 0
                    ? NULL
                    : cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
    if (!now && errno != ENOENT) {
        init_note(p, ".wtproxy: left alone: %s", err);
    } else if (now && t.s && strcmp(now, t.s) != 0) {
        init_note(p,
                  ".wtproxy: already there with other content; left as it is (wtproxy "
                  "would write \"start = %s\", \"front = %d\")",
                  p->app.start, p->front);
    } else if (!now) {
        return init_add_change(p, ".wtproxy", NULL, &t);
    }
    free(now);
    free(t.s);
    return t.oom ? -1 : 0;
}

/* Insert the middleware as MIDDLEWARE's first entry, after a line
 * `MIDDLEWARE = [` (a trailing comment allowed), indented as the next
 * line; or, for a list whose entries begin on that line (`MIDDLEWARE =
 * ['django.middleware.common.CommonMiddleware']`), after its `[`, with
 * *same_line set: the entry then goes on a line of its own, and those
 * entries on the next. Returns the offset to insert at with its indent,
 * or -1. */
static long middleware_spot(const char *text, char *indent, size_t indentlen, int *same_line)
{
    const char *l = assignment(text, "MIDDLEWARE");
    *same_line = 0;
    if (!l)
        return -1;
    const char *p = strchr(l, '=') + 1;
    p += strspn(p, " \t");
    if (*p != '[')
        return -1;
    p += 1 + strspn(p + 1, " \t");
    if (*p != '\n' && *p != '#') { /* entries on the same line */
        *same_line = 1;
        snprintf(indent, indentlen, "    ");
        return (long)(p - text);
    }
    const char *next = strchr(p, '\n') + 1;
    size_t n = strspn(next, " \t");
    if (n == 0 || n >= indentlen || next[n] == ']')
        n = 0;
    memcpy(indent, n ? next : "    ", n ? n : 4);
    indent[n ? n : 4] = '\0';
    return (long)(next - text);
}

/* The database lines, appended at the end: after DATABASES's assignment
 * however many lines it spans. 0 with nothing to do, 1 with lines in t. */
static int database_lines(struct init_plan *p, const char *text, struct init_text *t)
{
    int want = 0;
    if (!strstr(text, TEST_RUNNER_CLASS)) {
        if (assignment(text, "TEST_RUNNER"))
            init_note(p,
                      "%s: TEST_RUNNER is set to another runner; left alone. Make it "
                      "\"%s\" (or have yours subclass it) by hand",
                      p->app.settings, TEST_RUNNER_CLASS);
        else
            want |= 1;
    }
    /* Any call: settings written as `wtproxy help django-tests` shows,
     * DATABASES = claimed_databases({...}), were wrapped a second time, and
     * the name derived from the derived name (shop_m_wt_m_wt) that no
     * claim made: migrate failed, "database ... does not exist". */
    if (!strstr(text, "claimed_databases(")) {
        if (!assignment(text, "DATABASES"))
            init_note(p,
                      "%s: no `DATABASES =` line; add after yours by hand: from "
                      "wtproxy_whoami.django_db import claimed_databases; DATABASES = %s",
                      p->app.settings, CLAIMED_CALL);
        else
            want |= 2;
    }
    if (!want)
        return 0;
    init_puts(t, "\n");
    if (want & 1) {
        init_puts(t, why_runner);
        init_puts(t, "TEST_RUNNER = \"" TEST_RUNNER_CLASS "\"\n");
    }
    if (want & 2) {
        init_puts(t, why_databases);
        init_puts(t, "from wtproxy_whoami.django_db import claimed_databases  # noqa: E402\n"
                     "DATABASES = " CLAIMED_CALL "\n");
    }
    return 1;
}

/* The backends a cache of several processes lives in (Redis, Memcached,
 * a table, a folder): one that worktrees' settings share unless each
 * key says whose it is. */
static int shared_cache(const char *text)
{
    const char *c = assignment(text, "CACHES"), *end = c ? cli_block_end(c) : NULL;
    if (!end)
        return 0;
    static const char *const kinds[] = {"redis",    "Redis",          "memcache",
                                        "Memcache", "FileBasedCache", "DatabaseCache"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const char *k = strstr(c, kinds[i]);
        if (k && k < end)
            return 1;
    }
    return 0;
}

/* The CACHES line, appended at the end: after the DATABASES lines. 0 with
 * nothing to do, 1 with lines in t. */
static int cache_lines(const char *text, struct init_text *t)
{
    if (!shared_cache(text) || strstr(text, "claimed_caches("))
        return 0;
    init_puts(t, "\n");
    init_puts(t, why_caches);
    init_puts(t, "from wtproxy_whoami.django_db import claimed_caches  # noqa: E402\n"
                 "CACHES = claimed_caches(CACHES)\n");
    return 1;
}

/* The settings file: the middleware line, and with p->databases the test
 * runner and DATABASES lines; the CACHES line for a shared cache. */
static int plan_settings(struct init_plan *p)
{
    char path[PATH_MAX], err[PATH_MAX + 64], indent[64];
    char *text = cli_join(path, sizeof path, p->dir, p->app.settings) < 0
                     ? NULL
                     : cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
    if (!text) {
        init_note(p, "%s: left alone: %s", p->app.settings, err);
        return 0;
    }
    struct init_text t = {0};
    int same_line = 0;
    long at = strstr(text, MIDDLEWARE_CLASS)
                  ? -2
                  : middleware_spot(text, indent, sizeof indent, &same_line);
    if (at == -1)
        init_note(p,
                  "%s: MIDDLEWARE is not assigned a literal list (`MIDDLEWARE = [...]` at the "
                  "start of a line); add '%s' as its FIRST entry by hand",
                  p->app.settings, MIDDLEWARE_CLASS);
    if (at >= 0) {
        init_put(&t, text, (size_t)at);
        init_puts(&t, same_line ? "\n" : "");
        init_puts(&t, indent);
        init_puts(&t, why_middleware);
        init_puts(&t, indent);
        init_puts(&t, "'" MIDDLEWARE_CLASS "',\n");
        init_puts(&t, same_line ? indent : "");
        init_puts(&t, text + at);
    } else {
        init_puts(&t, text);
    }
    if (t.len && t.s[t.len - 1] != '\n')
        init_puts(&t, "\n");
    int db = p->databases && database_lines(p, text, &t);
    db |= cache_lines(text, &t);
    if (at < 0 && !db) {
        free(t.s);
        free(text);
        return 0;
    }
    return init_add_change(p, p->app.settings, text, &t);
}

/* The url recipe's command: `wtproxy run` registers on front 8000 unless
 * told otherwise, and a config whose URL names another port would wait on
 * a front where this server is never routed. */
static void run_command(const struct init_plan *p, char *out, size_t len)
{
    if (p->front == WTP_DEFAULT_FRONT_PORT)
        snprintf(out, len, "wtproxy run -- %s", p->app.start);
    else
        snprintf(out, len, "wtproxy run --front %d -- %s", p->front, p->app.start);
}

/* Replace the quoted literal of webServer's `command:` with `wtproxy run
 * -- START`, a comment line above it. Returns 1 edited (t), 0 not a
 * literal we can edit. */
static int edit_command(struct init_plan *p, const char *text, struct init_text *t)
{
    const char *ws = strstr(text, "webServer:");
    const char *cmd = ws ? strstr(ws, "command:") : NULL;
    if (!cmd)
        return 0;
    const char *q = cmd + 8 + strspn(cmd + 8, " \t");
    const char *end = (*q == '\'' || *q == '"' || *q == '`') ? strchr(q + 1, *q) : NULL;
    const char *tpl = end ? strstr(q, "${") : NULL;
    if (!end || memchr(q, '\n', (size_t)(end - q)) || (*q == '`' && tpl && tpl < end))
        return 0;
    const char *after = end + 1 + strspn(end + 1, " \t");
    if (*after != ',' && *after != '\n' && *after != '}')
        return 0; /* an expression */
    const char *bol = cmd;
    while (bol > text && bol[-1] != '\n')
        bol--;
    char line[1200], run[1100];
    init_put(t, text, (size_t)(bol - text));
    init_put(t, bol, strspn(bol, " \t"));
    init_puts(t, why_playwright);
    init_put(t, bol, (size_t)(q - bol));
    run_command(p, run, sizeof run);
    snprintf(line, sizeof line, "%c%s%c", *q, run, *q);
    init_puts(t, line);
    init_puts(t, end + 1);
    return 1;
}

/* Recipe "url": webServer.command through `wtproxy run`, into t: 1
 * edited, 0 left as it is (said why), -1 out of memory. */
static int command_edit(struct init_plan *p, struct init_text *t)
{
    struct cli_playwright *pw = &p->app.pw;
    char run[1100];
    run_command(p, run, sizeof run);
    if (p->recipe == INIT_RECIPE_PORT) {
        init_note(p,
                  "%s: recipe \"port\": left as it is; the .wtproxy starts this worktree's "
                  "server on its first request%s",
                  pw->file,
                  pw->reuse || !pw->web_server
                      ? ""
                      : " (set webServer.reuseExistingServer: true, or Playwright stops on the "
                        "taken port)");
        return 0;
    }
    if (pw->uses_run)
        return 0;
    if (pw->nservers > 1) { /* editing one command would start that server for another's url */
        init_note(p,
                  "%s: left as it is: recipe \"url\" starts one server per `wtproxy run`, and "
                  "webServer has %d; use recipe \"port\" (the .wtproxy's services)",
                  pw->file, pw->nservers);
        return 0;
    }
    if (!pw->web_server || !edit_command(p, pw->text, t)) {
        init_note(p,
                  "%s: %s; set it by hand to '%s', with url: 'http://localhost:%d/' and "
                  "reuseExistingServer: true",
                  pw->file,
                  pw->web_server ? "webServer.command is not a plain string to edit safely"
                                 : "it has no webServer to run through wtproxy run",
                  run, p->front);
        return t->oom ? -1 : 0;
    }
    return t->oom ? -1 : 1;
}

/* A front given (--front) that the config's tests do not go to: its
 * baseURL or webServer.url names another port, outside wtproxy (an
 * Express user's tests kept going to 3000, and doctor's fix then put the
 * command back on 3000). Said, with the lines to write. */
static void front_note(struct init_plan *p)
{
    const struct cli_playwright *pw = &p->app.pw;
    int other = pw->base_port && pw->base_port != p->front ? pw->base_port
                : pw->url_port && pw->url_port != p->front ? pw->url_port
                                                           : 0;
    if (other && !pw->of_top)
        init_note(p,
                  "%s: its %s names port %d, not the front %d: the tests would go to %d, "
                  "outside wtproxy; write http://localhost:%d there%s",
                  pw->file, pw->base_port == other ? "baseURL" : "webServer.url", other, p->front,
                  other, p->front,
                  pw->base_port && pw->url_port && pw->base_port != pw->url_port
                      ? ""
                      : (pw->base_port && pw->url_port ? " (baseURL and webServer.url)" : ""));
}

/* The Playwright config's edits, as one change: its webServer's command
 * (command_edit) and wtproxy's reporter (init_pw_reporter.c). */
static int plan_playwright(struct init_plan *p)
{
    struct cli_playwright *pw = &p->app.pw;
    front_note(p);
    struct init_text cmd = {0}, rep = {0};
    int edited = command_edit(p, &cmd);
    /* the top folder's config, of which pw holds one entry: its own init's */
    int added = edited < 0 || pw->of_top ? 0 : init_pw_reporter(p, edited ? cmd.s : pw->text, &rep);
    struct init_text *t = added ? &rep : &cmd;
    char *old = edited < 0 || (!edited && !added) ? NULL : strdup(pw->text);
    if (added)
        free(cmd.s);
    else
        free(rep.s);
    if (edited < 0 || cmd.oom || rep.oom || ((edited || added) && !old)) {
        free(old);
        free(t->s);
        return -1;
    }
    if (!edited && !added)
        return 0;
    return init_add_change(p, pw->file, old, t);
}

int init_plan_make(struct init_plan *p)
{
    if (!p->notes && !(p->notes = json_array()))
        return -1;
    if (plan_wtproxy_file(p) < 0)
        return -1;
    if (p->app.kind == CLI_APP_DJANGO && plan_settings(p) < 0)
        return -1;
    if (init_plan_python(p) < 0 || init_plan_next(p) < 0 || init_plan_nest(p) < 0 ||
        init_plan_astro(p) < 0 || init_plan_rack(p) < 0)
        return -1;
    if (p->app.kind == CLI_APP_EXPRESS || p->app.kind == CLI_APP_NODE)
        init_node_whoami(p);
    else if (p->app.kind == CLI_APP_VITE && init_plan_vite(p) < 0)
        return -1;
    if (p->app.kind == CLI_APP_EXPRESS || p->app.kind == CLI_APP_NODE)
        init_note(p, "`%s` must listen on $PORT (wtproxy run sets it) on 127.0.0.1", p->app.start);
    if (p->app.pw.file[0] && p->recipe != INIT_RECIPE_NONE && plan_playwright(p) < 0)
        return -1;
    return 0;
}

void init_plan_free(struct init_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->ch[i].old);
        free(p->ch[i].new);
    }
    p->n = 0;
    json_decref(p->notes);
    p->notes = NULL;
    cli_app_free(&p->app);
}
