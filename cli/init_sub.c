/* init_sub.c - the apps in a checkout's direct subfolders (api/manage.py,
 * api/main.py with FastAPI, web/package.json with vite), for `wtproxy
 * init`: an app of two servers in two folders is told of the one its top
 * folder does not show, and of the command that adopts it, where it was
 * told of one server only, or that its layout is unknown; init at such a
 * top, and doctor's fixes there, name each one's init to run (`wtproxy
 * init --apply` there finds no app); and which of them the top Playwright
 * config's baseURL is the front of. */
#include <dirent.h>
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

/* Whether a subfolder is one an app could be in: not hidden, no
 * dependencies, no virtualenv, no cache. */
static int candidate(const struct dirent *d)
{
    static const char *const skip[] = {"node_modules", "venv", "__pycache__", "dist", "build"};
    if (d->d_name[0] == '.' || d->d_type != DT_DIR)
        return 0;
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (strcmp(d->d_name, skip[i]) == 0)
            return 0;
    return 1;
}

/* One walk over dir's subfolder apps (but skip), in name order, at most
 * INIT_SUB_MAX; each calls fn with the folder's name, its path and its
 * app. Returns how many apps it found. Sorted: the commands a message
 * names are run in its order, and say the same on every filesystem. */
static int each_sub_app(const char *dir, const char *skip,
                        void (*fn)(void *arg, const char *name, const char *sub,
                                   const struct cli_app *app),
                        void *arg)
{
    struct dirent **list = NULL;
    int n = 0, count = scandir(dir, &list, candidate, alphasort);
    for (int i = 0; i < count; i++) {
        char sub[PATH_MAX], err[512];
        struct cli_app app;
        const char *name = list[i]->d_name;
        if (n < INIT_SUB_MAX && (!skip || strcmp(name, skip) != 0) &&
            snprintf(sub, sizeof sub, "%s/%s", dir, name) < (int)sizeof sub &&
            app_files(sub, name) && cli_app_detect(sub, &app, err, sizeof err) == 0) {
            fn(arg, name, sub, &app);
            n++;
            cli_app_free(&app);
        }
        free(list[i]);
    }
    free(list);
    return n;
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

/* The service of f started in folder sub (`cd SUB && ...`), NULL none. */
static const struct wtfile_service *started_in(const struct wtfile *f, const char *sub)
{
    size_t n = strlen(sub);
    for (int i = 0; i < f->n; i++)
        if (strncmp(f->svc[i].start, "cd ", 3) == 0 && strncmp(f->svc[i].start + 3, sub, n) == 0 &&
            strncmp(f->svc[i].start + 3 + n, " &&", 3) == 0)
            return &f->svc[i];
    return NULL;
}

int init_sub_declared(const char *dir, char *out, size_t len)
{
    DIR *d = opendir(dir);
    struct wtfile *f = d ? malloc(sizeof *f) : NULL;
    struct dirent *e;
    char err[1024];
    int n = 0, all = f && wtfile_read(dir, f, err, sizeof err) == 0;
    out[0] = '\0';
    while (all && (e = readdir(d))) {
        char sub[PATH_MAX];
        struct cli_app app;
        if (!candidate(e) ||
            snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) >= (int)sizeof sub ||
            !app_files(sub, e->d_name))
            continue;
        int found = cli_app_detect(sub, &app, err, sizeof err) == 0;
        cli_app_free(&app);
        const struct wtfile_service *s = found ? started_in(f, e->d_name) : NULL;
        size_t used = strlen(out);
        if (s && used + 1 < len)
            snprintf(out + used, len - used, "%s%s/ as [service %s] on front %d", n ? ", " : "",
                     e->d_name, s->name, s->front);
        n += s != NULL;
        all = !found || s;
    }
    if (d)
        closedir(d);
    free(f);
    return all && n > 0;
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
