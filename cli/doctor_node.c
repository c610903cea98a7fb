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
 * the lines to add. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "doctor.h"
#include "packages.h"

/* Whether the start's command, after `cd DIR &&`, VAR=value settings and
 * `env`, is a Node one (node, npm, npx, pnpm, yarn, a node_modules/.bin
 * tool); its folder relative to the worktree into cd ("" for the top), and
 * where that command begins in start into *cmd. */
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
        const char *eq = memchr(p, '=', n);
        if ((eq && eq > p && !memchr(p, '/', (size_t)(eq - p))) ||
            (n == 3 && strncmp(p, "env", 3) == 0)) {
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

/* The folder the start runs in (absolute) into dir, and its command after
 * the folder and settings into *cmd; 0 when it is no Node start. */
static int start_dir(const struct doc_ctx *c, char *dir, size_t len, const char **cmd)
{
    char cd[PATH_MAX];
    if (!node_start(c->start, cd, sizeof cd, cmd))
        return 0;
    if (cd[0] == '/')
        snprintf(dir, len, "%s", cd);
    else
        snprintf(dir, len, "%s%s%s", c->wt.root, cd[0] ? "/" : "", cd);
    return 1;
}

int doc_node_whoami_fix(const struct doc_ctx *c, const char *restart, char *fix, size_t len)
{
    static const char *const configs[] = {"vite.config.js",  "vite.config.mjs", "vite.config.ts",
                                          "vite.config.mts", "vite.config.cjs", "vite.config.cts"};
    char dir[2 * PATH_MAX], path[2 * PATH_MAX + 32], err[256];
    const char *config = NULL, *cmd;
    int has = 0;
    if (!start_dir(c, dir, sizeof dir, &cmd))
        return 0;
    for (size_t i = 0; i < sizeof configs / sizeof configs[0] && !config; i++) {
        char *text = cli_join(path, sizeof path, dir, configs[i]) < 0
                         ? NULL
                         : cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
        config = text ? configs[i] : NULL;
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

/* The node_modules/wtproxy-whoami Node finds from dir (absolute), into
 * found; -1 when no folder from dir up holds one. */
static int resolve(const char *dir, char *found, size_t len)
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

int doc_node(struct doc_ctx *c, struct doc_result *r)
{
    char dir[2 * PATH_MAX], found[2 * PATH_MAX + 64], file[PATH_MAX];
    const char *cmd;
    if (!start_dir(c, dir, sizeof dir, &cmd))
        return 0;
    if (resolve(dir, found, sizeof found) == 0) {
        doc_set(r, DOC_OK, "`%s` finds wtproxy-whoami in %s", c->start, found);
        return 1;
    }
    /* A server that does not import it yet starts without it, and is
     * refused for its missing /__whoami: that, with the lines, is the news;
     * the link is the fix still, as the lines import it. */
    if (cli_node_entry_imports(dir, cmd, file, sizeof file) == 0)
        doc_set(r, DOC_PROBLEM,
                "`%s` runs %s, which has no /__whoami middleware yet: wtproxy refuses its "
                "requests (502 no-whoami). Add to %s, once at start: " WHOAMI_NODE_LINES
                "; and link wtproxy-whoami, which no node_modules in %s or a folder above it "
                "holds (node_modules is per worktree)",
                c->start, file, file, dir);
    else
        doc_set(
            r, DOC_PROBLEM,
            "`%s` cannot import wtproxy-whoami: no node_modules/wtproxy-whoami in %s or a folder "
            "above it (node_modules is per worktree: a new worktree has none); the server the "
            ".wtproxy starts would stop at its first import (\"Cannot find package "
            "'wtproxy-whoami'\")",
            c->start, dir);
    if (whoami_node_link(dir, r->fix, sizeof r->fix) < 0)
        snprintf(r->fix, sizeof r->fix, "wtproxy help whoami");
    return 1;
}
