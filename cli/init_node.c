/* init_node.c - a plain Node, Express or Fastify server (`node FILE` or
 * `tsx [watch] FILE` in scripts.dev or scripts.start, or a webServer entry of the Playwright
 * config that runs one), for `wtproxy init`: whether FILE imports the
 * /__whoami middleware already, so that init does not ask for it again,
 * and, when it does not, the lines for node:http as well as for Express.
 * Without them the server is refused (502 no-whoami) at its first request,
 * and a Playwright readiness check with it. Text inspection, as
 * init_vite.c. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "init.h"
#include "packages.h"

/* Whether the word w (n bytes) runs prog: prog, or a path ending in /prog. */
static int runs(const char *w, size_t n, const char *prog)
{
    size_t k = strlen(prog);
    return (n == k && strncmp(w, prog, k) == 0) ||
           (n > k && w[n - k - 1] == '/' && strncmp(w + n - k, prog, k) == 0);
}

/* FILE of `node [FLAGS] FILE ...` (or `tsx [watch] [FLAGS] FILE ...`,
 * `nodemon [FLAGS] FILE ...`), into file; -1 when start is not so. */
static int entry_file(const char *start, char *file, size_t len)
{
    const char *p = start + strspn(start, " \t");
    size_t first = strcspn(p, " \t");
    if (!runs(p, first, "node") && !runs(p, first, "tsx") && !runs(p, first, "nodemon"))
        return -1;
    int tsx = runs(p, first, "tsx");
    for (p += first;;) {
        p += strspn(p, " \t");
        size_t n = strcspn(p, " \t");
        if (n == 0)
            return -1;
        if (tsx && n == 5 && strncmp(p, "watch", 5) == 0) {
            tsx = 0; /* its subcommand, once */
        } else if (*p != '-') {
            snprintf(file, len, "%.*s", (int)n, p);
            return 0;
        }
        p += n;
    }
}

/* The next word of *p (spaces skipped), into out; 0 when there is none. */
static size_t word(const char **p, char *out, size_t len)
{
    *p += strspn(*p, " \t");
    size_t n = strcspn(*p, " \t");
    snprintf(out, len, "%.*s", (int)n, *p);
    *p += n;
    return n;
}

/* A team's webServer entry is most often `npm run api`, whose server is
 * the script's `node FILE` (app.h). */
void cli_script_command(const char *dir, const char *line, char *out, size_t len)
{
    char tool[16], name[128];
    const char *p = line;
    snprintf(out, len, "%s", line);
    if (!word(&p, tool, sizeof tool) || !word(&p, name, sizeof name))
        return;
    int npm = strcmp(tool, "npm") == 0, other = !strcmp(tool, "yarn") || !strcmp(tool, "pnpm");
    if (!npm && !other)
        return;
    if (!strcmp(name, "run") || !strcmp(name, "run-script"))
        word(&p, name, sizeof name);
    else if (npm && strcmp(name, "start") != 0)
        return; /* npm install, npm exec...: no script */
    json_t *pkg = cli_json_in(dir, "package.json");
    const char *s = json_string_value(json_object_get(json_object_get(pkg, "scripts"), name));
    if (s)
        snprintf(out, len, "%s", s);
    json_decref(pkg);
}

/* Whether file (relative to dir) names wtproxy-whoami: 1 or 0; -1 when it
 * cannot be read. */
static int imports_whoami(const char *dir, const char *file)
{
    char path[PATH_MAX], err[PATH_MAX + 64];
    char *text = cli_join(path, sizeof path, dir, file) < 0
                     ? NULL
                     : cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
    int has = text ? strstr(text, "wtproxy-whoami") != NULL : -1;
    free(text);
    return has;
}

/* Whether dir's package.json says "type": "module". */
static int package_is_module(const char *dir)
{
    json_t *pkg = cli_json_in(dir, "package.json");
    const char *type = json_string_value(json_object_get(pkg, "type"));
    int module = type && strcmp(type, "module") == 0;
    json_decref(pkg);
    return module;
}

/* Whether text has a line that starts with `import ` or `export `. */
static int has_esm_line(const char *text)
{
    for (const char *l = text; l; l = strchr(l, '\n')) {
        l += *l == '\n';
        if (strncmp(l, "import ", 7) == 0 || strncmp(l, "export ", 7) == 0)
            return 1;
    }
    return 0;
}

int cli_node_entry_commonjs(const char *dir, const char *file)
{
    size_t n = strlen(file);
    if (n > 4 && strcmp(file + n - 4, ".cjs") == 0)
        return 1;
    if (n <= 3 || strcmp(file + n - 3, ".js") != 0 || package_is_module(dir))
        return 0;
    char path[PATH_MAX], err[PATH_MAX + 64];
    char *text = cli_join(path, sizeof path, dir, file) < 0
                     ? NULL
                     : cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
    int cjs = text && strstr(text, "require(") && !has_esm_line(text);
    free(text);
    return cjs;
}

int cli_node_entry_imports(const char *dir, const char *start, char *file, size_t len)
{
    char run[1024];
    cli_script_command(dir, start, run, sizeof run);
    return entry_file(run, file, len) < 0 ? -1 : imports_whoami(dir, file);
}

/* The middleware note for the server who names ("Node: " for the app,
 * "service api: " for a webServer entry), started by start in p->dir. */
static void whoami_note(struct init_plan *p, const char *who, const char *start)
{
    char run[1024], file[PATH_MAX], runs[1200] = "";
    cli_script_command(p->dir, start, run, sizeof run);
    if (entry_file(run, file, sizeof file) < 0) {
        init_note(p,
                  "%s`%s` must answer GET /__whoami (the middleware of its kind: wtproxy help "
                  "whoami); until it does, wtproxy refuses its requests (502 no-whoami)",
                  who, start);
        return;
    }
    int has = imports_whoami(p->dir, file) == 1;
    if (strcmp(run, start) != 0)
        snprintf(runs, sizeof runs, "`%s` runs `%s`: ", start, run);
    if (has)
        init_note(p, "%s%s%s imports wtproxy-whoami already", who, runs, file);
    else
        init_note(p,
                  "%s%sadd the /__whoami middleware by hand to %s (wtproxy help whoami), once "
                  "at start: %s; without it wtproxy refuses the server (502 no-whoami)",
                  who, runs, file,
                  cli_node_entry_commonjs(p->dir, file) ? WHOAMI_NODE_LINES_CJS
                                                        : WHOAMI_NODE_LINES);
}

void init_node_whoami(struct init_plan *p)
{
    whoami_note(p, "Node: ", p->app.start);
    init_note(p, "Node: every worktree needs node_modules/wtproxy-whoami (node_modules is not "
                 "committed); wtproxy doctor, run in a worktree, prints the link that adds it");
}

void init_service_whoami(struct init_plan *p, const char *name, const char *start)
{
    char who[160];
    snprintf(who, sizeof who, "service %s: ", name);
    whoami_note(p, who, start);
}
