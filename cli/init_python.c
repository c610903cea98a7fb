/* init_python.c - Python apps for `wtproxy init`: the interpreter that
 * starts a Python dev server (Django's too), and the apps without
 * manage.py: FastAPI and Starlette (ASGI, served by uvicorn) and Flask
 * (WSGI, served by `flask run`). The app is the first of main.py, app.py
 * and app/main.py that assigns `app = FastAPI(`, `Starlette(` or
 * `Flask(` at its top level: the layouts the frameworks' tutorials start
 * from, and a rule a user can predict. An app built by a factory
 * (`create_app()`) or under another name is not detected: init refuses,
 * naming this rule.
 *
 * The whoami edit wraps the finished app at the end of that module, so
 * that the fingerprint is taken at import, when the server loads the code
 * (conf/WHOAMI.md says why not add_middleware), and before a closing `if
 * __name__ == '__main__':` block, which may serve the app; only under
 * `wtproxy run` (the guard below says why). Like
 * init_edit.c this is text inspection: a module whose top level it cannot
 * see the end of gets a note with the lines to add by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "init.h"

/* The files looked in, in order, and the module each is to Python. */
static const char *const modules[][2] = {
    {"main.py", "main"}, {"app.py", "app"}, {"app/main.py", "app.main"}};

static const struct framework {
    enum cli_app_kind kind;
    const char *ctor;   /* the class whose instance is assigned to app */
    const char *server; /* what `python -m` runs to serve it */
    const char *import; /* whoami's middleware, imported (one line, no newline) */
    const char *wrap;   /* ... and wrapped around the app (one line) */
    const char *marker; /* the text that shows the wrap is there */
    const char *why;    /* a comment on the wrap's arguments (lines), or "" */
} frameworks[] = {
    {CLI_APP_FASTAPI, "FastAPI", "uvicorn", "from wtproxy_whoami.asgi import WhoamiASGIMiddleware",
     "app = WhoamiASGIMiddleware(app)", "WhoamiASGIMiddleware", ""},
    {CLI_APP_STARLETTE, "Starlette", "uvicorn",
     "from wtproxy_whoami.asgi import WhoamiASGIMiddleware", "app = WhoamiASGIMiddleware(app)",
     "WhoamiASGIMiddleware", ""},
    /* flask run without --debug (init's start has none unless the
     * project's flask line has it: init_flask.c) renders each
     * template once and keeps it, and loads .env and .flaskenv once at
     * start: an edit of either must make the server stale, or wtproxy would
     * call verified a server serving the old one */
    {CLI_APP_FLASK, "Flask", "flask", "from wtproxy_whoami.wsgi import WhoamiWSGIMiddleware",
     "app.wsgi_app = WhoamiWSGIMiddleware(app.wsgi_app, include=[\"**/*.py\", \"**/.env\", "
     "\"**/.env.*\", \"**/.flaskenv\", \"**/templates/**\"])",
     "WhoamiWSGIMiddleware",
     "    # templates and .env files too: flask run keeps a template it rendered and the .env, "
     ".flaskenv it loaded, so an edited one must make this server stale\n"},
};
#define NFRAMEWORKS (sizeof frameworks / sizeof frameworks[0])

static const char why_wrap[] =
    "# wtproxy: answers /__whoami so wtproxy routes only to a server of this checkout's "
    "current code; wraps the finished app here, at import - do not remove or move into "
    "add_middleware\n";

/* Only under wtproxy run, which sets WTPROXY_PORT: the app's tests, its CI
 * and production import the app with no wtproxy_whoami installed, and a
 * development server without wtproxy needs no /__whoami. */
static const char guard_import[] = "import os  # noqa: E402\n\n";
static const char guard[] =
    "if os.environ.get(\"WTPROXY_PORT\"):  # set by wtproxy run; tests, CI and production skip "
    "this\n";

/* Files whose lines may run the dev server: the project's own scripts. */
static const char *const script_files[] = {"Makefile", "Procfile", "justfile", "package.json"};

static const char *next_line(const char *l)
{
    const char *nl = strchr(l, '\n');
    return nl ? nl + 1 : NULL;
}

/* Whether text's top level imports os as os (`import os`, `import os.path`,
 * `import sys, os`): then the guard uses it, and a second `import os`
 * is one a linter and a reader would flag. */
static int imports_os(const char *text)
{
    for (const char *l = text; l && *l; l = next_line(l)) {
        if (strncmp(l, "import ", 7) != 0)
            continue;
        size_t len = strcspn(l, "#\n");
        for (const char *p = l + 7; p < l + len;) {
            p += strspn(p, " \t");
            size_t n = strcspn(p, ",#\n");
            if (p + n > l + len)
                n = (size_t)(l + len - p);
            size_t name = strcspn(p, " \t.,#\n");
            const char *as = memmem(p, n, " as ", 4);
            if (name == 2 && strncmp(p, "os", 2) == 0 && !as)
                return 1;
            p += n + (p[n] == ',');
        }
    }
    return 0;
}

/* The framework whose class a top-level line `app = CLASS(` (or `app =
 * module.CLASS(`) of text calls, NULL when none does. */
static const struct framework *framework_of(const char *text)
{
    for (const char *l = text; l && *l; l = next_line(l)) {
        if (strncmp(l, "app", 3) != 0)
            continue;
        const char *p = l + 3 + strspn(l + 3, " \t");
        if (*p != '=' || p[1] == '=')
            continue;
        p += 1 + strspn(p + 1, " \t");
        size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.");
        const char *name = memrchr(p, '.', n);
        name = name ? name + 1 : p;
        for (size_t i = 0; p[n] == '(' && i < NFRAMEWORKS; i++)
            if ((size_t)(p + n - name) == strlen(frameworks[i].ctor) &&
                strncmp(name, frameworks[i].ctor, strlen(frameworks[i].ctor)) == 0)
                return &frameworks[i];
    }
    return NULL;
}

static const struct framework *framework_for(enum cli_app_kind kind)
{
    for (size_t i = 0; i < NFRAMEWORKS; i++)
        if (frameworks[i].kind == kind)
            return &frameworks[i];
    return NULL;
}

static char *read_py(const char *dir, const char *name)
{
    char path[PATH_MAX], err[PATH_MAX + 64];
    return cli_join(path, sizeof path, dir, name) < 0
               ? NULL
               : cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
}

/* Whether text has a line that runs server with reloads on (`--reload`;
 * Flask's `--debug` turns its reloader on as well). Each line is looked
 * at once: the files may be large. */
static int runs_with_reload(const char *text, const char *server)
{
    for (const char *s = strstr(text, server); s; s = strstr(s, server)) {
        const char *bol = s;
        while (bol > text && bol[-1] != '\n')
            bol--;
        size_t len = strcspn(bol, "\n");
        if (memmem(bol, len, "--reload", 8) ||
            (strcmp(server, "flask") == 0 && memmem(bol, len, "--debug", 7)))
            return 1;
        s = bol + len; /* the next line */
    }
    return 0;
}

/* The project's script (or Playwright config) that runs the server with
 * reloads, into source: 0 when none does (start reloads only if the
 * project does). In a subfolder, the top's too: a sibling service, its
 * config and scripts ("../Makefile"). */
static int reload_source(const char *dir, const struct cli_playwright *pw,
                         const struct framework *f, char *source, size_t len)
{
    char root[PATH_MAX], rel[PATH_MAX], name[64];
    if (pw->text && runs_with_reload(pw->text, f->server))
        return snprintf(source, len, "%s", pw->file), 1;
    for (size_t i = 0; i < sizeof script_files / sizeof script_files[0]; i++) {
        char *text = read_py(dir, script_files[i]);
        int yes = text && runs_with_reload(text, f->server);
        free(text);
        if (yes)
            return snprintf(source, len, "%s", script_files[i]), 1;
    }
    if (!cli_pytop(dir, root, sizeof root, rel, sizeof rel))
        return 0;
    if (cli_pytop_reload(dir, f->server, source, len))
        return 1;
    struct cli_playwright top;
    cli_playwright_read(root, &top);
    int yes = reload_source(root, &top, f, name, sizeof name);
    free(top.text);
    if (yes)
        snprintf(source, len, "%s/%s", root, name);
    return yes;
}

/* The project's script (or Playwright config) whose first `flask ... run`
 * gives flask the flags start keeps (cli_flask_flags), NULL when none
 * runs flask. */
static const char *flask_source(const char *dir, const struct cli_app *app, char *group,
                                size_t glen, char *run, size_t rlen)
{
    if (app->pw.text && cli_flask_flags(app->pw.text, group, glen, run, rlen))
        return app->pw.file;
    for (size_t i = 0; i < sizeof script_files / sizeof script_files[0]; i++) {
        char *text = read_py(dir, script_files[i]);
        int yes = text && cli_flask_flags(text, group, glen, run, rlen);
        free(text);
        if (yes)
            return script_files[i];
    }
    return NULL;
}

/* The interpreter, named by its path, that the Playwright config's
 * webServer.command (or the command after its `wtproxy run ... --`) runs
 * with the arguments runs (" manage.py runserver", " -m uvicorn"):
 * "/usr/bin/python3 manage.py runserver 8000" gives "/usr/bin/python3".
 * Returns 0 with it in out, -1 when none. */
static int config_python(const struct cli_playwright *pw, const char *runs, char *out,
                         size_t outlen)
{
    const char *ws = pw->text ? strstr(pw->text, "webServer:") : NULL;
    const char *cmd = ws ? strstr(ws, "command:") : NULL;
    char line[1024];
    if (!cmd || !cli_quoted(cmd + 8, line, sizeof line))
        return -1;
    const char *p = strstr(line, "wtproxy") ? strstr(line, " -- ") : NULL;
    p = p ? p + 4 : line;
    size_t n = strcspn(p, " \t");
    const char *base = memrchr(p, '/', n);
    if (!base || n >= outlen || strncmp(base + 1, "python", 6) != 0 ||
        strncmp(p + n, runs, strlen(runs)) != 0 || memchr(p, '$', n) || memchr(p, '`', n))
        return -1;
    snprintf(out, outlen, "%.*s", (int)n, p);
    return 0;
}

/* The module a start's program (runs: " manage.py runserver", " -m
 * uvicorn", " -m flask") imports first, NULL when not known. */
static const char *module_of(const char *runs)
{
    return strstr(runs, "manage.py")    ? "django"
           : strstr(runs, "-m uvicorn") ? "uvicorn"
           : strstr(runs, "-m flask")   ? "flask"
                                        : NULL;
}

/* Whether python, run in dir, imports module. */
static int imports(const char *dir, const char *python, const char *module)
{
    char code[64], out[256];
    snprintf(code, sizeof code, "import %s", module);
    return cli_py_probe(dir, python, code, out, sizeof out) == 0;
}

/* python3, or /usr/bin/python3 when the python3 first on PATH cannot
 * import what runs needs and that one can: Debian's python3-django is
 * importable from /usr/bin/python3 only, and with a pyenv python3 first
 * on PATH init wrote a start that stopped at its first import (doctor
 * then named /usr/bin/python3). */
static void path_python(const char *dir, const char *runs, char *out, size_t outlen)
{
    const char *module = module_of(runs);
    int system =
        module && !imports(dir, "python3", module) && imports(dir, "/usr/bin/python3", module);
    snprintf(out, outlen, "%s", system ? "/usr/bin/python3" : "python3");
}

/* The interpreter the Playwright config already names by path (the
 * python3 on PATH may lack the framework: pyenv, a venv not activated),
 * else the project's virtualenv when it has one (the daemon starts
 * .wtproxy servers with its own environment, without an activated venv),
 * else the top folder's (init_py_top.c), else path_python's. */
void cli_python_of(const char *dir, const struct cli_playwright *pw, const char *runs, char *out,
                   size_t outlen)
{
    if (config_python(pw, runs, out, outlen) == 0)
        return;
    if (cli_is_file(dir, ".venv/bin/python", 1) || cli_is_file(dir, "venv/bin/python", 1))
        snprintf(out, outlen, "%s",
                 cli_is_file(dir, ".venv/bin/python", 1) ? ".venv/bin/python" : "venv/bin/python");
    else if (cli_pytop_python(dir, runs, out, outlen) < 0)
        path_python(dir, runs, out, outlen);
}

int cli_pyapp_detect(const char *dir, struct cli_app *app)
{
    for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++) {
        char *text = read_py(dir, modules[i][0]), py[512], source[PATH_MAX + 64], pkg[256];
        const struct framework *f = text ? framework_of(text) : NULL;
        app->at_top = f && cli_pytop_module(dir, text, pkg, sizeof pkg);
        free(text);
        if (!f)
            continue;
        char module[272]; /* as the server imports it from where start runs */
        snprintf(module, sizeof module, "%s%s%s", app->at_top ? pkg : "", app->at_top ? "." : "",
                 modules[i][1]);
        app->kind = f->kind;
        snprintf(app->module, sizeof app->module, "%s", modules[i][0]);
        const char *reload =
            reload_source(dir, &app->pw, f, source, sizeof source) ? " --reload" : "";
        cli_python_of(dir, &app->pw, f->kind == CLI_APP_FLASK ? " -m flask" : " -m uvicorn", py,
                      sizeof py);
        if (app->at_top)
            cli_pytop_rebase(dir, py, sizeof py);
        if (f->kind == CLI_APP_FLASK) {
            char group[128], run[128];
            flask_source(dir, app, group, sizeof group, run, sizeof run);
            snprintf(app->start, sizeof app->start,
                     "%.400s -m flask --app %s%s run --host 127.0.0.1 --port {port}%s%s", py,
                     module, group, run, reload);
        } else {
            snprintf(app->start, sizeof app->start,
                     "%s -m uvicorn %s:app --host 127.0.0.1 --port {port}%s", py, module, reload);
        }
        return 0;
    }
    return -1;
}

/* Where the wrap goes: before a top-level `if __name__` block that ends
 * the module (it may serve app, which must be the wrapped one), else at
 * the end. -1 when the top level goes on after that block (code there
 * would meet the wrapper, not the app) or the line before the spot is
 * continued with a backslash. */
static long wrap_spot(const char *text)
{
    const char *main_block = NULL;
    for (const char *l = text; l && *l; l = next_line(l)) {
        if (!main_block && strncmp(l, "if __name__", 11) == 0)
            main_block = l;
        else if (main_block && !strchr(" \t\r\n#", *l))
            return -1;
    }
    size_t at = main_block ? (size_t)(main_block - text) : strlen(text);
    size_t last = at > 0 && text[at - 1] == '\n' ? at - 1 : at; /* the previous line's end */
    if (last > 0 && text[last - 1] == '\\')
        return -1;
    return (long)at;
}

/* The whoami wrap in the app module; a note instead where the module is
 * not in a form to edit safely. Returns 0, or -1 out of memory. */
static int plan_wrap(struct init_plan *p, const struct framework *f)
{
    char path[PATH_MAX], err[PATH_MAX + 64];
    char *text = cli_join(path, sizeof path, p->dir, p->app.module) < 0
                     ? NULL
                     : cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
    if (!text) {
        init_note(p, "%s: left alone: %s", p->app.module, err);
        return 0;
    }
    long at = strstr(text, f->marker) ? -2 : wrap_spot(text);
    if (at < 0) {
        if (at == -1)
            init_note(p,
                      "%s: its top level goes on after `if __name__ ...:` (or a line ends in "
                      "`\\`), so it is left alone; add after the last line that uses app, by "
                      "hand: %s; %s",
                      p->app.module, f->import, f->wrap);
        free(text);
        return 0;
    }
    struct init_text t = {0};
    init_put(&t, text, (size_t)at);
    if (at > 0 && text[at - 1] != '\n')
        init_puts(&t, "\n");
    if (at > 0 && (at < 2 || text[at - 2] != '\n' || text[at - 1] != '\n'))
        init_puts(&t, "\n"); /* a blank line before, unless there is one */
    init_puts(&t, why_wrap);
    if (!imports_os(text))
        init_puts(&t, guard_import);
    init_puts(&t, guard);
    init_puts(&t, "    ");
    init_puts(&t, f->import);
    init_puts(&t, "\n");
    init_puts(&t, f->why);
    init_puts(&t, "    ");
    init_puts(&t, f->wrap);
    init_puts(&t, "\n");
    if (text[at]) {
        init_puts(&t, "\n");
        init_puts(&t, text + at);
    }
    return init_add_change(p, p->app.module, text, &t);
}

/* The notes every Python app gets: an interpreter from PATH, and whether
 * start reloads. */
static void python_notes(struct init_plan *p, const char *framework, const struct framework *f)
{
    if (strncmp(p->app.start, "python3 ", 8) == 0)
        init_note(p,
                  "start runs python3 from the daemon's PATH (no .venv/bin/python nor "
                  "venv/bin/python here): if %s is installed elsewhere, name that interpreter "
                  "in start",
                  framework);
    const char *module = module_of(p->app.start);
    if (strncmp(p->app.start, "/usr/bin/python3 ", 17) == 0 && module &&
        !imports(p->dir, "python3", module))
        init_note(p,
                  "start runs /usr/bin/python3: the python3 first on PATH cannot import %s "
                  "(on Debian, python3-%s is importable from /usr/bin/python3 only); keep the path",
                  module, module);
    if (!f)
        return;
    if (p->app.at_top) {
        const char *rel = p->dir + strlen(p->top) + 1;
        char module[PATH_MAX * 2];
        snprintf(module, sizeof module, "%s.%.*s", rel, (int)(strlen(p->app.module) - 3),
                 p->app.module);
        for (char *c = module; *c; c++)
            *c = *c == '/' ? '.' : *c;
        init_note(p,
                  "start runs from the worktree's top folder as the module %s, not `cd %s && "
                  "...`: %s imports the top's packages, which Python finds only from there",
                  module, rel, p->app.module);
    }
    char group[128], run[128];
    const char *flask = f->kind == CLI_APP_FLASK
                            ? flask_source(p->dir, &p->app, group, sizeof group, run, sizeof run)
                            : NULL;
    if (flask && (group[0] || run[0]))
        init_note(p,
                  "start keeps the flags %s gives flask:%s%s (not its --host and --port: "
                  "wtproxy gives each server its own)",
                  flask, group, run);
    char source[PATH_MAX + 64];
    if (reload_source(p->dir, &p->app.pw, f, source, sizeof source))
        init_note(p, "start reloads on edits (--reload): %s runs %s with reloads", source,
                  f->server);
    else
        init_note(p,
                  "start runs without --reload, as none of Makefile, Procfile, justfile, "
                  "package.json or the Playwright config runs %s with it; add it to start for "
                  "a server that reloads on edits (each reload answers for the code it "
                  "loaded)",
                  f->server);
}

int init_plan_python(struct init_plan *p)
{
    if (p->app.kind == CLI_APP_DJANGO) {
        python_notes(p, "Django", NULL);
        return 0;
    }
    const struct framework *f = framework_for(p->app.kind);
    if (!f)
        return 0;
    python_notes(p, f->ctor, f);
    return plan_wrap(p, f);
}
