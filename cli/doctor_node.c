/* doctor_node.c - `wtproxy doctor`'s `middleware` check for a Node app:
 * does the folder the .wtproxy's start runs in resolve wtproxy-whoami?
 * node_modules is per worktree and never committed, so a worktree made
 * after the app adopted wtproxy has none: its server stops at its first
 * import ("Cannot find package 'wtproxy-whoami'"), the test that started
 * it meets a 503, and every other check was ok. Node resolves a bare
 * name in the node_modules of the importing file's folder and of each
 * folder above it; so does this check, from the start's folder (its `cd
 * DIR`), without running node. A server whose `node FILE` (itself or its
 * package script's, as init reads it) does not import the package yet
 * would start, and be refused for its missing /__whoami: said so, with
 * the lines to add. Before all that, the app's own dependencies: a
 * package.json whose node_modules no install made stops the server
 * whatever its middleware (host/app_deps.c). The .wtproxy's other Node
 * services are asked for the package too, since an npm install at a
 * monorepo's top removes the one link they all resolve up to (no
 * package.json lists it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "doctor.h"
#include "host.h"
#include "init.h"
#include "packages.h"

/* Whether the start's command, after `cd DIR &&`, `. FILE &&` (or
 * `source`), VAR=value settings and `env`, is a Node one (node, npm, npx, pnpm, yarn, a
 * node_modules/.bin tool); its folder relative to the worktree into cd ("" for the top), and where
 * that command begins in start into *cmd. */
static int node_start(const char *start, char *cd, size_t cdlen, const char **cmd)
{
    static const char *const tools[] = {"node", "npm", "npx", "pnpm", "yarn"};
    const char *p = start;
    cd[0] = '\0';
    for (;;) {
        p += strspn(p, " \t");
        size_t n = strcspn(p, " \t");
        if (n == 0)
            return 0;
        if (n == 2 && strncmp(p, "cd", 2) == 0) {
            p += n + strspn(p + n, " \t");
            size_t d = strcspn(p, " \t");
            snprintf(cd, cdlen, "%.*s", (int)d, p);
            p += d + strspn(p + d, " \t");
            if (strncmp(p, "&& ", 3) != 0)
                return 0;
            p += 2;
            continue;
        }
        if ((n == 1 && *p == '.') || (n == 6 && strncmp(p, "source", 6) == 0)) {
            /* `. ../.env.wt &&`: the start loads its settings first */
            p += n + strspn(p + n, " \t");
            p += strcspn(p, " \t");
            p += strspn(p, " \t");
            if (strncmp(p, "&& ", 3) != 0)
                return 0;
            p += 2;
            continue;
        }
        const char *eq = memchr(p, '=', n);
        if ((eq && eq > p && !memchr(p, '/', (size_t)(eq - p))) ||
            (n == 3 && strncmp(p, "env", 3) == 0) || (n == 4 && strncmp(p, "exec", 4) == 0)) {
            p += n;
            continue;
        }
        *cmd = p;
        const char *base = p + n;
        while (base > p && base[-1] != '/')
            base--;
        size_t blen = (size_t)(p + n - base);
        for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
            if (blen == strlen(tools[i]) && strncmp(base, tools[i], blen) == 0)
                return 1;
        return memmem(p, n, "node_modules/.bin/", 18) != NULL;
    }
}

/* The folder start (a .wtproxy's, run in the worktree root) runs in
 * (absolute) into dir, and its command after the folder and settings into
 * *cmd; 0 when it is no Node start. */
static int start_dir(const char *root, const char *start, char *dir, size_t len, const char **cmd)
{
    char cd[PATH_MAX];
    if (!node_start(start, cd, sizeof cd, cmd))
        return 0;
    if (cd[0] == '/')
        snprintf(dir, len, "%s", cd);
    else
        snprintf(dir, len, "%s%s%s", root, cd[0] ? "/" : "", cd);
    return 1;
}

int doc_node_whoami_fix(const struct doc_ctx *c, const char *restart, char *fix, size_t len)
{
    static const char *const configs[] = {"vite.config.js",  "vite.config.mjs", "vite.config.ts",
                                          "vite.config.mts", "vite.config.cjs", "vite.config.cts"};
    char dir[2 * PATH_MAX], path[2 * PATH_MAX + 32], err[256], named[PATH_MAX];
    const char *config = NULL, *cmd;
    int has = 0, flag = init_vite_config_flag(c->start, named, sizeof named);
    if (!start_dir(c->wt.root, c->start, dir, sizeof dir, &cmd))
        return 0;
    for (size_t i = 0; i < sizeof configs / sizeof configs[0] && !config; i++) {
        const char *try = flag ? named : configs[i]; /* its --config, else Vite's lookup */
        char *text = cli_join(path, sizeof path, dir, try) < 0
                         ? NULL
                         : cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
        config = text || flag ?
        try : NULL
            ;
        has = text && strstr(text, "wtproxyWhoami(") != NULL;
        free(text);
    }
    if (has) /* it started before the plugin was added */
        snprintf(fix, len, "%s", restart);
    else if (config || strstr(c->start, "vite"))
        snprintf(fix, len,
                 "in %.700s/%s, add to plugins (loaded under wtproxy run only, so vite build "
                 "and CI need no wtproxy-whoami): " CLI_VITE_WHOAMI_ENTRY "; then %s",
                 dir, config ? config : "vite.config.js", restart);
    else
        snprintf(fix, len,
                 "in the server's module: import { whoami } from 'wtproxy-whoami' and "
                 "app.use(whoami()) first (node:http: wtproxy help whoami); then %s",
                 restart);
    return 1;
}

int doc_node_resolve(const char *dir, char *found, size_t len)
{
    char d[2 * PATH_MAX];
    struct stat st;
    snprintf(d, sizeof d, "%s", dir);
    for (;;) {
        snprintf(found, len, "%s/node_modules/wtproxy-whoami/package.json", d);
        if (stat(found, &st) == 0) {
            found[strlen(found) - strlen("/package.json")] = '\0';
            return 0;
        }
        char *slash = strrchr(d, '/');
        if (!slash || slash == d)
            return -1;
        *slash = '\0';
    }
}

/* The dev server cmd runs itself (`vite`, `node_modules/.bin/next`) into
 * prog; "" for a package manager's script or node, whose program is in
 * package.json. */
static void start_program(const char *cmd, char *prog, size_t len)
{
    static const char *const managers[] = {"node", "npm", "npx", "pnpm", "yarn"};
    size_t n = strcspn(cmd, " \t");
    const char *base = cmd + n;
    while (base > cmd && base[-1] != '/')
        base--;
    size_t blen = (size_t)(cmd + n - base);
    prog[0] = '\0';
    for (size_t i = 0; i < sizeof managers / sizeof managers[0]; i++)
        if (blen == strlen(managers[i]) && strncmp(base, managers[i], blen) == 0)
            return;
    if (base == cmd || memmem(cmd, n, "node_modules/.bin/", 18))
        snprintf(prog, len, "%.*s", (int)blen, base);
}

/* The app's own dependencies not installed in dir (a new worktree has no
 * node_modules; one holding only the wtproxy-whoami link this check once
 * asked for is none either): the server cannot start whatever the
 * middleware. The fix installs them, then links wtproxy-whoami, since an
 * install (npm ci) empties node_modules, the link with it. */
static int deps_missing(const struct doc_ctx *c, const char *dir, const char *cmd,
                        struct doc_result *r)
{
    char prog[128], what[3 * PATH_MAX + 512], link[3 * PATH_MAX], found[2 * PATH_MAX + 64];
    char root[2 * PATH_MAX];
    start_program(cmd, prog, sizeof prog);
    if (!host_node_deps_missing(dir, c->wt.root, prog, NULL, what, sizeof what))
        return 0;
    what[strcspn(what, ";")] = '\0';
    doc_set(r, DOC_PROBLEM,
            "`%s` cannot start: %s, so the server the .wtproxy starts would exit at once. "
            "Install them first, then link wtproxy-whoami: an install empties node_modules, "
            "and a link made before goes with it",
            c->start, what);
    char fix[8 * PATH_MAX];
    int linked_above =
        doc_node_resolve(dir, found, sizeof found) == 0 && strncmp(found, dir, strlen(dir)) != 0;
    host_node_install_root(dir, c->wt.root, root, sizeof root);
    int n =
        linked_above || whoami_node_link(dir, link, sizeof link) < 0
            ? snprintf(fix, sizeof fix, "cd %s && %s", root, host_node_install(root))
            : snprintf(fix, sizeof fix, "cd %s && %s && %s", root, host_node_install(root), link);
    if (n < 0 || (size_t)n >= sizeof r->fix) /* a cut path would install elsewhere */
        snprintf(r->fix, sizeof r->fix, "wtproxy help whoami");
    else
        memcpy(r->fix, fix, (size_t)n + 1);
    return 1;
}

/* A start naming its tool by a path from its folder where no install put
 * it (`cd apps/web && node_modules/.bin/vite` in an npm workspace, which
 * hoists its members' tools into the root's node_modules): /bin/sh exits
 * 127, "not found", however installed the app is. */
static int tool_misplaced(const struct doc_ctx *c, const char *dir, const char *cmd,
                          struct doc_result *r)
{
    char tool[PATH_MAX], want[PATH_MAX], path[3 * PATH_MAX];
    struct stat st;
    size_t n = strcspn(cmd, " \t");
    if (n >= sizeof tool || cmd[0] == '/' || !memmem(cmd, n, "node_modules/.bin/", 18))
        return 0;
    snprintf(tool, sizeof tool, "%.*s", (int)n, cmd);
    snprintf(path, sizeof path, "%s/%s", dir, tool);
    if (stat(path, &st) == 0)
        return 0;
    host_node_bin(dir, c->wt.root, strrchr(tool, '/') + 1, want, sizeof want);
    snprintf(path, sizeof path, "%s/%s", dir, want);
    if (strcmp(want, tool) == 0 || stat(path, &st) < 0)
        return 0; /* installed nowhere: not this check's */
    doc_set(r, DOC_PROBLEM,
            "`%s` cannot start: there is no %s in %s, so /bin/sh would exit 127 (\"not "
            "found\"): its workspace's install put the tool in the root's node_modules, %s "
            "from there",
            c->start, tool, dir, want);
    snprintf(r->fix, sizeof r->fix, "in the .wtproxy's start, write %.400s for %.400s", want, tool);
    return 1;
}

/* A NestJS app whose entry module does not mount the middleware: its
 * server starts, finds the package, and is refused (502 no-whoami) at its
 * first request, every other check ok. */
static int nest_lacks_whoami(const struct doc_ctx *c, const char *dir, struct doc_result *r)
{
    char file[PATH_MAX], line[256];
    if (!cli_nest_lacks_whoami(dir, file, sizeof file))
        return 0;
    cli_nest_use_line("app", line, sizeof line);
    doc_set(r, DOC_PROBLEM,
            "`%s` serves a NestJS app whose %s has no /__whoami middleware: wtproxy refuses its "
            "requests (502 no-whoami)",
            c->start, file);
    snprintf(r->fix, sizeof r->fix,
             "wtproxy init --apply (it adds it), or in %.500s, right after `const app = await "
             "NestFactory.create(...)`: %s",
             file, line);
    return 1;
}

/* The .wtproxy's services whose Node start runs in a folder that resolves
 * no wtproxy-whoami, by their index into c->fronts, their folders into
 * dirs; the one doctor checks (c->front's) first when it is one. A
 * monorepo's services each import it, and one `npm install` at the top
 * removes the link all of them resolve up to: the first service's check
 * alone named its own, and the next restart of the others stopped at
 * their import, unsaid. */
static int unlinked(const struct doc_ctx *c, int *idx, char (*dirs)[2 * PATH_MAX])
{
    char found[2 * PATH_MAX + 64];
    const char *cmd;
    int n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < c->nfronts; i++)
            if ((c->fronts[i] == c->front) == (pass == 0) &&
                start_dir(c->wt.root, c->front_start[i], dirs[n], sizeof dirs[n], &cmd) &&
                doc_node_resolve(dirs[n], found, sizeof found) < 0)
                idx[n++] = i;
    return n;
}

/* Service i as a person names it: "service web", else by its front. */
static void service_words(const struct doc_ctx *c, int i, char *out, size_t len)
{
    if (c->front_svc[i][0])
        snprintf(out, len, "service %s", c->front_svc[i]);
    else
        snprintf(out, len, "the service on front %d", c->fronts[i]);
}

/* Whether every one of the n folders is inside the worktree: one link at
 * its top serves them all, as Node resolves up the folders (a workspace's
 * node_modules is there). */
static int all_inside(const struct doc_ctx *c, char (*dirs)[2 * PATH_MAX], int n)
{
    size_t len = strlen(c->wt.root);
    for (int i = 0; i < n; i++)
        if (strncmp(dirs[i], c->wt.root, len) != 0 || (dirs[i][len] && dirs[i][len] != '/'))
            return 0;
    return 1;
}

/* The names of the n services idx points at, "api, web and admin", into
 * out. */
static void service_names(const struct doc_ctx *c, const int *idx, int n, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n && used < len; i++) {
        const char *sep = i == 0 ? "" : i == n - 1 ? " and " : ", ";
        int w = snprintf(out + used, len - used, "%s%s", sep, c->front_svc[idx[i]]);
        used += w < 0 ? len : (size_t)w;
    }
}

/* The link for the n folders lacking wtproxy-whoami into r->fix: in the
 * one folder's node_modules, or, for several in the worktree, the one at
 * its top; the detail says why it goes again (no package.json lists it,
 * so npm install removes it), not the fix, which pastes into any shell. */
static void link_fix(const struct doc_ctx *c, const int *idx, char (*dirs)[2 * PATH_MAX], int n,
                     struct doc_result *r)
{
    char link[sizeof r->fix] = "", one[sizeof r->fix];
    char names[WTFILE_MAX_SERVICES * (REG_SERVICE_MAX + 8)] = "";
    int top = n > 1 && all_inside(c, dirs, n), ok = 1;
    size_t used = 0;
    if (top)
        service_names(c, idx, n, names, sizeof names);
    for (int i = 0; ok && i < (top ? 1 : n); i++) { /* outside the worktree: each its own */
        ok = whoami_node_link(top ? c->wt.root : dirs[i], one, sizeof one) == 0;
        int w = snprintf(link + used, sizeof link - used, "%s%s", i ? " && " : "", one);
        ok = ok && w >= 0 && (size_t)w < sizeof link - used;
        used += ok ? (size_t)w : 0;
    }
    int w = snprintf(r->fix, sizeof r->fix, "%s", link);
    if (!ok || w < 0 || (size_t)w >= sizeof r->fix)
        snprintf(r->fix, sizeof r->fix, "wtproxy help whoami");
    size_t d = strlen(r->detail);
    snprintf(r->detail + d, sizeof r->detail - d,
             "; %s%s%snpm install removes such a link (no package.json lists it): link it again "
             "after each npm install, as wtproxy doctor then says",
             top ? "one link at the worktree's top serves services " : "", names,
             top ? ", which resolve up to it; " : "");
}

/* Detail for the doctor's own start lacking the package: either it does
 * not import it yet (no /__whoami: the lines to add) or it would stop at
 * its import. */
static void own_unlinked(const struct doc_ctx *c, const char *dir, const char *cmd,
                         struct doc_result *r)
{
    char file[PATH_MAX];
    /* A server that does not import it yet starts without it, and is
     * refused for its missing /__whoami: that, with the lines, is the news;
     * the link is the fix still, as the lines import it. */
    if (cli_node_entry_imports(dir, cmd, file, sizeof file) == 0)
        doc_set(r, DOC_PROBLEM,
                "`%s` runs %s, which has no /__whoami middleware yet: wtproxy refuses its "
                "requests (502 no-whoami). Add to %s, once at start: %s; and link "
                "wtproxy-whoami, which no node_modules in %s or a folder above it holds "
                "(node_modules is per worktree)",
                c->start, file, file,
                cli_node_entry_commonjs(dir, file) ? WHOAMI_NODE_LINES_CJS : WHOAMI_NODE_LINES,
                dir);
    else
        doc_set(
            r, DOC_PROBLEM,
            "`%s` cannot import wtproxy-whoami: no node_modules/wtproxy-whoami in %s or a folder "
            "above it (node_modules is per worktree: a new worktree has none); the server the "
            ".wtproxy starts would stop at its first import (\"Cannot find package "
            "'wtproxy-whoami'\")",
            c->start, dir);
}

/* Append the .wtproxy's other services lacking it (idx[1..n)) to r's
 * detail. */
static void others_unlinked(const struct doc_ctx *c, const int *idx, char (*dirs)[2 * PATH_MAX],
                            int n, struct doc_result *r)
{
    char svc[REG_SERVICE_MAX + 32];
    for (int i = 1; i < n; i++) {
        size_t used = strlen(r->detail);
        service_words(c, idx[i], svc, sizeof svc);
        snprintf(r->detail + used, sizeof r->detail - used,
                 "; nor can %s's `%s`, with no node_modules/wtproxy-whoami in %s or a folder "
                 "above it",
                 svc, c->front_start[idx[i]], dirs[i]);
    }
}

int doc_node(struct doc_ctx *c, struct doc_result *r)
{
    char dir[2 * PATH_MAX], found[2 * PATH_MAX + 64], svc[REG_SERVICE_MAX + 32];
    char dirs[WTFILE_MAX_SERVICES][2 * PATH_MAX];
    int idx[WTFILE_MAX_SERVICES];
    const char *cmd;
    if (!start_dir(c->wt.root, c->start, dir, sizeof dir, &cmd))
        return 0;
    if (deps_missing(c, dir, cmd, r) || tool_misplaced(c, dir, cmd, r))
        return 1;
    int own = doc_node_resolve(dir, found, sizeof found) == 0;
    if (own && nest_lacks_whoami(c, dir, r))
        return 1;
    int n = unlinked(c, idx, dirs); /* c->start's first when it lacks it (!own) */
    if (n == 0) {
        doc_set(r, DOC_OK, "`%s` finds wtproxy-whoami in %s", c->start, found);
        return 1;
    }
    if (own) {
        service_words(c, idx[0], svc, sizeof svc);
        doc_set(r, DOC_PROBLEM,
                "`%s` finds wtproxy-whoami in %s, but %s's `%s` cannot import it: no "
                "node_modules/wtproxy-whoami in %s or a folder above it, so its server would stop "
                "at its first import (\"Cannot find package 'wtproxy-whoami'\")",
                c->start, found, svc, c->front_start[idx[0]], dirs[0]);
    } else
        own_unlinked(c, dir, cmd, r);
    others_unlinked(c, idx, dirs, n, r);
    link_fix(c, idx, dirs, n, r);
    return 1;
}
