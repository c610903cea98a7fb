/* init_detect.c - what an app checkout is, for `wtproxy init` (which edits
 * it) and `wtproxy doctor` (which judges it): Django (manage.py and the
 * settings module it names), Node (package.json with next, @nestjs/core,
 * vite, express or a plain `node` script), FastAPI, Starlette and Flask
 * (init_python.c), and the Playwright config's webServer recipe.
 *
 * This is text inspection, not parsing: it only recognises the literal
 * forms a project usually has (`os.environ.setdefault(
 * 'DJANGO_SETTINGS_MODULE', 'shop.settings')`, `baseURL: 'http://
 * localhost:8000'`). Anything else is reported as unknown, and init then
 * prints instructions instead of editing. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "host.h"
#include "init.h"

char *cli_read_text(const char *path, size_t max, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    char *buf = NULL;
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
        errno = e;
        return NULL;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
        snprintf(err, errlen, "%s is not a regular file of at most %zu bytes", path, max);
        errno = EINVAL;
        goto out;
    }
    size_t n = 0, want = (size_t)st.st_size;
    if (!(buf = malloc(want + 1))) {
        snprintf(err, errlen, "out of memory reading %s", path);
        goto out;
    }
    while (n < want) {
        ssize_t r = read(fd, buf + n, want - n);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            break; /* shrank meanwhile: take what is there */
        }
        n += (size_t)r;
    }
    buf[n] = '\0';
    if (strlen(buf) != n) { /* a NUL byte: not a text file we may edit */
        snprintf(err, errlen, "%s holds a NUL byte: not a text file", path);
        free(buf);
        buf = NULL;
        errno = EINVAL;
    }
out:
    close(fd);
    return buf;
}

int cli_join(char *out, size_t len, const char *dir, const char *name)
{
    int n = snprintf(out, len, "%s/%s", dir, name);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The text of dir/name, NULL when absent or unreadable (err says which). */
static char *read_in(const char *dir, const char *name, char *err, size_t errlen)
{
    char path[PATH_MAX];
    if (cli_join(path, sizeof path, dir, name) < 0)
        return NULL;
    return cli_read_text(path, CLI_INIT_FILE_MAX, err, errlen);
}

json_t *cli_json_in(const char *dir, const char *name)
{
    char err[PATH_MAX + 64];
    char *text = read_in(dir, name, err, sizeof err);
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    return j;
}

int cli_is_file(const char *dir, const char *name, int want_exec)
{
    char path[PATH_MAX];
    struct stat st;
    if (cli_join(path, sizeof path, dir, name) < 0)
        return 0;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && (!want_exec || access(path, X_OK) == 0);
}

/* The quoted literal ('...' or "...") starting at p (after blanks), copied
 * into out. Returns the byte after its closing quote, or NULL. */
const char *cli_quoted(const char *p, char *out, size_t outlen)
{
    p += strspn(p, " \t");
    if (*p != '\'' && *p != '"')
        return NULL;
    const char *end = strchr(p + 1, *p);
    if (!end || (size_t)(end - p - 1) >= outlen || memchr(p + 1, '\n', (size_t)(end - p - 1)))
        return NULL;
    memcpy(out, p + 1, (size_t)(end - p - 1));
    out[end - p - 1] = '\0';
    return end + 1;
}

/* The settings module manage.py sets as DJANGO_SETTINGS_MODULE's default,
 * as a path relative to the checkout ("shop/settings.py"). */
static int django_settings(const char *dir, const char *manage, char *out, size_t outlen, char *err,
                           size_t errlen)
{
    const char *p = strstr(manage, "DJANGO_SETTINGS_MODULE");
    char module[256];
    if (!p || !(p = strchr(p, ',')) || !cli_quoted(p + 1, module, sizeof module) ||
        strspn(module, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") !=
            strlen(module)) {
        snprintf(err, errlen,
                 "manage.py names no settings module: looked for "
                 "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'project.settings')");
        return -1;
    }
    for (char *c = module; *c; c++)
        if (*c == '.')
            *c = '/';
    snprintf(out, outlen, "%s.py", module);
    if (cli_is_file(dir, out, 0))
        return 0;
    snprintf(out, outlen, "%s/__init__.py", module);
    if (cli_is_file(dir, out, 0))
        return 0;
    snprintf(err, errlen,
             "manage.py names settings %s, but neither %s.py nor %s/__init__.py "
             "exists",
             module, module, module);
    return -1;
}

/* Django: the settings file and a start command: the Playwright
 * config's gunicorn line, kept (init_gunicorn.c), else runserver with
 * cli_python_of's interpreter. */
static int detect_django(const char *dir, struct cli_app *app, char *err, size_t errlen)
{
    char *manage = read_in(dir, "manage.py", err, errlen);
    if (!manage)
        return -1;
    int r = django_settings(dir, manage, app->settings, sizeof app->settings, err, errlen);
    free(manage);
    if (r < 0)
        return -1;
    char py[512];
    app->kind = CLI_APP_DJANGO;
    if (cli_gunicorn_start(&app->pw, app->start, sizeof app->start) == 0)
        return 0;
    cli_python_of(dir, &app->pw, " manage.py runserver", py, sizeof py);
    snprintf(app->start, sizeof app->start, "%s manage.py runserver 127.0.0.1:{port}", py);
    return 0;
}

static int has_dep(json_t *pkg, const char *name)
{
    return json_object_get(json_object_get(pkg, "dependencies"), name) ||
           json_object_get(json_object_get(pkg, "devDependencies"), name);
}

/* The program of a Node dev script that init takes as the start: node,
 * tsx (a TypeScript server's: init refused it) and nodemon (an Express
 * user's scripts.dev, passed over for scripts.start's plain node: the
 * server no longer reloaded); NULL for another. */
static const char *node_runner(const char *s)
{
    static const char *const runners[] = {"node", "tsx", "nodemon"};
    for (size_t i = 0; i < sizeof runners / sizeof runners[0]; i++) {
        size_t n = strlen(runners[i]);
        if (strncmp(s, runners[i], n) == 0 && s[n] == ' ')
            return runners[i];
    }
    return NULL;
}

/* scripts.dev, else scripts.start, when it runs `node FILE...`, `tsx
 * [watch] FILE...` or `nodemon FILE...`. */
static const char *node_script(json_t *pkg)
{
    json_t *scripts = json_object_get(pkg, "scripts");
    const char *names[] = {"dev", "start"};
    for (size_t i = 0; i < 2; i++) {
        const char *s = json_string_value(json_object_get(scripts, names[i]));
        if (s && node_runner(s) && !strpbrk(s, "&|;`$<>"))
            return s;
    }
    return NULL;
}

/* A relative path's characters that need no quoting in a start line. */
static const char plain_chars[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-";

/* The script that runs the app's Vite: scripts.dev, else scripts.start,
 * else the first that starts with `vite ` ("dev:web" of a repository
 * whose dev runs its API and its front end at once); NULL none. */
static const char *vite_script(json_t *pkg)
{
    json_t *scripts = json_object_get(pkg, "scripts"), *v;
    const char *s = json_string_value(json_object_get(scripts, "dev")), *k;
    if (!s)
        s = json_string_value(json_object_get(scripts, "start"));
    if (s && strncmp(s, "vite ", 5) == 0)
        return s;
    json_object_foreach(scripts, k, v) {
        s = json_string_value(v);
        if (s && strncmp(s, "vite ", 5) == 0)
            return s;
    }
    return NULL;
}

/* The root folder script gives vite (`vite web`, `vite dev web --open`)
 * into out: a relative path of plain characters that is a folder of dir;
 * "" when none, and vite serves dir. Left out, the server would serve
 * dir, and not read ROOT/vite.config.js, where the team adds the
 * /__whoami plugin. */
static void vite_root(const char *dir, const char *s, char *out, size_t len)
{
    static const char *const subs[] = {"serve ", "dev "};
    char path[PATH_MAX];
    struct stat st;
    out[0] = '\0';
    if (!s)
        return;
    s += 5 + strspn(s + 5, " ");
    for (size_t i = 0; i < 2; i++)
        if (strncmp(s, subs[i], strlen(subs[i])) == 0)
            s += strlen(subs[i]) + strspn(s + strlen(subs[i]), " ");
    size_t n = strcspn(s, " ");
    if (n == 0 || n >= len || s[0] == '-' || s[0] == '/' || strspn(s, plain_chars) < n ||
        snprintf(path, sizeof path, "%s/%.*s", dir, (int)n, s) >= (int)sizeof path ||
        stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
        return;
    snprintf(out, len, "%.*s", (int)n, s);
}

/* `--config F ` when script's vite names a config file F of dir, which
 * the start keeps: a config elsewhere than Vite's root (web/vite.config.ts
 * of a repository whose package.json is at the top) is read only so, and
 * a start without it served the top folder, 404 at /, without the app's
 * plugins or proxy. "" else. */
static void vite_config(const char *dir, const char *script, char *out, size_t len)
{
    char f[256];
    out[0] = '\0';
    if (script && init_vite_config_flag(script, f, sizeof f) && f[strspn(f, plain_chars)] == '\0' &&
        cli_is_file(dir, f, 0))
        snprintf(out, len, "--config %s ", f);
}

/* The path from dir of the app's tool program, as the start line /bin/sh
 * runs there names it (host_node_bin): in a member of an npm workspace,
 * whose tools npm hoists to the root's node_modules, the root's
 * (../../node_modules/.bin/vite from apps/web), which a plain
 * node_modules/.bin/vite there is not: "not found", status 127. */
static void tool_path(const char *dir, const char *program, char *out, size_t len)
{
    char real[PATH_MAX];
    struct host_worktree w;
    if (!realpath(dir, real) || host_worktree_of(real, &w, NULL, 0) < 0)
        snprintf(out, len, "node_modules/.bin/%s", program);
    else
        host_node_bin(real, w.root, program, out, len);
}

static int detect_node(const char *dir, struct cli_app *app, char *err, size_t errlen)
{
    char tool[PATH_MAX];
    char *text = read_in(dir, "package.json", err, errlen);
    if (!text)
        return -1;
    json_t *pkg = json_loads(text, 0, NULL);
    free(text);
    const char *script = pkg ? node_script(pkg) : NULL;
    int r = 0;
    if (pkg && has_dep(pkg, "next")) {
        app->kind = CLI_APP_NEXT;
        tool_path(dir, "next", tool, sizeof tool);
        snprintf(app->start, sizeof app->start, "%.900s dev --hostname 127.0.0.1 --port {port}",
                 tool);
    } else if (pkg && has_dep(pkg, "@nestjs/core")) {
        /* before vite and express: a Nest app may depend on either */
        app->kind = CLI_APP_NEST;
        tool_path(dir, "nest", tool, sizeof tool);
        /* --preserveWatchOutput: tsc would clear the screen at each
         * compile, escapes that the server's log and wtproxy's quotes of it
         * would carry */
        snprintf(app->start, sizeof app->start, "%.900s start --watch --preserveWatchOutput", tool);
    } else if (pkg && has_dep(pkg, "astro")) {
        /* before vite: its Vite settings are astro.config's (init_astro.c) */
        app->kind = CLI_APP_ASTRO;
        tool_path(dir, "astro", tool, sizeof tool);
        snprintf(app->start, sizeof app->start, "%.900s dev --host 127.0.0.1 --port {port}", tool);
    } else if (pkg && has_dep(pkg, "vite") && has_dep(pkg, "@react-router/dev")) {
        /* React Router's framework mode: its Vite plugin in vite.config, but
         * `react-router dev` is the app's dev command (it takes Vite's
         * flags); a plain vite there served the app, under a command its
         * scripts and docs never name */
        app->kind = CLI_APP_VITE;
        tool_path(dir, "react-router", tool, sizeof tool);
        snprintf(app->start, sizeof app->start,
                 "%.600s dev --host 127.0.0.1 --port {port} --strictPort", tool);
    } else if (pkg && has_dep(pkg, "vite")) {
        char config[300];
        const char *script = vite_script(pkg);
        vite_root(dir, script, app->vite_root, sizeof app->vite_root);
        vite_config(dir, script, config, sizeof config);
        app->kind = CLI_APP_VITE;
        tool_path(dir, "vite", tool, sizeof tool);
        snprintf(app->start, sizeof app->start,
                 "%.400s %.200s%s%.300s--host 127.0.0.1 --port {port} --strictPort", tool,
                 app->vite_root, app->vite_root[0] ? " " : "", config);
    } else if (script) {
        app->kind = has_dep(pkg, "express") ? CLI_APP_EXPRESS : CLI_APP_NODE;
        /* The script's own command: wtproxy run gives it the port as $PORT;
         * tsx by its path, which the daemon's shell has not on its PATH */
        const char *runner = node_runner(script);
        if (strcmp(runner, "node") != 0) {
            tool_path(dir, runner, tool, sizeof tool);
            snprintf(app->start, sizeof app->start, "%.600s%s", tool, script + strlen(runner));
        } else {
            snprintf(app->start, sizeof app->start, "%s", script);
        }
    } else {
        snprintf(err, errlen,
                 "package.json has none of the dependencies next, @nestjs/core, vite, nor a "
                 "`node FILE`, `tsx FILE` or `nodemon FILE` command in scripts.dev or "
                 "scripts.start");
        r = -1;
    }
    json_decref(pkg);
    return r;
}

/* The end of the {...} block opening at or after p (strings skipped), or
 * NULL when it does not close. */
const char *cli_block_end(const char *p)
{
    int depth = 0;
    for (p = strchr(p, '{'); p && *p; p++) {
        if (p[0] == '/' && (p[1] == '/' || p[1] == '*')) { /* a comment: its quotes are prose */
            const char *q = p[1] == '/' ? strchr(p, '\n') : strstr(p + 2, "*/");
            if (!q)
                return NULL;
            p = q + (p[1] == '*');
        } else if (*p == '\'' || *p == '"' || *p == '`') {
            const char *q = strchr(p + 1, *p);
            if (!q)
                return NULL;
            p = q;
        } else if (*p == '{') {
            depth++;
        } else if (*p == '}' && --depth == 0) {
            return p + 1;
        }
    }
    return NULL;
}

int cli_url_port(const char *url)
{
    const char *hosts[] = {"http://localhost:", "http://127.0.0.1:"};
    for (size_t i = 0; i < 2; i++) {
        long port;
        char digits[8] = "";
        if (strncmp(url, hosts[i], strlen(hosts[i])) != 0)
            continue;
        const char *d = url + strlen(hosts[i]);
        size_t n = strspn(d, "0123456789");
        if (n == 0 || n >= sizeof digits)
            return 0;
        memcpy(digits, d, n);
        if (cli_number(digits, 1, 65535, &port) == 0)
            return (int)port;
    }
    return 0;
}

/* The port of a literal http://localhost:N or http://127.0.0.1:N URL that
 * follows key ("baseURL:", "url:") in [from, to), 0 when none. */
static int literal_port(const char *from, const char *to, const char *key)
{
    const char *p = strstr(from, key);
    char url[512];
    return p && p < to && cli_quoted(p + strlen(key), url, sizeof url) ? cli_url_port(url) : 0;
}

/* Whether [from, to) holds needle. */
static int within(const char *from, const char *to, const char *needle)
{
    const char *p = strstr(from, needle);
    return p && p < to;
}

/* Whether the `wtproxy run` in [from, to) names wtproxy bare, for the
 * shell to find on PATH: the word begins a string or follows a blank (not
 * /usr/local/bin/wtproxy, not ${wtproxy}). */
static int run_by_name(const char *from, const char *to)
{
    const char *run = strstr(from, "wtproxy run");
    return run && run < to && run > from && strchr("'\"` \t(", run[-1]);
}

/* The --front of `wtproxy run` in [from, to) (--front N or --front=N,
 * before the `--` that ends its flags), else 0: run then takes the
 * .wtproxy's front, as doctor works out. */
static int run_front(const char *from, const char *to)
{
    const char *run = strstr(from, "wtproxy run");
    if (!run || run >= to)
        run = strstr(from, "wtproxy} run");
    const char *dashes = run ? strstr(run, " -- ") : NULL;
    const char *f = run ? strstr(run, "--front") : NULL;
    char digits[8] = "";
    long port;
    if (!f || f >= to || (dashes && f > dashes))
        return 0;
    f += 7 + strspn(f + 7, " =");
    size_t n = strspn(f, "0123456789");
    if (n == 0 || n >= sizeof digits)
        return 0;
    memcpy(digits, f, n);
    return cli_number(digits, 1, 65535, &port) == 0 ? (int)port : 0;
}

/* The server command of a `wtproxy run [flags] -- CMD` in [from, to),
 * as far as the string literal that holds it goes, into out ("" when it
 * is not in one literal: a template with ${...}, a concatenation). */
static void served_command(const char *from, const char *to, char *out, size_t len)
{
    const char *run = strstr(from, "wtproxy run"), *q = run;
    out[0] = '\0';
    while (q && q > from && !strchr("'\"`", q[-1]))
        q--;
    if (!run || run >= to || !q || q <= from || memchr(q, '\n', (size_t)(run - q)))
        return;
    const char *dashes = strstr(run, " -- "), *close = strchr(run, q[-1]);
    if (!dashes || !close || close >= to || dashes > close ||
        memchr(run, '$', (size_t)(close - run)))
        return;
    snprintf(out, len, "%.*s", (int)(close - dashes - 4), dashes + 4);
}

/* The path of a literal http://HOST:N/PATH url after "url:" in [from, to)
 * into out ("" for none or "/"). */
static void url_path(const char *from, const char *to, char *out, size_t outlen)
{
    const char *p = strstr(from, "url:");
    char url[512];
    out[0] = '\0';
    if (!p || p >= to || !cli_quoted(p + 4, url, sizeof url) || strncmp(url, "http://", 7) != 0)
        return;
    const char *slash = strchr(url + 7, '/');
    if (slash && strcmp(slash, "/") != 0)
        snprintf(out, outlen, "%s", slash);
}

/* A webServer array, `webServer: [ {...}, {...} ]`: each entry's command,
 * port and readiness path, so that init declares one service per server
 * (a Vite front end and its API) instead of taking the first for all. */
static void read_servers(const char *ws, struct cli_playwright *pw)
{
    const char *p = ws + strlen("webServer:");
    p += strspn(p, " \t\r\n");
    if (*p != '[')
        return;
    for (p++; pw->nservers < CLI_PW_MAX_SERVERS;) {
        p += strspn(p, " \t\r\n,");
        const char *end = *p == '{' ? cli_block_end(p) : NULL;
        if (!end)
            return;
        struct cli_pw_server *s = &pw->server[pw->nservers++];
        const char *cmd = strstr(p, "command:");
        if (!cmd || cmd >= end || !cli_quoted(cmd + 8, s->command, sizeof s->command))
            s->command[0] = '\0';
        s->port = literal_port(p, end, "url:");
        if (!s->port && within(p, end, "port:")) {
            const char *q = strstr(p, "port:") + 5;
            s->port = atoi(q + strspn(q, " \t"));
        }
        url_path(p, end, s->path, sizeof s->path);
        p = end;
    }
}

void cli_playwright_read(const char *dir, struct cli_playwright *pw)
{
    static const char *const names[] = {"playwright.config.ts", "playwright.config.js",
                                        "playwright.config.mjs", "playwright.config.cjs"};
    char err[256];
    memset(pw, 0, sizeof *pw);
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !pw->text; i++)
        if ((pw->text = read_in(dir, names[i], err, sizeof err)))
            snprintf(pw->file, sizeof pw->file, "%s", names[i]);
    if (pw->text)
        cli_playwright_parse(pw);
}

void cli_playwright_parse(struct cli_playwright *pw)
{
    pw->front = pw->base_port = literal_port(pw->text, pw->text + strlen(pw->text), "baseURL:");
    const char *ws = strstr(pw->text, "webServer:");
    const char *end = ws ? cli_block_end(ws) : NULL;
    if (!end)
        return;
    pw->web_server = 1;
    read_servers(ws, pw);
    const char *cmd = strstr(ws, "command:");
    if (!pw->nservers && cmd && cmd < end)
        cli_quoted(cmd + 8, pw->command, sizeof pw->command);
    pw->has_url = within(ws, end, "url:");
    pw->has_port = within(ws, end, "port:");
    pw->uses_run = within(ws, end, "wtproxy run") || within(ws, end, "wtproxy} run");
    pw->reuse =
        within(ws, end, "reuseExistingServer:") && !within(ws, end, "reuseExistingServer: false");
    pw->url_port = literal_port(ws, end, "url:");
    if (!pw->front)
        pw->front = pw->url_port;
    if (pw->uses_run) {
        pw->run_by_name = run_by_name(ws, end);
        pw->run_front = run_front(ws, end);
        served_command(ws, end, pw->run_cmd, sizeof pw->run_cmd);
    }
}

int cli_app_detect(const char *dir, struct cli_app *app, char *err, size_t errlen)
{
    memset(app, 0, sizeof *app);
    char node_err[512] = "";
    cli_playwright_read(dir, &app->pw); /* first: it may name the interpreter */
    if (!app->pw.text)
        cli_playwright_of_top(dir, &app->pw);
    if (cli_is_file(dir, "manage.py", 0))
        return detect_django(dir, app, err, errlen);
    /* A Python app may keep a package.json for its e2e tests only. */
    if (cli_is_file(dir, "package.json", 0) &&
        detect_node(dir, app, node_err, sizeof node_err) == 0)
        return 0;
    if (cli_pyapp_detect(dir, app) == 0 || cli_rack_detect(dir, app) == 0)
        return 0;
    if (node_err[0])
        snprintf(err, errlen, "%s; nor %s, nor a config.ru (Rack)", node_err, CLI_PYAPP_LOOKED_FOR);
    else
        snprintf(err, errlen,
                 "%s holds neither manage.py (Django), package.json (Node: next, @nestjs/core, "
                 "vite, express or a `node` script in scripts.dev/start), %s, nor a config.ru "
                 "(Rack: Sinatra, Rails...)",
                 dir, CLI_PYAPP_LOOKED_FOR);
    return -1;
}

const char *cli_app_name(enum cli_app_kind k)
{
    static const char *const names[] = {"unknown", "django",    "next",  "vite", "express", "node",
                                        "fastapi", "starlette", "flask", "nest", "astro",   "rack"};
    return names[k];
}

void cli_app_free(struct cli_app *app)
{
    free(app->pw.text);
    app->pw.text = NULL;
}
