/* init.c - `wtproxy init [DIR] [--apply] [--recipe url|port] ...`: adopt
 * wtproxy in an app's checkout. Detects the app (init_detect.c), chooses
 * its front port, recipe and database edits, plans the edits
 * (init_edit.c), prints them as a unified diff and, with --apply, writes
 * exactly those (init_write.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "front.h"
#include "init.h"
#include "wtfile.h"

struct init_opts {
    const char *dir, *recipe, *front;
    int apply, json, databases, no_databases;
};

static int usage_error(const char *msg)
{
    fprintf(stderr, "wtproxy init: %s (see wtproxy init --help)\n", msg);
    return 2;
}

static int parse(int argc, char **argv, struct init_opts *o)
{
    const struct cli_opt opts[] = {{"apply", NULL, &o->apply},
                                   {"json", NULL, &o->json},
                                   {"databases", NULL, &o->databases},
                                   {"no-databases", NULL, &o->no_databases},
                                   {"recipe", &o->recipe, NULL},
                                   {"front", &o->front, NULL},
                                   {NULL, NULL, NULL}};
    char err[256];
    int rest, r;
    for (int i = 0; i < argc; i += rest) {
        if ((r = cli_parse(argc - i, argv + i, opts, &rest, err, sizeof err)) != 0)
            return r > 0 ? CLI_HELP : usage_error(err);
        if (rest >= argc - i)
            break;
        if (o->dir)
            return usage_error("give one folder");
        o->dir = argv[i + rest];
    }
    if (o->recipe && strcmp(o->recipe, "url") != 0 && strcmp(o->recipe, "port") != 0)
        return usage_error("--recipe is url or port");
    if (o->databases && o->no_databases)
        return usage_error("choose one of --databases and --no-databases");
    return 0;
}

/* The checkout: DIR, else the worktree the current folder is in. */
static int checkout(const struct init_opts *o, char *out, size_t len)
{
    struct host_worktree w;
    char err[PATH_MAX + 256];
    if (o->dir) {
        if (realpath(o->dir, w.root))
            return snprintf(out, len, "%s", w.root), 0;
        fprintf(stderr, "wtproxy init: %s: %s\n", o->dir, strerror(errno));
        return 2;
    }
    if (host_worktree_of(".", &w, err, sizeof err) < 0) {
        fprintf(stderr,
                "wtproxy init: %s; run it in your app's checkout, or give its folder: "
                "wtproxy init DIR\n",
                err);
        return 2;
    }
    snprintf(out, len, "%s", w.root);
    return 0;
}

/* Whether the string literal that closes at close is the NAME's whole
 * value, or a getenv's default: what follows it ends the value (',', '}',
 * ')', a comment, the line's end), so "shop_" + getpass.getuser() or
 * "shop_%s" % user, a name computed at run time, is not one. */
static int whole_value(const char *open, const char *close, const char *end)
{
    const char *after = close + 1;
    after += strspn(after, " \t\r");
    if (((open[-1] >= 'a' && open[-1] <= 'z') || (open[-1] >= 'A' && open[-1] <= 'Z')))
        return 0; /* f"shop_{user}", b'', r'' */
    return after >= end || *after == ',' || *after == '}' || *after == ')' || *after == '#';
}

int init_settings_db(const char *path, char *base, size_t len, int *claimed)
{
    char err[256];
    char *text = cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
    int pg = text && (strstr(text, "db.backends.postgresql") || strstr(text, "backends.postgis"));
    const char *q = NULL;
    for (const char *n = pg ? text : NULL; n && (n = strstr(n, "NAME")); n++)
        if (n > text && (n[-1] == '\'' || n[-1] == '"') && n[4] == n[-1] && n[5] == ':')
            q = n; /* the last: a DATABASES set again below the default one */
    const char *end = q ? q + strcspn(q, "\n") : NULL;
    base[0] = '\0';
    for (q = q ? q + 5 : NULL; q && (q = strpbrk(q, "'\"")) && q < end;) {
        const char *close = strchr(q + 1, *q);
        if (!close || close >= end)
            break;
        if (whole_value(q, close, end))
            snprintf(base, len, "%.*s", (int)(close - q - 1), q + 1);
        else
            base[0] = '\0'; /* a part of a computed name: no base to guess */
        q = close + 1;
    }
    if (strspn(base, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(base))
        base[0] = '\0'; /* not a database name wtproxy db takes ('db.sqlite3') */
    if (claimed)
        *claimed = pg && strstr(text, "claimed_databases(") != NULL;
    free(text);
    return pg != 0;
}

/* The settings name PostgreSQL: the dev-database edits are on by default. */
static int uses_postgresql(const struct init_plan *p, char *base, size_t len)
{
    char path[PATH_MAX];
    if (cli_join(path, sizeof path, p->dir, p->app.settings) < 0)
        return base[0] = '\0', 0;
    return init_settings_db(path, base, len, NULL);
}

/* For a DIR below its worktree's top (an API in api/): the front of the
 * top .wtproxy's service started there (`start = cd api && ...`), else 0:
 * its other services are other servers (the front end's), and this one
 * on their front would be refused. */
static int subfolder_front(struct init_plan *p, const struct wtfile *f)
{
    char cd[PATH_MAX + 8];
    snprintf(cd, sizeof cd, "cd %s &&", p->dir + strlen(p->top) + 1);
    for (int i = 0; i < f->n; i++)
        if (cli_start_in(f->svc[i].start, p->dir + strlen(p->top) + 1))
            return f->svc[i].front;
    init_note(p,
              "%s declares no service started by `%s ...` yet, so this server's front is none "
              "of that file's (theirs are other servers')",
              f->path, cd);
    return 0;
}

/* The front an existing .wtproxy gives the app (the rule: cli/front.c):
 * for a DIR below the top, its own service's; else its one service's; of several, the one the
 * Playwright config's baseURL names, else the first; none from a file the daemon refuses (noted).
 */
static int existing_front(struct init_plan *p)
{
    struct cli_wtproxy w;
    cli_wtproxy_read(p->dir, &w);
    int front =
        p->top[0] && w.file ? subfolder_front(p, w.file) : cli_wtproxy_service_front(&w, NULL);
    if (front < 0) {
        char list[512];
        cli_wtproxy_list(&w, list, sizeof list);
        front = p->app.pw.front && wtfile_by_front(w.file, p->app.pw.front) ? p->app.pw.front
                                                                            : w.file->svc[0].front;
        init_note(
            p, "%s declares several fronts (%s): front %d is the app's (--front N takes another)",
            w.file->path, list, front);
    } else if (w.err[0]) {
        init_note(p, "the daemon refuses the .wtproxy, so its front is not used: %s", w.err);
    }
    cli_wtproxy_free(&w);
    return front;
}

/* Decide the recipe, the front port and the database edits, noting why. */
static int choose(const struct init_opts *o, struct init_plan *p)
{
    long front = 0;
    if (o->front && cli_number(o->front, 1, 65535, &front) < 0)
        return usage_error("--front is a port (1-65535)");
    p->recipe = !p->app.pw.file[0] ? INIT_RECIPE_NONE
                : p->app.pw.of_top ? INIT_RECIPE_PORT /* the top's, its other servers' too */
                : o->recipe ? (strcmp(o->recipe, "url") == 0 ? INIT_RECIPE_URL : INIT_RECIPE_PORT)
                : !p->app.pw.web_server  ? INIT_RECIPE_PORT /* no command to run through run */
                : p->app.pw.nservers > 1 ? INIT_RECIPE_PORT /* one `wtproxy run` runs one */
                : p->app.pw.has_port && !p->app.pw.has_url ? INIT_RECIPE_PORT
                                                           : INIT_RECIPE_URL;
    struct host_worktree w;
    int in_wt = host_worktree_of(p->dir, &w, NULL, 0) == 0;
    size_t n = strlen(w.root);
    if (in_wt && strncmp(w.root, p->dir, n) == 0 && p->dir[n] == '/')
        snprintf(p->top, sizeof p->top, "%s", w.root);
    int file_front = existing_front(p);
    /* An existing .wtproxy's front first: it is the project's choice; then
     * the Playwright config's (in a subfolder: the top config's entry that
     * starts it, else its baseURL for the one front end); an API's in a
     * subfolder next, as its front end calls it. */
    int chosen = front || file_front || p->app.pw.front || !p->top[0];
    int base_url = chosen || p->app.pw.file[0] ? 0 : init_top_base_front(p);
    int sibling = chosen || base_url ? 0 : init_vite_sibling_front(p);
    int above = chosen || base_url || sibling ? 0 : init_top_free_front(p);
    p->front = front             ? (int)front
               : file_front      ? file_front
               : p->app.pw.front ? p->app.pw.front
               : base_url        ? base_url
               : sibling         ? sibling
               : above           ? above
                                 : WTP_DEFAULT_FRONT_PORT;
    init_plan_sub(p);
    if (p->app.kind == CLI_APP_VITE)
        init_vite_proxy_note(p);
    if (p->app.kind != CLI_APP_DJANGO)
        return 0;
    char base[64];
    int pg = uses_postgresql(p, base, sizeof base);
    p->databases = o->databases || (pg && !o->no_databases);
    init_note(p, "databases: %s: %s", p->databases ? "on" : "off",
              o->databases      ? "asked by --databases"
              : o->no_databases ? "--no-databases"
              : pg ? "the settings use PostgreSQL, so each worktree's tests claim their own "
                     "database (--no-databases leaves DATABASES and TEST_RUNNER alone)"
                   : "the settings name no PostgreSQL ENGINE (--databases adds the claims)");
    if (p->databases) /* else its server's first start says only "does not exist" */
        init_note(p,
                  "databases: the dev server then runs on this worktree's own database "
                  "(%s_<machine>_<worktree>), which each worktree makes once, before its server "
                  "starts: wtproxy db claim --dev %s (--from %s copies its data), then migrate it",
                  base[0] ? base : "NAME", base[0] ? base : "NAME", base[0] ? base : "NAME");
    return 0;
}

/* The .wtproxy this worktree will have (the top folder's, for a DIR
 * below it): the plan's new one, else the one there; malloc'd, NULL when
 * none. */
static char *planned_wtproxy(const struct init_plan *p)
{
    char path[PATH_MAX], rel[PATH_MAX], err[PATH_MAX + 64];
    if (p->top[0])
        init_top_path(p, rel, sizeof rel);
    else
        snprintf(rel, sizeof rel, ".wtproxy");
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->ch[i].path, rel) == 0)
            return strdup(p->ch[i].new);
    return cli_join(path, sizeof path, p->dir, rel) < 0
               ? NULL
               : cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
}

/* In a linked worktree: worktrees made later get the .wtproxy from the
 * main branch only, so say to merge it there, unless the main checkout
 * has the same file already (a worktree adopted after main was). */
static void note_linked(struct init_plan *p)
{
    struct host_worktree w;
    char main_root[PATH_MAX], path[PATH_MAX], err[PATH_MAX + 64];
    if (host_worktree_of(p->dir, &w, NULL, 0) < 0 || strcmp(w.gitdir, w.common) == 0 ||
        strcmp(w.root, p->top[0] ? p->top : p->dir) != 0)
        return;
    char *here = planned_wtproxy(p);
    if (!here)
        return; /* nothing to merge */
    char *in_main = cli_main_checkout(&w, main_root, sizeof main_root) < 0 ||
                            cli_join(path, sizeof path, main_root, ".wtproxy") < 0
                        ? NULL
                        : cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
    if (here && in_main && strcmp(here, in_main) == 0)
        init_note(p,
                  "this is a linked worktree, and the main checkout (%s) has the same "
                  ".wtproxy already: worktrees made from its branch have it too, nothing "
                  "to merge",
                  main_root);
    else
        init_note(p, "this is a linked worktree: the .wtproxy serves it now; commit it and "
                     "merge it into the main branch, so that every worktree made from there "
                     "has it (the daemon starts a worktree's servers from its own .wtproxy)");
    free(here);
    free(in_main);
}

/* The files init writes (or the config has) run `wtproxy run` by that
 * name, as Playwright's shell finds it: from a build folder (the README's
 * first command) it finds none, or another install. */
static void note_program(struct init_plan *p)
{
    char prog[PATH_MAX], other[PATH_MAX], dir[PATH_MAX];
    int runs = p->app.pw.run_by_name;
    for (size_t i = 0; i < p->n; i++) {
        const char *after = p->ch[i].new;
        runs |= after && strstr(after, "wtproxy run") != NULL;
    }
    if (!runs || host_self_program(prog, sizeof prog, other, sizeof other) != 1)
        return;
    snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(prog, '/') - prog), prog);
    if (other[0])
        init_note(p,
                  "`wtproxy run` in the Playwright config runs %s, the first wtproxy on PATH, "
                  "not this one (%s): put this one first (export PATH=%s:$PATH) or install it "
                  "over that one (README)",
                  other, prog, dir);
    else
        init_note(p,
                  "no wtproxy is on PATH, so Playwright's shell will not find the config's "
                  "`wtproxy run`: put this one there (export PATH=%s:$PATH) or install it "
                  "(README)",
                  dir);
}

static const char *recipe_name(enum init_recipe r)
{
    return r == INIT_RECIPE_URL ? "url" : r == INIT_RECIPE_PORT ? "port" : NULL;
}

/* Print (or put in j) the plan's diffs and notes. -1 when a diff failed. */
static int show(const struct init_plan *p, json_t *j)
{
    char err[PATH_MAX + 256];
    json_t *changes = json_array();
    json_object_set_new(j, "changes", changes);
    for (size_t i = 0; i < p->n; i++) {
        char *d = init_diff(&p->ch[i], err, sizeof err);
        if (!d) {
            fprintf(stderr, "wtproxy init: %s\n", err);
            return -1;
        }
        json_array_append_new(changes, json_pack("{ss ss ss}", "path", p->ch[i].path, "kind",
                                                 p->ch[i].old ? "edit" : "new", "diff", d));
        free(d);
    }
    return 0;
}

/* The command that applies this plan: without the DIR or options given,
 * `--apply` makes another plan. */
static void print_apply(const struct init_opts *o, const char *dir)
{
    printf("run `wtproxy init%s%s%s%s%s%s%s --apply` to write these changes\n", o->dir ? " " : "",
           o->dir ? dir : "", o->recipe ? " --recipe " : "", o->recipe ? o->recipe : "",
           o->front ? " --front " : "", o->front ? o->front : "",
           o->databases      ? " --databases"
           : o->no_databases ? " --no-databases"
                             : "");
}

static void print_text(const struct init_opts *o, const struct init_plan *p, json_t *j)
{
    size_t i;
    json_t *v;
    const char *file = p->app.settings[0] ? p->app.settings : p->app.module;
    printf("wtproxy init: %s: %s app%s%s%s, front port %d\n", p->dir, cli_app_name(p->app.kind),
           p->app.settings[0] ? " (settings "
           : p->app.module[0] ? " (module "
                              : "",
           file, file[0] ? ")" : "", p->front);
    if (p->app.pw.file[0])
        printf("Playwright: %s, recipe \"%s\"\n", p->app.pw.file, recipe_name(p->recipe));
    json_array_foreach(json_object_get(j, "changes"), i, v)
        fputs(json_string_value(json_object_get(v, "diff")), stdout);
    json_array_foreach(p->notes, i, v)
        printf("note: %s\n", json_string_value(v));
    if (p->n == 0)
        printf("nothing to change\n");
    else if (!o->apply)
        print_apply(o, p->dir);
}

static int apply_all(const struct init_plan *p, int quiet)
{
    char err[PATH_MAX + 256];
    for (size_t i = 0; i < p->n; i++) {
        if (init_write(p->dir, &p->ch[i], err, sizeof err) < 0) {
            fprintf(stderr, "wtproxy init: %s\n", err);
            return 1;
        }
        if (!quiet)
            printf("wrote %s\n", p->ch[i].path);
    }
    return 0;
}

int cli_init_main(int argc, char **argv)
{
    struct init_opts o = {0};
    char dir[PATH_MAX], err[PATH_MAX + 256];
    int r = parse(argc, argv, &o);
    if (r || (r = checkout(&o, dir, sizeof dir)))
        return r;
    struct init_plan p = {.dir = dir};
    if (cli_app_detect(dir, &p.app, err, sizeof err) < 0) {
        char apps[2048];
        /* An app of servers in subfolders only, adopted: init at the top
         * again (the guide's check) is content, not "unknown layout". */
        if (init_sub_declared(dir, apps, sizeof apps)) {
            printf("wtproxy init: %s: no app at the top; its .wtproxy declares %s: nothing to "
                   "change (wtproxy init FOLDER checks each; wtproxy doctor the setup)\n",
                   dir, apps);
            cli_app_free(&p.app);
            return 0;
        }
        char adopt[2048];
        if (cli_sub_adopt(dir, adopt, sizeof adopt, apps, sizeof apps) > 0)
            fprintf(stderr,
                    "wtproxy init: %s: run %s (%s): its servers are in its subfolders, each "
                    "adopted by its own init, which adds it to the top .wtproxy as a [service "
                    "NAME]. Nothing was changed: the top folder holds no app of its own (%s)\n",
                    dir, adopt, apps, err);
        else if (cli_is_file(dir, ".wtproxy", 0)) /* written by hand: never over it */
            fprintf(stderr,
                    "wtproxy init: unknown app layout: %s. Nothing was changed. Its .wtproxy, "
                    "written by hand, stays as it is: wtproxy doctor checks it, and names what "
                    "the server still needs (its /__whoami: wtproxy help whoami)\n",
                    err);
        else
            fprintf(stderr,
                    "wtproxy init: unknown app layout: %s. Nothing was changed. Write the "
                    ".wtproxy by hand (wtproxy help wtproxy-file > %s/.wtproxy, then edit its "
                    "start) and have the server answer /__whoami (wtproxy help whoami: the "
                    "middlewares; wtproxy help whoami-protocol: any other server)\n",
                    err, dir);
        cli_app_free(&p.app);
        return 2;
    }
    json_t *j = json_object();
    int failed = !j || !(p.notes = json_array()) || (r = choose(&o, &p)) != 0 ||
                 (p.top[0] && init_plan_top(&p) < 0) || init_plan_make(&p) < 0;
    if (!failed) {
        note_linked(&p); /* from the plan's .wtproxy */
        note_program(&p);
    }
    if (failed || show(&p, j) < 0) {
        if (!r)
            fprintf(stderr, "wtproxy init: out of memory or diff failed; nothing changed\n");
        init_plan_free(&p);
        json_decref(j);
        return r ? r : 1;
    }
    if (!o.json)
        print_text(&o, &p, j);
    r = o.apply ? apply_all(&p, o.json) : 0;
    if (o.json) {
        json_object_set_new(j, "dir", json_string(dir));
        json_object_set_new(j, "app", json_string(cli_app_name(p.app.kind)));
        json_object_set_new(j, "settings",
                            p.app.settings[0] ? json_string(p.app.settings) : json_null());
        json_object_set_new(j, "module", p.app.module[0] ? json_string(p.app.module) : json_null());
        json_object_set_new(j, "start", json_string(p.app.start));
        json_object_set_new(j, "front", json_integer(p.front));
        json_object_set_new(j, "playwright",
                            p.app.pw.file[0] ? json_string(p.app.pw.file) : json_null());
        json_object_set_new(
            j, "recipe", recipe_name(p.recipe) ? json_string(recipe_name(p.recipe)) : json_null());
        json_object_set_new(j, "databases", json_boolean(p.databases));
        json_object_set(j, "notes", p.notes);
        json_object_set_new(j, "applied", json_boolean(o.apply && r == 0 && p.n > 0));
        json_dumpf(j, stdout, JSON_INDENT(2));
        putchar('\n');
    }
    init_plan_free(&p);
    json_decref(j);
    return r;
}
