/* app.h - what an app checkout is, as far as its files tell: its kind
 * (Django, Next, Vite, FastAPI...), its dev server's command and its
 * Playwright config (init_detect.c, init_python.c). `wtproxy init` edits
 * it and doctor judges it. Internal to cli/. */
#ifndef WTP_CLI_APP_H
#define WTP_CLI_APP_H

#include <limits.h>

#include "cli.h"

enum cli_app_kind {
    CLI_APP_NONE,
    CLI_APP_DJANGO,
    CLI_APP_NEXT,
    CLI_APP_VITE,
    CLI_APP_EXPRESS,
    CLI_APP_NODE,
    CLI_APP_FASTAPI,   /* ASGI, served by uvicorn */
    CLI_APP_STARLETTE, /* ASGI, served by uvicorn */
    CLI_APP_FLASK,     /* WSGI, served by `flask run` */
    CLI_APP_NEST,      /* NestJS, served by `nest start --watch` (init_nest.c) */
    CLI_APP_ASTRO,     /* Astro, served by `astro dev` (init_astro.c) */
    CLI_APP_RACK       /* a config.ru (Sinatra, Rails...), served by rackup (init_rack.c) */
};

/* The /__whoami plugin as one entry of a Vite config's plugins, as init
 * adds it and doctor's fix names it (init_vite_plugin.c says why so). */
#define CLI_VITE_WHOAMI_ENTRY                                                                      \
    "process.env.WTPROXY_PORT ? import(String('wtproxy-whoami/vite')).then((m) => "                \
    "m.wtproxyWhoami()) : null"

/* init_node.c: the FILE of the `node FILE` that start runs in dir, itself
 * or as the package script it names (`npm run dev`: scripts.dev of dir's
 * package.json), into file. Returns 1 when FILE imports wtproxy-whoami, 0
 * when it does not, -1 when start runs no `node FILE` or FILE is unreadable. */
int cli_node_entry_imports(const char *dir, const char *start, char *file, size_t len);

/* init_detect.c: the JSON of dir/name (package.json, nest-cli.json), NULL
 * when it is absent, unreadable or no JSON. json_decref it. */
json_t *cli_json_in(const char *dir, const char *name);

/* init_node.c: what a package manager's line runs: scripts.X of dir's
 * package.json for `npm run X`, `npm start`, `yarn [run] X`, `pnpm [run]
 * X`, into out; the line itself for any other. */
void cli_script_command(const char *dir, const char *line, char *out, size_t len);

/* init_node.c: whether file (relative to dir) is a CommonJS module, where
 * an `import` line is a SyntaxError: a .cjs; a .js that calls require and
 * has no import or export line, its package.json not "type": "module". */
int cli_node_entry_commonjs(const char *dir, const char *file);

/* init_astro.c: the astro.config.* of dir into name; -1 when it has none. */
int cli_astro_config(const char *dir, char *name, size_t len);

/* init_nest.c: a NestJS app's entry module relative to dir (nest-cli.json's
 * sourceRoot/entryFile.ts, src/main.ts by default) into out; -1 for a
 * monorepo's projects, whose apps init does not choose between. */
int cli_nest_entry(const char *dir, char *out, size_t len);

/* init_nest.c: whether dir holds a NestJS app (its package.json names
 * @nestjs/core) whose entry module, its path into file, does not mount
 * wtproxy-whoami. */
int cli_nest_lacks_whoami(const char *dir, char *file, size_t len);

/* init_nest.c: the line that mounts the /__whoami middleware on the Nest
 * application named app, as init writes it and doctor's fix says it. */
void cli_nest_use_line(const char *app, char *out, size_t len);

/* A Playwright config, as far as its literal text tells. */
#define CLI_PW_MAX_SERVERS 8 /* webServer entries read; more are not adopted */

struct cli_playwright {
    char file[32];      /* "playwright.config.ts"; "" when the checkout has none */
    char *text;         /* its contents (owned) */
    int web_server;     /* it has a webServer block */
    int has_url;        /* ... with url: (recipe "url") */
    int has_port;       /* ... with port: (recipe "port") */
    int uses_run;       /* ... whose command runs `wtproxy run` */
    int run_by_name;    /* ... as `wtproxy` bare, found on PATH (not a path, not ${var}) */
    int reuse;          /* ... with reuseExistingServer not literally false */
    int front;          /* the port of a literal baseURL (else webServer.url), 0 when none */
    int base_port;      /* the port of a literal baseURL, 0 when none */
    int url_port;       /* the port of a literal webServer.url, 0 when none */
    int run_front;      /* its `wtproxy run`'s --front, 0 without (the .wtproxy's then) */
    char run_cmd[1024]; /* the server command its `wtproxy run ... --` runs; "" unknown */
    char command[512];  /* a one-object webServer's literal command, "" when not a plain string */
    int nservers;       /* entries of a webServer array (each `{...}` with a command), else 0 */
    int of_top;         /* the top folder's entry for a subfolder's server: never edited */
    struct cli_pw_server {
        char command[512]; /* its literal command, "" when not a plain string */
        int port;          /* the port of its literal url (or port:), 0 when none */
        char path[256];    /* its url's path ("/api/health"), "" for none or "/" */
    } server[CLI_PW_MAX_SERVERS];
};

struct cli_app {
    enum cli_app_kind kind;
    char settings[PATH_MAX]; /* Django: the settings file, relative to the checkout */
    char module[PATH_MAX];   /* FastAPI, Starlette, Flask: the file that assigns `app` */
    char start[1024];        /* the dev server's command, with {port} or reading $PORT */
    char vite_root[256];     /* Vite: the root folder its command serves, "" the checkout */
    int at_top; /* a subfolder's app whose start runs from the worktree's top (admin.main:app,
                 * init_py_top.c), not `cd DIR && ...` */
    struct cli_playwright pw;
};

/* The port of a literal http://localhost:N or http://127.0.0.1:N URL
 * (a path may follow), 0 when url is not one. */
int cli_url_port(const char *url);

/* Read dir's Playwright config into pw (pw->file "" when none). */
void cli_playwright_read(const char *dir, struct cli_playwright *pw);

/* Fill pw's fields from pw->text (owned, set). */
void cli_playwright_parse(struct cli_playwright *pw);

/* For dir below its worktree's top folder (api/, web/), with no Playwright
 * config of its own: the top's webServer entry that starts dir's server
 * (`cwd: 'api'` or `cd api && ...`), as a config of that one entry, with
 * pw->of_top set (init_pw_top.c); pw untouched when there is none. */
void cli_playwright_of_top(const char *dir, struct cli_playwright *pw);

/* init_sub.c: the commands that adopt the apps of dir's direct
 * subfolders, for a dir that holds none of its own (api/, web/), into
 * out: "wtproxy init api --apply && wtproxy init web --apply", each folder
 * named as the current folder's shell finds it (its name when that is
 * dir, else its path); and, when kinds is not NULL, what each holds
 * ("api/ holds an express app; web/ holds a next app"). Returns how many. */
int cli_sub_adopt(const char *dir, char *out, size_t len, char *kinds, size_t klen);

/* The end of the {...} block opening at or after p (strings and comments
 * skipped), or NULL when it does not close. */
const char *cli_block_end(const char *p);

/* Detect the app in dir: Django (manage.py and the settings module it
 * names), else Node (package.json: next, vite, or a `node FILE` script),
 * else FastAPI, Starlette or Flask (init_python.c), and its Playwright
 * config. Returns 0, or -1 with err naming what was looked for (app->pw
 * is read either way; free with cli_app_free). */
int cli_app_detect(const char *dir, struct cli_app *app, char *err, size_t errlen);
const char *cli_app_name(enum cli_app_kind k);
void cli_app_free(struct cli_app *app);

/* --- init_python.c --- */

/* The interpreter a Python dev server of dir is started with: the one
 * pw's webServer.command names by path before runs (" manage.py
 * runserver", " -m uvicorn"), else .venv/bin/python, else
 * venv/bin/python, else, in a subfolder, the top's (cli_pytop_python),
 * else python3 (the daemon's PATH). Into out. */
void cli_python_of(const char *dir, const struct cli_playwright *pw, const char *runs, char *out,
                   size_t outlen);

/* --- py_probe.c --- */

#define CLI_PY_PROBE_MS 5000 /* the interpreter's start and one import */

/* Run `PREFIX -c CODE` through /bin/sh in dir; its first line of output
 * into out ("" when it printed none). Killed, its group too, after
 * CLI_PY_PROBE_MS. Returns the exit status, or -1 when it timed out.
 * CODE holds no single quote. */
int cli_py_probe(const char *dir, const char *prefix, const char *code, char *out, size_t len);

/* --- init_gunicorn.c --- */

/* The start of a Django app whose Playwright webServer runs gunicorn (the
 * command after its `wtproxy run ... --`, else its one literal command):
 * that command, its one bind made 127.0.0.1:{port} (added when it has
 * none), into out. Returns 0, or -1 when the config runs no gunicorn
 * line init can read (shell syntax, several binds). */
int cli_gunicorn_start(const struct cli_playwright *pw, char *out, size_t len);

/* --- init_py_top.c: a Python app in a subfolder, seen from its top --- */

/* Whether dir is a direct subfolder or workspace member of its worktree's
 * top: then 1, the top into root and dir's path from it into rel. */
int cli_pytop(const char *dir, char *root, size_t rlen, char *rel, size_t rellen);

/* For such a dir: whether its app module's text imports the top's
 * packages (`from app.db import engine`, app/ at the top) and none of
 * dir's own modules by a bare name: then 1, and dir as a module path from
 * the top into out ("admin"): its server runs from the top, where `cd
 * admin` makes that import fail. */
int cli_pytop_module(const char *dir, const char *text, char *out, size_t len);

/* For such a dir: the interpreter the top's .wtproxy services run by path
 * before runs (" -m uvicorn"), else the one its Playwright config names,
 * else its virtualenv's, as a path from dir ("../.venv/bin/python",
 * "/usr/bin/python3") into out. -1 when none. */
int cli_pytop_python(const char *dir, const char *runs, char *out, size_t len);

/* The interpreter py, a path from dir, as a path from its worktree's top
 * (in place): "../.venv/bin/python" becomes ".venv/bin/python". */
void cli_pytop_rebase(const char *dir, char *py, size_t len);

/* For such a dir: whether a service of the top's .wtproxy runs server
 * ("uvicorn", "flask") with reloads; then 1 and which into source
 * ("../.wtproxy's [service api]"). */
int cli_pytop_reload(const char *dir, const char *server, char *source, size_t len);

/* Whether a .wtproxy's start runs the server of subfolder rel: `cd rel &&
 * ...`, or its module from the top (`admin.main:app`, `--app admin.main`). */
int cli_start_in(const char *start, const char *rel);

/* What cli_pyapp_detect looks for, as the refusal names it. */
#define CLI_PYAPP_LOOKED_FOR                                                                       \
    "main.py, app.py or app/main.py assigning at its top level `app = FastAPI(`, "                 \
    "`app = Starlette(` or `app = Flask(`"

/* init_rack.c: a Rack app of dir (its config.ru) into app: its kind and
 * start. -1 when dir has no config.ru. */
int cli_rack_detect(const char *dir, struct cli_app *app);

/* A FastAPI, Starlette or Flask app of dir (see init_python.c) into app:
 * its kind, module and start. Returns 0, or -1 when there is none. */
int cli_pyapp_detect(const char *dir, struct cli_app *app);

#endif
