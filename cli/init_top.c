/* init_top.c - for an app in a subfolder of its worktree (an API in api/
 * beside a Vite front end at the top), the edit of the top folder's
 * .wtproxy, the one file the daemon reads: this server as a `[service
 * NAME]` section started by `cd api && ...`. A file of one unnamed
 * service (init at the top ran first) cannot just get a section below
 * it: the daemon refuses keys outside sections in a file with sections.
 * So that service becomes a named section too, its keys and comments
 * kept, and the whole new file is shown as one diff. A top folder with no
 * .wtproxy and no app of its own gets a new file, this server's section
 * its first. No `after`: each
 * service starts on the first request on its own front, and a front
 * end's proxy to the API's front is such a request. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "init.h"
#include "registry.h"
#include "wtfile.h"

/* DIR below the top: "api" of /repo/api. */
static const char *folder_of(const struct init_plan *p)
{
    return p->dir + strlen(p->top) + 1;
}

/* This server's start line in the top .wtproxy: `cd DIR && START`, or
 * START itself for a module served from the top (init_py_top.c). */
static void start_line(const struct init_plan *p, char *out, size_t len)
{
    if (p->app.at_top)
        snprintf(out, len, "%s", p->app.start);
    else
        snprintf(out, len, "cd %s && %s", folder_of(p), p->app.start);
}

void init_top_path(const struct init_plan *p, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (const char *s = folder_of(p); s && used + 3 < len; s = strchr(s, '/'), s = s ? s + 1 : 0)
        used += (size_t)snprintf(out + used, len - used, "../");
    snprintf(out + used, len - used, ".wtproxy");
}

/* A service named for what it runs: a front end (Vite, Next, a node
 * server) "web", a Python server "api"; NULL when the command says
 * neither. */
static const char *name_of_start(const char *start)
{
    static const char *const web[] = {"vite", "next", "node", "npm", "pnpm", "yarn"};
    static const char *const api[] = {"manage.py", "uvicorn", "flask", "gunicorn", "python"};
    for (size_t i = 0; i < sizeof web / sizeof web[0]; i++)
        if (strstr(start, web[i]))
            return "web";
    for (size_t i = 0; i < sizeof api / sizeof api[0]; i++)
        if (strstr(start, api[i]))
            return "api";
    return NULL;
}

/* The last folder name of path, when it is a valid service name. */
static int folder_name(const char *path, char *out, size_t len)
{
    const char *slash = strrchr(path, '/');
    snprintf(out, len, "%s", slash ? slash + 1 : path);
    return reg_service_name_ok(out, NULL, 0) ? 1 : (out[0] = '\0', 0);
}

/* This server's section name: its folder's ("api"), else what it runs. */
static void new_name(const struct init_plan *p, char *out, size_t len)
{
    if (!folder_name(p->dir, out, len))
        snprintf(out, len, "%s",
                 p->app.kind == CLI_APP_DJANGO || p->app.kind == CLI_APP_FASTAPI ||
                         p->app.kind == CLI_APP_FLASK
                     ? "api"
                     : "web");
}

/* The unnamed service's new name: what it runs, else the top folder's
 * name, else "app"; never taken, the name of this server's section. */
static void unnamed_name(const struct init_plan *p, const char *start, const char *taken, char *out,
                         size_t len)
{
    const char *kind = name_of_start(start);
    snprintf(out, len, "%s", kind ? kind : "");
    if (!out[0] || strcmp(out, taken) == 0)
        folder_name(p->top, out, len);
    if (!out[0] || strcmp(out, taken) == 0)
        snprintf(out, len, "%s", strcmp(taken, "app") == 0 ? "main" : "app");
}

/* Whether the daemon's own parser takes text as a .wtproxy (a temp
 * folder holds it); err says why not. */
static int parses(const char *text, char *err, size_t errlen)
{
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX], path[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/wtproxy-init-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return snprintf(err, errlen, "cannot check it in a temp folder: %s", strerror(errno)), 0;
    snprintf(path, sizeof path, "%s/.wtproxy", dir);
    FILE *fp = fopen(path, "w");
    int ok = fp && fputs(text, fp) >= 0;
    if (fp && fclose(fp) != 0)
        ok = 0;
    struct wtfile *f = ok ? malloc(sizeof *f) : NULL;
    ok = f && wtfile_read(dir, f, err, errlen) == 0;
    free(f);
    unlink(path);
    rmdir(dir);
    return ok;
}

/* The section already there for this server (one started by `cd DIR
 * &&`, or running its module from the top), or one in its way, of its
 * name or on its front: said, and 1; 0 when none. */
static int in_the_way(struct init_plan *p, const struct wtfile *f, const char *name)
{
    const struct wtfile_service *s = wtfile_by_name(f, name);
    const struct wtfile_service *o = wtfile_by_front(f, p->front);
    char start[PATH_MAX + 1100];
    start_line(p, start, sizeof start);
    for (int i = 0; i < f->n; i++)
        if (cli_start_in(f->svc[i].start, folder_of(p))) {
            init_note(p, "%s declares this server already ([service %s], front %d): nothing to add",
                      f->path, f->svc[i].name, f->svc[i].front);
            return 1;
        }
    if (s)
        init_note(p,
                  "%s has a [service %s] already, started by `%s`: this server is not added; "
                  "rename that section, or add one by hand: start = %s, front = %d",
                  f->path, name, s->start, start, p->front);
    int free_front = p->front;
    for (int i = 0; i < f->n; i++) /* one above them all: no service has it */
        free_front = f->svc[i].front >= free_front ? f->svc[i].front + 1 : free_front;
    if (!s && o)
        init_note(p,
                  "%s: service %s serves front %d already, and a front routes to one service: "
                  "give this server its own front: wtproxy init %s --front %d",
                  f->path, o->name[0] ? o->name : "(unnamed)", p->front, p->dir, free_front);
    return s || o;
}

/* The daemon must own every front: `wtproxy serve --listen A --listen B`. */
static void note_listen(struct init_plan *p, const struct wtfile *f)
{
    char listen[WTFILE_MAX_SERVICES * 16 + 32] = "";
    size_t used = 0;
    for (int i = 0; i < f->n; i++)
        used +=
            (size_t)snprintf(listen + used, sizeof listen - used, " --listen %d", f->svc[i].front);
    snprintf(listen + used, sizeof listen - used, " --listen %d", p->front);
    init_note(p,
              "the daemon starts each service on the first request on its front, so it must "
              "own every one: wtproxy serve%s (wtproxy doctor says how to restart it so)",
              listen);
}

/* text with "[service NAME]" above the unnamed service's first key (f: the
 * file text holds, NULL when unnamed is), and
 * this server's section at the end, into t. */
static void new_text(const struct init_plan *p, const struct wtfile *f, const char *text,
                     const char *unnamed, const char *name, struct init_text *t)
{
    const char *at = text;
    for (int line = 1; unnamed && line < f->svc[0].line && at; line++)
        at = strchr(at, '\n'), at = at ? at + 1 : NULL;
    at = unnamed && at ? at : text + strlen(text);
    init_put(t, text, (size_t)(at - text));
    if (unnamed) {
        init_puts(t, "[service ");
        init_puts(t, unnamed);
        init_puts(t, "]\n");
    }
    init_puts(t, at);
    if (t->len && t->s[t->len - 1] != '\n')
        init_puts(t, "\n");
    char sec[PATH_MAX + 2400], start[PATH_MAX + 1100];
    start_line(p, start, sizeof start);
    snprintf(sec, sizeof sec, "\n[service %s]\nstart = %s\nfront = %d\n%s", name, start, p->front,
             p->app.kind == CLI_APP_NEXT ? "ready = /__whoami\n" : "");
    init_puts(t, sec);
}

/* Edit the top .wtproxy that is there (text, parsed into f). */
static int plan_edit(struct init_plan *p, const struct wtfile *f, char *text)
{
    char name[REG_SERVICE_MAX], unnamed[REG_SERVICE_MAX], rel[PATH_MAX], err[PATH_MAX + 1200];
    new_name(p, name, sizeof name);
    int one = f->n == 1 && !f->svc[0].name[0];
    if (one)
        unnamed_name(p, f->svc[0].start, name, unnamed, sizeof unnamed);
    if (in_the_way(p, f, name)) {
        free(text);
        return 0;
    }
    struct init_text t = {0};
    new_text(p, f, text, one ? unnamed : NULL, name, &t);
    if (!t.oom && !parses(t.s, err, sizeof err)) {
        init_note(p,
                  "%s: left as it is: with this server's section the daemon would refuse it "
                  "(%s); add [service %s] by hand",
                  f->path, err, name);
        free(t.s);
        free(text);
        return 0;
    }
    if (one)
        init_note(p,
                  "%s declared one server without a section: it becomes [service %s], its keys "
                  "kept (a file with sections has every key in one), beside [service %s]",
                  f->path, unnamed, name);
    note_listen(p, f);
    init_top_path(p, rel, sizeof rel);
    return init_add_change(p, rel, text, &t);
}

int init_top_free_front(struct init_plan *p)
{
    char err[PATH_MAX + 1200], list[WTFILE_MAX_SERVICES * 32] = "";
    struct wtfile *f = malloc(sizeof *f);
    int front = 0;
    size_t used = 0;
    if (f && wtfile_read(p->top, f, err, sizeof err) == 0)
        for (int i = 0; i < f->n; i++) {
            front = f->svc[i].front >= front ? f->svc[i].front + 1 : front;
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%d%s%s%s", i ? ", " : "",
                                     f->svc[i].front, f->svc[i].name[0] ? " (" : "", f->svc[i].name,
                                     f->svc[i].name[0] ? ")" : "");
        }
    if (front > 0 && front <= 65535)
        init_note(p,
                  "front %d: the one above the fronts %s declares (%s), as a front routes to "
                  "one service; the default, %d, is often another server's (--front N takes "
                  "another)",
                  front, f->path, list, WTP_DEFAULT_FRONT_PORT);
    free(f);
    return front <= 65535 ? front : 0;
}

int init_top_is_app(const struct init_plan *p)
{
    struct cli_app app;
    char err[1024];
    int is = cli_app_detect(p->top, &app, err, sizeof err) == 0;
    cli_app_free(&app);
    return is;
}

/* No top .wtproxy yet: an app whose top folder runs no server of its own
 * (a front end in web/, an API in api/, and only their tests at the top).
 * A new file, this server its first section; `wtproxy init` of the other
 * folder then adds its own. Only a note said what to write by hand: the
 * app's first adopter wrote the file, and its format, from that. */
static int plan_new(struct init_plan *p)
{
    char name[REG_SERVICE_MAX], rel[PATH_MAX], apps[2048];
    struct init_text t = {0};
    new_name(p, name, sizeof name);
    new_text(p, NULL, init_why_file, NULL, name, &t);
    int others = (!strchr(folder_of(p), '/') || init_member_is(p->top, folder_of(p))) &&
                 init_sub_apps(p->top, folder_of(p), apps, sizeof apps) > 0;
    init_note(p,
              "%s/.wtproxy: new, the one file the daemon reads (at the worktree's top folder): "
              "this server is its [service %s]%s%s",
              p->top, name, others ? "; each other server its own, the same way: " : "",
              others ? apps : "");
    init_top_path(p, rel, sizeof rel);
    return init_add_change(p, rel, NULL, &t);
}

int init_plan_top(struct init_plan *p)
{
    char path[PATH_MAX], err[PATH_MAX + 1200], start[PATH_MAX + 1100];
    char *text = cli_join(path, sizeof path, p->top, ".wtproxy") < 0
                     ? NULL
                     : cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
    int none = !text && errno == ENOENT;
    start_line(p, start, sizeof start);
    if (none && !init_top_is_app(p))
        return plan_new(p);
    if (none) {
        init_note(p,
                  "no .wtproxy written in %s: the daemon reads a worktree's .wtproxy at its top "
                  "folder only; add this server to %s/.wtproxy as a section (wtproxy help "
                  "wtproxy-file, \"Several services\"): [service NAME], start = %s, "
                  "front = %d; or adopt the top folder's app first (wtproxy init %s --apply), "
                  "then run this again",
                  p->dir, p->top, start, p->front, p->top);
        return 0;
    }
    struct wtfile *f = text ? malloc(sizeof *f) : NULL;
    if (!text || !f || wtfile_read(p->top, f, err, sizeof err) != 0) {
        init_note(p,
                  "the top .wtproxy is left as it is: %s; fix that, then run wtproxy init %s "
                  "again to add this server's section",
                  text && !f ? "out of memory" : err, p->dir);
        free(f);
        free(text);
        return 0;
    }
    int r = plan_edit(p, f, text);
    free(f);
    return r;
}
