/* init_sub.c - the apps in a checkout's direct subfolders (api/manage.py,
 * api/main.py with FastAPI, web/package.json with vite), for `wtproxy init`: an app of two servers
 * in two folders is told of the one its top folder does not show, and of
 * the command that adopts it, where it was told of one server only, or
 * that its layout is unknown. */
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

int init_sub_apps(const char *dir, const char *skip, char *out, size_t len)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    out[0] = '\0';
    while (d && n < INIT_SUB_MAX && (e = readdir(d))) {
        char sub[PATH_MAX], err[512];
        struct cli_app app;
        if (!candidate(e) || (skip && strcmp(e->d_name, skip) == 0) ||
            snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) >= (int)sizeof sub ||
            !app_files(sub, e->d_name))
            continue;
        int found = cli_app_detect(sub, &app, err, sizeof err) == 0;
        size_t used = strlen(out);
        if (found && used + 1 < len)
            snprintf(out + used, len - used, "%s%s/ holds a %s app (wtproxy init %s)",
                     n ? "; " : "", e->d_name, cli_app_name(app.kind), sub);
        n += found;
        cli_app_free(&app);
    }
    if (d)
        closedir(d);
    return n;
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
