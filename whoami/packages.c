/* packages.c - see packages.h. A worktree made after its app adopted
 * wtproxy has no node_modules (never committed), and a virtualenv or a
 * private prefix may not find the Python package: the server stops at its
 * first import. Its error names a package that no registry has as
 * wtproxy's, so the fix said is the link to this wtproxy's own. */
#include "packages.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wtp_install_paths.h"

#define PKG_PATH_MAX (4096 + 256) /* an install root and the prefix's folder after it */

int whoami_install_root(char *root, size_t len)
{
    static const char installed[] = WTP_BINDIR "/wtproxy";
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0)
        return -1;
    exe[n] = '\0';
    size_t tail = strlen(installed);
    if ((size_t)n < tail || strcmp(exe + n - tail, installed) != 0)
        return -1;
    snprintf(root, len, "%.*s", (int)((size_t)n - tail), exe);
    return 0;
}

int whoami_python_dir(char *out, size_t len)
{
    char root[4096];
    if (whoami_install_root(root, sizeof root) < 0)
        return -1;
    snprintf(out, len, "%s%s", root, WTP_PYTHON_DIR);
    return 0;
}

int whoami_node_dir(char *out, size_t len)
{
    char root[4096];
    struct stat st;
    if (whoami_install_root(root, sizeof root) < 0) {
        if (stat(WTP_SOURCE_DIR "/whoami/node/package.json", &st) != 0)
            return -1;
        snprintf(out, len, "%s/whoami/node", WTP_SOURCE_DIR);
        return 0;
    }
    snprintf(out, len, "%s%s", root, WTP_NODE_DIR);
    return 0;
}

int whoami_node_link(const char *dir, char *out, size_t len)
{
    char pkg[PKG_PATH_MAX];
    if (whoami_node_dir(pkg, sizeof pkg) < 0)
        return -1;
    int n =
        snprintf(out, len, "mkdir -p %s/node_modules && ln -sfn %s %s/node_modules/wtproxy-whoami",
                 dir, pkg, dir);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Where Node says it did not find wtproxy-whoami (or a subpath of it:
 * 'wtproxy-whoami/vite') in lines; NULL when it does not. */
static const char *node_missing(const char *lines)
{
    static const char *const says[] = {"Cannot find package 'wtproxy-whoami",
                                       "Cannot find module 'wtproxy-whoami"};
    for (size_t i = 0; i < sizeof says / sizeof says[0]; i++) {
        const char *p = strstr(lines, says[i]);
        if (p && (p[strlen(says[i])] == '\'' || p[strlen(says[i])] == '/'))
            return p;
    }
    return NULL;
}

/* dir cut to the nearest folder at or above it that holds a package.json
 * (apps/api for apps/api/src/server.mjs): the app's, where doctor links
 * too and a link serves each of its files; dir itself when none does. */
static void app_dir(char *dir)
{
    char path[PKG_PATH_MAX + 16];
    struct stat st;
    for (size_t n = strlen(dir); n > 1;) {
        snprintf(path, sizeof path, "%.*s/package.json", (int)n, dir);
        if (stat(path, &st) == 0) {
            dir[n] = '\0';
            return;
        }
        while (n > 0 && dir[--n] != '/') {
        }
    }
}

/* The folder whose node_modules the file that imported it (named after
 * at, the error: "imported from FILE" for import, the first of its
 * "Require stack" for require) resolves from, into dir: the part before
 * its first /node_modules/ (Vite bundles its config into
 * node_modules/.vite-temp), else the file's app's folder (app_dir). -1
 * when no absolute path is named. */
static int importer_dir(const char *at, char *dir, size_t len)
{
    static const char *const before[] = {"' imported from ", "Require stack:\n- "};
    const char *p = NULL;
    for (size_t i = 0; i < sizeof before / sizeof before[0] && !p; i++)
        if ((p = strstr(at, before[i])))
            p += strlen(before[i]);
    if (!p || *p != '/')
        return -1;
    size_t n = strcspn(p, "\r\n");
    const char *nm = memmem(p, n, "/node_modules/", strlen("/node_modules/"));
    if (nm)
        n = (size_t)(nm - p);
    else
        while (n > 0 && p[--n] != '/') {
        }
    if (n == 0 || n >= len)
        return -1;
    snprintf(dir, len, "%.*s", (int)n, p);
    if (!nm)
        app_dir(dir);
    return 0;
}

int whoami_python_fix(char *out, size_t len)
{
    char dir[PKG_PATH_MAX];
    int n;
    if (whoami_python_dir(dir, sizeof dir) < 0)
        n = snprintf(out, len,
                     "put this wtproxy's checkout on its path: PYTHONPATH=%s/whoami/python before "
                     "the command that starts it (wtproxy run, or the .wtproxy's start line)",
                     WTP_SOURCE_DIR);
    else if (WTP_PYTHON_SEARCHED)
        n = snprintf(out, len,
                     "Debian's /usr/bin/python3 imports it from %s with no setting; another "
                     "python3 (a virtualenv's) needs PYTHONPATH=%s before the command that "
                     "starts it",
                     dir, dir);
    else
        n = snprintf(out, len,
                     "link it into your user site, once: d=$(/usr/bin/python3 -m site "
                     "--user-site) && mkdir -p \"$d\" && ln -sfn %s/wtproxy_whoami \"$d\"/ (a "
                     "virtualenv's python: wtproxy doctor, in the worktree, names its folder)",
                     dir);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int whoami_missing_package(const char *lines, const char *worktree, char *out, size_t len)
{
    char dir[PKG_PATH_MAX], fix[3 * PKG_PATH_MAX + 256];
    const char *at = node_missing(lines);
    if (at) {
        if (importer_dir(at, dir, sizeof dir) < 0)
            snprintf(dir, sizeof dir, "%s", worktree);
        if (whoami_node_link(dir, fix, sizeof fix) < 0)
            snprintf(fix, sizeof fix, "wtproxy help whoami says where this wtproxy has it");
        snprintf(out, len,
                 "this worktree lacks the wtproxy-whoami package its server imports "
                 "(node_modules is per worktree and never committed; the package comes with "
                 "wtproxy, not from npm: npm install would fetch another one, or none); link "
                 "this wtproxy's: %s",
                 fix);
        return 1;
    }
    if (!strstr(lines, "No module named 'wtproxy_whoami'"))
        return 0;
    whoami_python_fix(fix, sizeof fix);
    snprintf(out, len,
             "the python that runs this worktree's server lacks the wtproxy_whoami package it "
             "imports (it comes with wtproxy, not from PyPI: pip install would fetch another "
             "one, or none); %s",
             fix);
    return 1;
}
