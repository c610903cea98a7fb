/* init.h - `wtproxy init`'s plan: the files it would create or edit and
 * the notes it prints (init_edit.c makes it, init.c shows it, init_write.c
 * writes it). Internal to cli/. */
#ifndef WTP_CLI_INIT_H
#define WTP_CLI_INIT_H

#include <jansson.h>
#include <limits.h>

#include "app.h"

#define INIT_MAX_CHANGES 6

enum init_recipe { INIT_RECIPE_NONE, INIT_RECIPE_URL, INIT_RECIPE_PORT };

struct init_change {
    char path[PATH_MAX]; /* relative to the checkout */
    char *old;           /* its text now; NULL: a new file */
    char *new;           /* its text after */
};

struct init_plan {
    const char *dir;    /* the checkout */
    char top[PATH_MAX]; /* the top folder of dir's worktree when dir is below it; "" else */
    struct cli_app app;
    enum init_recipe recipe;
    int front;     /* the .wtproxy's front port */
    int databases; /* the two DB edits are wanted */
    struct init_change ch[INIT_MAX_CHANGES];
    size_t n;
    json_t *notes; /* strings: what was left alone and why, what to do by hand */
};

/* init_edit.c: the comment a .wtproxy init writes begins with. */
extern const char init_why_file[];

/* init.c: whether the Django settings file path names PostgreSQL; base:
 * the last quoted word on its last 'NAME' (or "NAME") line ('shop' of
 * 'NAME': os.environ.get('DB', 'shop')), the dev database's base, "" none
 * or computed ("shop_" + getpass.getuser(): a guess would be wrong);
 * with claimed, whether it wraps DATABASES in claimed_databases. */
int init_settings_db(const char *path, char *base, size_t len, int *claimed);

/* Fill p->ch and p->notes from p->app, p->recipe, p->front and
 * p->databases. Returns 0, or -1 out of memory. */
int init_plan_make(struct init_plan *p);
void init_plan_free(struct init_plan *p);

/* A growable text for building a file: oom is set when it could not grow. */
struct init_text {
    char *s;
    size_t len, cap;
    int oom;
};

void init_put(struct init_text *t, const char *s, size_t n);
void init_puts(struct init_text *t, const char *s);

/* Record the change of path from old (NULL: a new file; owned by the
 * plan afterwards) to t's text. -1 out of memory. */
int init_add_change(struct init_plan *p, const char *path, char *old, struct init_text *t);

/* init_python.c: the notes of a Python app's start command and, for
 * FastAPI, Starlette and Flask, the whoami wrap in the app module.
 * Returns 0, or -1 out of memory. */
int init_plan_python(struct init_plan *p);

/* (init_flask.c) The flags the first `flask ... run` command of text gives
 * flask that init's start keeps: group's before `run` (" --debug", its
 * --env-file), run's after it; not --app (init's), --host and --port
 * (wtproxy's), --reload (init's choice). Returns 1 when text has such a
 * command, 0 (both "") when not. */
int cli_flask_flags(const char *text, char *group, size_t glen, char *run, size_t rlen);

/* init_next.c: a Next.js app's /__whoami route and next.config wrap, or
 * notes saying what to write by hand. Returns 0, or -1 out of memory. */
int init_plan_next(struct init_plan *p);

/* init_nest.c: a NestJS app's /__whoami middleware in its entry module
 * (and its listen given $PORT), or a note saying what to write by hand.
 * Returns 0, or -1 out of memory. */
int init_plan_nest(struct init_plan *p);

/* init_astro.c: an Astro app's /__whoami plugin in astro.config.*'s
 * vite.plugins, or a note with the entry to write by hand. Returns 0, or
 * -1 out of memory. */
int init_plan_astro(struct init_plan *p);

/* init_rack.c: a Rack app's /__whoami block in config.ru, above its `run`,
 * or a note saying what to paste by hand. Returns 0, or -1 out of memory. */
int init_plan_rack(struct init_plan *p);

/* init_vite_plugin.c: an Astro config's text with the plugin entry in
 * its `vite: { plugins: [...] }` (the key added where absent), into t; -1
 * with why when its shape is not one to edit safely. */
int init_astro_config_edit(const char *text, struct init_text *t, const char **why);

/* init_members.c: call fn for each folder of dir that may hold an app of
 * its own, in name order: its workspace's members (package.json
 * "workspaces", pnpm-workspace.yaml "packages") that run a dev server
 * (scripts.dev or scripts.start), else its direct subfolders; name is its
 * path from dir ("apps/api", "web"), path dir/name. Returns how many. */
int init_members_each(const char *dir, void (*fn)(void *arg, const char *name, const char *path),
                      void *arg);

/* init_members.c: whether rel (a path from top) is one of those folders. */
int init_member_is(const char *top, const char *rel);

/* init_sub.c: the apps dir's direct subfolders or workspace members (but
 * skip, when not NULL) hold, in name order, said into out as "api/ holds a django app (wtproxy
 * init DIR/api)"; returns how many. */
int init_sub_apps(const char *dir, const char *skip, char *out, size_t len);

/* init_sub.c: whether the top folder's Playwright baseURL port, which no
 * webServer entry of that config serves for another subfolder's app, is
 * that of the app of kind in top/name: the only subfolder app, or the only
 * front end (Next, Vite), the server a test's browser goes to. */
int init_sub_base_is(const char *top, const char *name, enum cli_app_kind kind, int port);

/* init_pw_top.c: for a DIR below its worktree's top (p->top set) that no
 * webServer entry of the top's Playwright config starts: that config's
 * baseURL port when the top is no app itself and init_sub_base_is (a
 * note says which line), else 0. */
int init_top_base_front(struct init_plan *p);

/* init_sub.c: whether dir's .wtproxy declares a service started in each
 * of its subfolders' apps (`cd api && ...`), and there is one at least:
 * said into out as "web/ as [service web] on front 8000, ...". */
int init_sub_declared(const char *dir, char *out, size_t len);

/* init_sub.c: a note naming them, when p's folder is its worktree's top. */
void init_plan_sub(struct init_plan *p);

/* init_top.c: for a DIR below its worktree's top (p->top set), the edit
 * of the top folder's .wtproxy that declares it as a [service NAME]
 * (`start = cd DIR && ...`), a file of one unnamed service made into
 * sections, a new file when there is none; or a note saying why not. 0,
 * or -1 out of memory. */
int init_plan_top(struct init_plan *p);

/* init_top.c: whether p->top holds an app of its own, whose `wtproxy
 * init` writes the top .wtproxy (a file made here first would be left
 * alone by it, as one already there), and whose the top config's baseURL is. */
int init_top_is_app(const struct init_plan *p);

/* init_top.c: for a DIR below its worktree's top (p->top set), the front
 * one above every front the top .wtproxy declares (a note says so), else
 * 0: the default 8000 is a front of none of them, but often another
 * server's (the first service's own default, another user's). */
int init_top_free_front(struct init_plan *p);

/* init_top.c: the top .wtproxy's path relative to p->dir ("../.wtproxy"). */
void init_top_path(const struct init_plan *p, char *out, size_t len);

/* init_pw_reporter.c: text, the app's Playwright config, with wtproxy's
 * reporter in its reporters (guarded: none where wtproxy-whoami is not
 * linked), into t: 1 edited, 0 left (it names it already, or a note says
 * what to add by hand). */
int init_pw_reporter(struct init_plan *p, const char *text, struct init_text *t);

/* init_vite.c: the text of the Vite config Vite reads in dir/sub (sub
 * "": dir itself; .js, .mjs, .ts, .mts, .cjs, .cts in that order), its
 * path relative to dir into name; NULL with errno ENOENT when there is
 * none, another errno when it cannot be read. */
char *init_vite_config(const char *dir, const char *sub, char *name, size_t len);

/* init_vite.c: the config file the vite command in cmd names (`--config
 * F`, `--config=F`, `-c F`) into out; 0 when it names none (or cmd runs
 * no vite), 1 when it does. */
int init_vite_config_flag(const char *cmd, char *out, size_t len);

/* init_vite.c: the Vite config a server started by cmd in dir/cwd reads:
 * the file its --config names (relative to that folder: its name
 * cwd/F), else init_vite_config(dir, sub). */
char *init_vite_config_of(const char *dir, const char *sub, const char *cwd, const char *cmd,
                          char *name, size_t len);

/* init_vite_plugin.c: the /__whoami plugin added to a Vite app's config
 * (a new vite.config.mjs when it has none), loaded under wtproxy run
 * only; a note when it lists the plugin already, or has a shape init
 * cannot edit safely (the line to paste). 0, or -1 out of memory. */
int init_plan_vite(struct init_plan *p);
/* init_node.c: a `node FILE` server's notes: FILE imports the middleware
 * already, else the lines to add (Express and node:http); and that each
 * worktree needs node_modules/wtproxy-whoami. */
void init_node_whoami(struct init_plan *p);

/* init_node.c: the same note for the webServer entry run as [service
 * name] by start (`npm run api`: its script's `node FILE`), or, for a
 * command of another kind, that it must answer /__whoami. */
void init_service_whoami(struct init_plan *p, const char *name, const char *start);

/* init_vite.c: the one localhost port the `proxy: {...}` block of a Vite
 * config's text sends to: 0 none, -1 several or one built in code. */
int init_vite_proxy_port(const char *text);

/* init_vite.c: the localhost ports the string literals of a Vite config's
 * `proxy: {...}` block send to (`'/api': 'http://localhost:3001'`, or as
 * its `target:`; comments skipped), each once, into ports (at most max):
 * how many, -1 when the block does not close; *built set when one URL is
 * built in code (`${process.env.WTPROXY_FRONT_API}`), not a literal. */
int init_vite_proxy_ports(const char *text, int *ports, int max, int *built);

/* init_vite_proxy.c: a note for each localhost port the Vite config of p's
 * folder proxies to that is neither p's front nor one the .wtproxy
 * declares: under parallel worktrees it reaches whichever process holds
 * that port, another worktree's API. */
void init_vite_proxy_note(struct init_plan *p);

/* init_vite.c: for a DIR below its worktree's top (p->top set), the port
 * the Vite configs of the top folder and its other subfolders proxy to
 * (a note says which and why), else 0. */
int init_vite_sibling_front(struct init_plan *p);

/* init_write.c: the unified diff of c (`diff -u`, labelled a/PATH and
 * b/PATH, or /dev/null for a new file), malloc'd; NULL with err. */
char *init_diff(const struct init_change *c, char *err, size_t errlen);

/* init_write.c: write c into dir: a new file only where none is, an
 * edited one only if it still holds c->old, its mode kept. Returns 0, or
 * -1 with err. */
int init_write(const char *dir, const struct init_change *c, char *err, size_t errlen);

/* Append a note (printf-style). */
void init_note(struct init_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
