/* init_sub.c - the apps in a checkout's direct subfolders or workspace
 * members (init_members.c: apps/api in a monorepo; api/manage.py,
 * api/main.py with FastAPI, web/package.json with vite), for `wtproxy
 * init`: an app of two servers in two folders is told of the one its top
 * folder does not show, and of the command that adopts it, where it was
 * told of one server only, or that its layout is unknown; init at such a
 * top, and doctor's fixes there, name each one's init to run (`wtproxy
 * init --apply` there finds no app); and which of them the top Playwright
 * config's baseURL is the front of. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cli.h"
#include "init.h"
#include "wtfile.h"

#define INIT_SUB_MAX 4 /* subfolder apps named; a monorepo has more, and a guide */

/* Whether folder sub (named name) has a file an app of its own starts
 * from: manage.py, package.json, or a Python module (api/main.py with its
 * FastAPI app); not app/, whose main.py is the top folder's own module as
 * often as an app of its own. */
static int app_files(const char *sub, const char *name)
{
    return cli_is_file(sub, "manage.py", 0) || cli_is_file(sub, "package.json", 0) ||
           (strcmp(name, "app") != 0 &&
            (cli_is_file(sub, "main.py", 0) || cli_is_file(sub, "app.py", 0)));
}

struct walk {
    const char *skip;
    void (*fn)(void *arg, const char *name, const char *sub, const struct cli_app *app);
    void *arg;
    int n;
};

static void each_app(void *arg, const char *name, const char *sub)
{
    struct walk *w = arg;
    const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    char err[512];
    struct cli_app app;
    if (w->n < INIT_SUB_MAX && (!w->skip || strcmp(name, w->skip) != 0) && app_files(sub, base) &&
        cli_app_detect(sub, &app, err, sizeof err) == 0) {
        w->fn(w->arg, name, sub, &app);
        w->n++;
        cli_app_free(&app);
    }
}

/* One walk over dir's apps in its subfolders or workspace members (but
 * skip), in name order, at most INIT_SUB_MAX; each calls fn with the
 * folder's name ("api", "apps/api"), its path and its app. Returns how
 * many apps it found. Sorted: the commands a message names are run in its
 * order, and say the same on every filesystem. */
static int each_sub_app(const char *dir, const char *skip,
                        void (*fn)(void *arg, const char *name, const char *sub,
                                   const struct cli_app *app),
                        void *arg)
{
    struct walk w = {skip, fn, arg, 0};
    init_members_each(dir, each_app, &w);
    return w.n;
}

struct said {
    char *out, *kinds; /* kinds: "api/ holds an express app; ...", when not NULL */
    size_t len, klen;
    int at_dir; /* the current folder is dir: its apps named by their folder */
};

/* Append "api/ holds an express app" to the list in out, with the command
 * that adopts it when cmd. */
static void say_app(char *out, size_t len, const char *name, const char *sub,
                    const struct cli_app *app, int cmd)
{
    const char *kind = cli_app_name(app->kind);
    size_t used = strlen(out);
    if (used + 1 < len)
        snprintf(out + used, len - used, "%s%s/ holds %s %s app%s%s%s", used ? "; " : "", name,
                 strchr("aeiou", kind[0]) ? "an" : "a", kind, cmd ? " (wtproxy init " : "",
                 cmd ? sub : "", cmd ? ")" : "");
}

static void say_init(void *arg, const char *name, const char *sub, const struct cli_app *app)
{
    struct said *s = arg;
    say_app(s->out, s->len, name, sub, app, 1);
}

int init_sub_apps(const char *dir, const char *skip, char *out, size_t len)
{
    struct said s = {.out = out, .len = len};
    out[0] = '\0';
    return each_sub_app(dir, skip, say_init, &s);
}

static void say_adopt(void *arg, const char *name, const char *sub, const struct cli_app *app)
{
    struct said *s = arg;
    size_t used = strlen(s->out);
    if (used + 1 < s->len)
        snprintf(s->out + used, s->len - used, "%swtproxy init %s --apply", used ? " && " : "",
                 s->at_dir ? name : sub);
    if (s->kinds)
        say_app(s->kinds, s->klen, name, sub, app, 0);
}

int cli_sub_adopt(const char *dir, char *out, size_t len, char *kinds, size_t klen)
{
    char here[PATH_MAX], real[PATH_MAX];
    struct said s = {out, kinds, len, klen, 0};
    s.at_dir = realpath(".", here) && realpath(dir, real) && strcmp(here, real) == 0;
    out[0] = '\0';
    if (kinds)
        kinds[0] = '\0';
    return each_sub_app(dir, NULL, say_adopt, &s);
}

/* What the other subfolder apps tell of the top's baseURL port. */
struct base_of {
    int port;
    int others, other_fronts; /* apps, and front ends (Next, Vite), beside this one */
    int taken;                /* one's webServer entry serves that port */
};

static int front_end(enum cli_app_kind k)
{
    return k == CLI_APP_NEXT || k == CLI_APP_VITE;
}

static void count_base(void *arg, const char *name, const char *sub, const struct cli_app *app)
{
    struct base_of *b = arg;
    (void)name, (void)sub;
    b->others++;
    b->other_fronts += front_end(app->kind);
    b->taken |= app->pw.of_top && app->pw.front == b->port;
}

int init_sub_base_is(const char *top, const char *name, enum cli_app_kind kind, int port)
{
    struct base_of b = {.port = port};
    each_sub_app(top, name, count_base, &b);
    return !b.taken && (b.others == 0 || (front_end(kind) && b.other_fronts == 0));
}

/* The service of f started in folder sub (`cd SUB && ...`, or its
 * module run from the top: cli_start_in), NULL none. */
static const struct wtfile_service *started_in(const struct wtfile *f, const char *sub)
{
    for (int i = 0; i < f->n; i++)
        if (cli_start_in(f->svc[i].start, sub))
            return &f->svc[i];
    return NULL;
}

struct declared {
    const struct wtfile *f;
    char *out;
    size_t len;
    int n, all;
};

static void declared_one(void *arg, const char *name, const char *sub)
{
    struct declared *d = arg;
    const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    char err[1024];
    struct cli_app app;
    if (!d->all || !app_files(sub, base))
        return;
    int found = cli_app_detect(sub, &app, err, sizeof err) == 0;
    cli_app_free(&app);
    const struct wtfile_service *s = found ? started_in(d->f, name) : NULL;
    size_t used = strlen(d->out);
    if (s && used + 1 < d->len)
        snprintf(d->out + used, d->len - used, "%s%s/ as [service %s] on front %d",
                 d->n ? ", " : "", name, s->name, s->front);
    d->n += s != NULL;
    d->all = !found || s;
}

int init_sub_declared(const char *dir, char *out, size_t len)
{
    struct wtfile *f = malloc(sizeof *f);
    char err[1024];
    struct declared d = {f, out, len, 0, f && wtfile_read(dir, f, err, sizeof err) == 0};
    out[0] = '\0';
    if (d.all)
        init_members_each(dir, declared_one, &d);
    free(f);
    return d.all && d.n > 0;
}

void init_plan_sub(struct init_plan *p)
{
    char apps[2048];
    if (!p->top[0] && init_sub_apps(p->dir, NULL, apps, sizeof apps) > 0)
        init_note(p,
                  "%s: a server of its own: adopt it with that command, then declare every "
                  "server in this folder's .wtproxy, one [service NAME] section each, with "
                  "`start = cd FOLDER && ...` (wtproxy help wtproxy-file, \"Several services\")",
                  apps);
}
