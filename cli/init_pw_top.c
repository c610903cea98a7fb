/* init_pw_top.c - the top folder's Playwright config, seen from an app in
 * a subfolder. An app of two servers (a FastAPI API in api/, Vite in
 * web/) keeps its Playwright config at the top, its webServer array
 * starting each server in its folder. `wtproxy init api` read only api/'s
 * config, found none, and so wrote `python3` where the config names
 * /usr/bin/python3 (the python3 on PATH may lack FastAPI), no --reload
 * where the config reloads (each edit then served stale), and front 8000
 * for web/ where the baseURL says 15174: a .wtproxy whose servers the
 * tests never reach, or whose start fails. Here the entry that starts the
 * folder's server stands for its config; a webServer of one object is
 * that one entry (a Next.js web/ beside an Express api/, its tests
 * starting only the front end). A config whose webServer starts no
 * subfolder's server still names the front its tests browse: its baseURL,
 * the front of the one front end among the subfolders. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cli.h"
#include "host.h"
#include "init.h"

/* Whether the literal after key in [from, to) names folder rel ("api",
 * "./api", "api/"). */
static int names_folder(const char *from, const char *to, const char *key, const char *rel)
{
    const char *k = strstr(from, key);
    char v[PATH_MAX];
    if (!k || k >= to || !cli_quoted(k + strlen(key), v, sizeof v))
        return 0;
    const char *p = strncmp(v, "./", 2) == 0 ? v + 2 : v;
    size_t n = strlen(p), r = strlen(rel);
    return n >= r && strncmp(p, rel, r) == 0 && (n == r || (n == r + 1 && p[r] == '/'));
}

/* Whether the word w (n bytes, "./apps/web" or "apps/web/") names folder
 * rel, or the package pkg ("web", "@shop/web") that folder holds. */
static int names_member(const char *w, size_t n, const char *rel, const char *pkg)
{
    if (n >= 2 && strncmp(w, "./", 2) == 0)
        w += 2, n -= 2;
    n -= n && w[n - 1] == '/';
    return (n == strlen(rel) && strncmp(w, rel, n) == 0) ||
           (pkg[0] && n == strlen(pkg) && strncmp(w, pkg, n) == 0);
}

/* Whether command cmd runs a workspace member's script: npm's `-w apps/web`
 * (`--workspace`, `--workspace=`), pnpm's `--filter web` (`-F`), `-C
 * apps/web` (`--dir`), yarn's `workspace web`, naming rel or its package. */
static int runs_member(const char *cmd, const char *rel, const char *pkg)
{
    static const char *const flags[] = {"-w", "--workspace", "--filter", "-F",
                                        "-C", "--dir",       "--prefix", "workspace"};
    int named = 0; /* the word before was one of flags */
    for (const char *w = cmd; *(w += strspn(w, " ")); w += strcspn(w, " ")) {
        size_t n = strcspn(w, " "), eq = strcspn(w, "= ");
        if (named && names_member(w, n, rel, pkg))
            return 1;
        named = 0;
        for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
            size_t f = strlen(flags[i]);
            if (eq == f && strncmp(w, flags[i], f) == 0) {
                if (n > f && names_member(w + f + 1, n - f - 1, rel, pkg))
                    return 1;
                named = n == f;
            }
        }
    }
    return 0;
}

/* Whether the webServer entry [from, to) starts its server in folder rel:
 * `cwd: 'rel'`, a command `cd rel && ...`, or one that runs the workspace
 * member rel's script (`npm run dev -w apps/web`). */
static int starts_in(const char *from, const char *to, const char *rel, const char *pkg)
{
    char cd[PATH_MAX + 8];
    snprintf(cd, sizeof cd, "cd %s &&", rel);
    const char *c = strstr(from, "command:");
    char cmd[1024];
    int has_cmd = c && c < to && cli_quoted(c + 8, cmd, sizeof cmd);
    return names_folder(from, to, "cwd:", rel) ||
           (has_cmd && (strncmp(cmd, cd, strlen(cd)) == 0 || runs_member(cmd, rel, pkg)));
}

/* The entry of text's webServer that starts rel's server, as the text of
 * a config of that one entry (owned), NULL when none. A webServer of one
 * server is often an object, not an array: it is read as the one entry. */
static char *entry_of(const char *text, const char *rel, const char *pkg)
{
    const char *ws = strstr(text, "webServer:"), *p = ws ? ws + 10 : NULL;
    p = p ? p + strspn(p, " \t\r\n") : NULL;
    int array = p && *p == '[';
    if (!p || (!array && *p != '{'))
        return NULL;
    for (p += array;;) {
        p += strspn(p, " \t\r\n,");
        const char *end = *p == '{' ? cli_block_end(p) : NULL;
        if (!end)
            return NULL;
        if (starts_in(p, end, rel, pkg)) {
            char *one = NULL;
            return asprintf(&one, "webServer: [%.*s]\n", (int)(end - p), p) < 0 ? NULL : one;
        }
        if (!array)
            return NULL;
        p = end;
    }
}

/* The "name" of dir's package.json into out, "" when none. */
static void package_name(const char *dir, char *out, size_t len)
{
    char path[PATH_MAX];
    json_t *pkg =
        cli_join(path, sizeof path, dir, "package.json") < 0 ? NULL : json_load_file(path, 0, NULL);
    const char *name = json_string_value(json_object_get(pkg, "name"));
    snprintf(out, len, "%s", name ? name : "");
    json_decref(pkg);
}

void cli_playwright_of_top(const char *dir, struct cli_playwright *pw)
{
    struct host_worktree w;
    char real[PATH_MAX];
    if (!realpath(dir, real) || host_worktree_of(real, &w, NULL, 0) < 0)
        return;
    size_t n = strlen(w.root);
    const char *rel = real + n + 1;
    if (strncmp(real, w.root, n) != 0 || real[n] != '/' ||
        (strchr(rel, '/') && !init_member_is(w.root, rel)))
        return; /* the top itself, or deeper than its subfolders and workspace members */
    struct cli_playwright top;
    char pkg[256];
    cli_playwright_read(w.root, &top);
    package_name(real, pkg, sizeof pkg);
    char *one = top.text ? entry_of(top.text, rel, pkg) : NULL;
    if (one) {
        memset(pw, 0, sizeof *pw);
        pw->text = one;
        snprintf(pw->file, sizeof pw->file, "../%.28s", top.file); /* the longest: 21 */
        cli_playwright_parse(pw);
        pw->of_top = 1;
    }
    free(top.text);
}

int init_top_base_front(struct init_plan *p)
{
    const char *rel = p->dir + strlen(p->top) + 1;
    struct cli_playwright top;
    if ((strchr(rel, '/') && !init_member_is(p->top, rel)) ||
        init_top_is_app(p)) /* the top's own app is what it browses */
        return 0;
    cli_playwright_read(p->top, &top);
    int port = top.base_port && init_sub_base_is(p->top, rel, p->app.kind, top.base_port)
                   ? top.base_port
                   : 0;
    if (port) {
        const char *key = strstr(top.text, "baseURL:");
        char url[512] = "";
        int line = 1;
        for (const char *c = top.text; c < key; c++)
            line += *c == '\n';
        cli_quoted(key + 8, url, sizeof url);
        init_note(p,
                  "front %d: the baseURL of ../%s (line %d: '%s'), where its tests go: no "
                  "webServer entry there starts %s/'s server, and no other subfolder holds a "
                  "front end (Next, Vite) (--front N takes another)",
                  port, top.file, line, url, rel);
    }
    free(top.text);
    return port;
}
