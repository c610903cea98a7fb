/* init_members.c - the folders of a checkout that may hold an app of its
 * own, for `wtproxy init` and doctor: the members of its workspace (npm's
 * and yarn's package.json "workspaces", pnpm's pnpm-workspace.yaml
 * "packages": apps/ and a star, packages/ui), else its direct subfolders (api/,
 * web/). A monorepo keeps its servers in apps/api and apps/web: init at
 * its top saw only apps/ and e2e/, and so said "unknown app layout"
 * without naming the commands that adopt them. A member counts only with
 * a dev server (scripts.dev or scripts.start): a workspace's libraries
 * (packages/ui with vite for its build) run none. */
#include <dirent.h>
#include <glob.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cli.h"
#include "init.h"

#define MEMBERS_MAX 64

struct members {
    char *name[MEMBERS_MAX]; /* relative to the checkout, owned */
    int n;
};

/* Whether a folder is one an app could be in: not hidden, no
 * dependencies, no virtualenv, no cache. */
static int candidate(const char *name)
{
    static const char *const skip[] = {"node_modules", "venv", "__pycache__", "dist", "build"};
    if (name[0] == '.')
        return 0;
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (strcmp(name, skip[i]) == 0)
            return 0;
    return 1;
}

static void add(struct members *m, const char *name)
{
    const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    if (m->n >= MEMBERS_MAX || !candidate(base))
        return;
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->name[i], name) == 0)
            return;
    if ((m->name[m->n] = strdup(name)))
        m->n++;
}

/* Add the folders of dir that glob pattern pat (relative: `apps/<star>`) names. */
static void add_glob(struct members *m, const char *dir, const char *pat)
{
    char full[PATH_MAX];
    size_t skip = strlen(dir) + 1;
    glob_t g;
    pat += strncmp(pat, "./", 2) == 0 ? 2 : 0;
    if (pat[0] == '!' || pat[0] == '/' || strstr(pat, "..") ||
        snprintf(full, sizeof full, "%s/%s", dir, pat) >= (int)sizeof full ||
        glob(full, GLOB_ONLYDIR | GLOB_MARK, NULL, &g) != 0)
        return;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        char *p = g.gl_pathv[i];
        size_t n = strlen(p);
        if (n > skip && p[n - 1] == '/') { /* GLOB_MARK: a folder, not a file */
            p[n - 1] = '\0';
            add(m, p + skip);
        }
    }
    globfree(&g);
}

/* package.json "workspaces": an array, or yarn's {"packages": [...]}. */
static void from_package(struct members *m, const char *dir)
{
    char path[PATH_MAX];
    json_t *pkg =
        cli_join(path, sizeof path, dir, "package.json") < 0 ? NULL : json_load_file(path, 0, NULL);
    json_t *ws = json_object_get(pkg, "workspaces"), *v;
    size_t i;
    if (json_is_object(ws))
        ws = json_object_get(ws, "packages");
    json_array_foreach(ws, i, v) {
        if (json_is_string(v))
            add_glob(m, dir, json_string_value(v));
    }
    json_decref(pkg);
}

/* pnpm-workspace.yaml: the `- PATTERN` items under `packages:`. */
static void from_pnpm(struct members *m, const char *dir)
{
    char path[PATH_MAX], err[PATH_MAX + 64];
    char *text = cli_join(path, sizeof path, dir, "pnpm-workspace.yaml") < 0
                     ? NULL
                     : cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
    int in = 0;
    for (char *line = text, *next; line && *line; line = next) {
        next = line + strcspn(line, "\n");
        next += *next == '\n';
        char *s = line + strspn(line, " \t");
        if (line[0] != ' ' && line[0] != '\t' && line[0] != '-' && line[0] != '\n' &&
            line[0] != '#')
            in = strncmp(line, "packages:", 9) == 0;
        else if (in && s[0] == '-') {
            s += 1 + strspn(s + 1, " \t");
            size_t n = strcspn(s, "\"'#\n");
            char item[PATH_MAX];
            if (*s == '"' || *s == '\'')
                n = strcspn(++s, "\"'\n");
            while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
                n--;
            snprintf(item, sizeof item, "%.*s", (int)n, s);
            if (item[0])
                add_glob(m, dir, item);
        }
    }
    free(text);
}

/* A workspace member runs a dev server: package.json scripts.dev or
 * scripts.start (a Python member has none: its files say). */
static int runs_server(const char *dir, const char *name)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s/package.json", dir, name) >= (int)sizeof path)
        return 0;
    json_t *pkg = json_load_file(path, 0, NULL), *scripts = json_object_get(pkg, "scripts");
    int runs = !pkg || json_object_get(scripts, "dev") || json_object_get(scripts, "start");
    json_decref(pkg);
    return runs;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int direct(const struct dirent *d)
{
    return d->d_type == DT_DIR && candidate(d->d_name);
}

int init_members_each(const char *dir, void (*fn)(void *arg, const char *name, const char *path),
                      void *arg)
{
    struct members m = {0};
    from_package(&m, dir);
    from_pnpm(&m, dir);
    int workspace = m.n > 0;
    if (!workspace) {
        struct dirent **list = NULL;
        int count = scandir(dir, &list, direct, alphasort);
        for (int i = 0; i < count; i++) {
            add(&m, list[i]->d_name);
            free(list[i]);
        }
        free(list);
    }
    qsort(m.name, (size_t)m.n, sizeof m.name[0], by_name);
    int called = 0;
    for (int i = 0; i < m.n; i++) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, m.name[i]) < (int)sizeof path &&
            (!workspace || runs_server(dir, m.name[i]))) {
            fn(arg, m.name[i], path);
            called++;
        }
        free(m.name[i]);
    }
    return called;
}

struct is_one {
    const char *rel;
    int found;
};

static void match(void *arg, const char *name, const char *path)
{
    struct is_one *o = arg;
    (void)path;
    o->found |= strcmp(o->rel, name) == 0;
}

int init_member_is(const char *top, const char *rel)
{
    struct is_one o = {rel, 0};
    init_members_each(top, match, &o);
    return o.found;
}
