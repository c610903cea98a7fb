/* init.c - `wtproxy init [DIR] [--apply] [--recipe url|port] ...`: adopt
 * wtproxy in an app's checkout. Detects the app (init_detect.c), plans
 * the edits (init_edit.c), prints them as a unified diff (Debian's
 * `diff -u`, from diffutils, which every Debian system has: fewer lines
 * than a diff of our own) and, with --apply, writes exactly those. A file
 * is written only if it still holds what the plan was made from, and a
 * new file only if none appeared meanwhile: nothing of the user's is lost. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host.h"
#include "front.h"
#include "init.h"
#include "wtfile.h"

#define INIT_DIFF_MAX (4 * 1024 * 1024) /* the diff we show; the files are capped at 1 MiB */

extern char **environ;

struct init_opts {
    const char *dir, *recipe, *front;
    int apply, json, databases, no_databases;
};

static int usage_error(const char *msg)
{
    fprintf(stderr, "wtproxy init: %s (see wtproxy init --help)\n", msg);
    return 2;
}

/* Write text to a new temp file; its path in path. -1 with err. */
static int temp_with(const char *text, char *path, size_t len, char *err, size_t errlen)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, len, "%s/wtproxy-init-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    size_t n = strlen(text);
    if (fd < 0 || write(fd, text, n) != (ssize_t)n) {
        snprintf(err, errlen, "cannot write a temp file for diff in %s: %s",
                 tmp && *tmp ? tmp : "/tmp", strerror(errno));
        if (fd >= 0)
            close(fd), unlink(path);
        return -1;
    }
    close(fd);
    return 0;
}

/* Read fd to its end into a malloc'd string: at most max bytes kept, the
 * rest read and dropped (so the writer never dies of SIGPIPE). */
static char *slurp(int fd, size_t max)
{
    size_t len = 0, cap = 4096;
    char *s = malloc(cap), scratch[4096];
    while (s) {
        if (len + 1 == cap && cap <= max) {
            char *s2 = realloc(s, cap * 2);
            if (!s2)
                break;
            s = s2, cap *= 2;
        }
        int full = len + 1 == cap;
        ssize_t r = full ? read(fd, scratch, sizeof scratch) : read(fd, s + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (!full)
            len += (size_t)r;
    }
    if (s)
        s[len] = '\0';
    return s;
}

/* The unified diff of c (`diff -u`, labelled a/PATH and b/PATH, or
 * /dev/null for a new file), malloc'd; NULL with err. */
static char *diff_of(const struct init_change *c, char *err, size_t errlen)
{
    char a[PATH_MAX], b[PATH_MAX], la[PATH_MAX + 4], lb[PATH_MAX + 4];
    char *out = NULL;
    int pipefd[2] = {-1, -1};
    if (temp_with(c->old ? c->old : "", a, sizeof a, err, errlen) < 0)
        return NULL;
    if (temp_with(c->new, b, sizeof b, err, errlen) < 0)
        goto out_a;
    snprintf(la, sizeof la, "%s%s", c->old ? "a/" : "", c->old ? c->path : "/dev/null");
    snprintf(lb, sizeof lb, "b/%s", c->path);
    char *argv[] = {"diff", "-u", "--label", la, "--label", lb, a, b, NULL};
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status = 0;
    if (pipe2(pipefd, O_CLOEXEC) < 0 || posix_spawn_file_actions_init(&fa) != 0) {
        snprintf(err, errlen, "cannot run diff: %s", strerror(errno));
        goto out;
    }
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    int r = posix_spawnp(&pid, "diff", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    if (r != 0) {
        snprintf(err, errlen, "cannot run diff (apt-get install diffutils): %s", strerror(r));
        goto out;
    }
    out = slurp(pipefd[0], INIT_DIFF_MAX);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
        snprintf(err, errlen, "diff failed (status %d)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        free(out);
        out = NULL;
    }
out:
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    unlink(b);
out_a:
    unlink(a);
    return out;
}

/* The folder a new file goes in (Next's route folder), when it is not
 * there yet; its own parent must be. */
static int make_parent(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    return mkdir(dir, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

/* Write c into dir: a new file only where none is (O_EXCL), an edited
 * one only if it still holds c->old, through a temp file and rename, with
 * its mode kept. Returns 0, or -1 with err. */
static int apply_one(const char *dir, const struct init_change *c, char *err, size_t errlen)
{
    char path[PATH_MAX], tmp[PATH_MAX + 16], e2[256];
    struct stat st = {.st_mode = 0644};
    if (cli_join(path, sizeof path, dir, c->path) < 0) {
        snprintf(err, errlen, "%s: the path is too long", c->path);
        return -1;
    }
    if (c->old) {
        char *now = cli_read_text(path, CLI_INIT_FILE_MAX, e2, sizeof e2);
        int same = now && strcmp(now, c->old) == 0;
        free(now);
        if (!same || stat(path, &st) < 0) {
            snprintf(err, errlen,
                     "%s changed while wtproxy init ran; left alone: run "
                     "wtproxy init again",
                     c->path);
            return -1;
        }
    }
    if (!c->old && make_parent(path) < 0) {
        snprintf(err, errlen, "cannot make the folder of %s: %s", c->path, strerror(errno));
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.wtproxy-new", path);
    int fd = open(c->old ? tmp : path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 07777);
    size_t n = strlen(c->new);
    if (fd < 0 || write(fd, c->new, n) != (ssize_t)n || fsync(fd) < 0 || close(fd) < 0 ||
        (c->old && rename(tmp, path) < 0)) {
        snprintf(err, errlen, "cannot write %s: %s%s", c->path, strerror(errno),
                 errno == EEXIST && !c->old ? " (it appeared meanwhile; left alone)" : "");
        if (c->old)
            unlink(tmp);
        return -1;
    }
    return 0;
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

/* The settings name PostgreSQL: the dev-database edits are on by default.
 * base: the last quoted word on the last 'NAME' line ('shop' of 'NAME':
 * os.environ.get('DB', 'shop')), the dev database's base; "" none. */
static int uses_postgresql(const struct init_plan *p, char *base, size_t len)
{
    char path[PATH_MAX], err[256];
    char *text = cli_join(path, sizeof path, p->dir, p->app.settings) < 0
                     ? NULL
                     : cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
    int pg = text && (strstr(text, "db.backends.postgresql") || strstr(text, "backends.postgis"));
    const char *q = NULL;
    for (const char *n = pg ? text : NULL; n && (n = strstr(n, "'NAME':")); n++)
        q = n; /* the last: a DATABASES set again below the default one */
    const char *end = q ? q + strcspn(q, "\n") : NULL;
    base[0] = '\0';
    while (q && (q = strchr(q, '\'')) && q < end) {
        const char *close = strchr(q + 1, '\'');
        if (!close || close >= end)
            break;
        snprintf(base, len, "%.*s", (int)(close - q - 1), q + 1);
        q = close + 1;
    }
    if (strspn(base, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(base))
        base[0] = '\0'; /* not a database name wtproxy db takes ('db.sqlite3') */
    free(text);
    return pg != 0;
}

/* The front an existing .wtproxy gives the app (the rule: cli/front.c):
 * its one service's; of several, the one the Playwright config's baseURL
 * names, else the first; none from a file the daemon refuses (noted). */
static int existing_front(struct init_plan *p)
{
    struct cli_wtproxy w;
    cli_wtproxy_read(p->dir, &w);
    int front = cli_wtproxy_service_front(&w, NULL);
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
    int file_front = existing_front(p);
    /* An existing .wtproxy's front first: it is the project's choice. */
    p->front = front             ? (int)front
               : file_front      ? file_front
               : p->app.pw.front ? p->app.pw.front
                                 : WTP_DEFAULT_FRONT_PORT;
    p->recipe = !p->app.pw.file[0] ? INIT_RECIPE_NONE
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
    if (in_wt && strcmp(w.gitdir, w.common) != 0 && strcmp(w.root, p->dir) == 0)
        init_note(p, "this is a linked worktree: the .wtproxy serves it now; commit it and "
                     "merge it into the main branch, so that every worktree made from there "
                     "has it (the daemon starts a worktree's servers from its own .wtproxy)");
    init_plan_sub(p);
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
        char *d = diff_of(&p->ch[i], err, sizeof err);
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
        if (apply_one(p->dir, &p->ch[i], err, sizeof err) < 0) {
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
        fprintf(stderr, "wtproxy init: unknown app layout: %s. Nothing was changed.%s%s\n", err,
                init_sub_apps(dir, apps, sizeof apps) ? " But " : "", apps);
        cli_app_free(&p.app);
        return 2;
    }
    json_t *j = json_object();
    if (!j || !(p.notes = json_array()) || (r = choose(&o, &p)) != 0 || init_plan_make(&p) < 0 ||
        show(&p, j) < 0) {
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
