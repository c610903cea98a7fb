/* app_deps.c - a dev server that did not start because its app's own
 * dependencies are not installed where it runs (host.h).
 *
 * node_modules and virtualenvs are never committed: `git worktree add`
 * makes a worktree without them, and the first server started there exits
 * with "sh: 1: vite: not found" (status 127), "Cannot find module 'next'"
 * or "No module named 'django'". Told only "fix the error its last lines
 * name", an agent went looking for a bug; the fix is the install, in the
 * folder the server runs in (its start line's `cd DIR`), by the lockfile
 * there. Only stat(2)s here: the daemon's loop calls it for a 503. */
#include "host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DEPS_NAME_MAX 128 /* a program's or a package's name */

static int exists(const char *dir, const char *name)
{
    char path[2 * PATH_MAX];
    struct stat st;
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    return n > 0 && (size_t)n < sizeof path && stat(path, &st) == 0;
}

/* The word at *p (blanks skipped) into w, *p moved past it; 0 at the end. */
static int next_word(const char **p, char *w, size_t len)
{
    *p += strspn(*p, " \t");
    size_t n = strcspn(*p, " \t");
    if (n == 0)
        return 0;
    snprintf(w, len, "%.*s", (int)(n < len ? n : len - 1), *p);
    *p += n;
    return 1;
}

void host_command_dir(const char *command, const char *worktree, char *dir, size_t len)
{
    char w[PATH_MAX], cd[PATH_MAX] = "";
    const char *p = command ? command : "";
    while (next_word(&p, w, sizeof w)) {
        const char *base = strrchr(w, '/') ? strrchr(w, '/') + 1 : w;
        if (strcmp(base, "sh") == 0 || strcmp(base, "bash") == 0 || strcmp(w, "-c") == 0 ||
            strcmp(w, "env") == 0 || (strchr(w, '=') && w[0] != '='))
            continue; /* `/bin/sh -c` of a .wtproxy start, VAR=value settings */
        if (strcmp(w, "cd") == 0)
            next_word(&p, cd, sizeof cd);
        break;
    }
    if (cd[0] == '/')
        snprintf(dir, len, "%s", cd);
    else if (cd[0] && strcmp(cd, ".") != 0)
        snprintf(dir, len, "%s/%s", worktree, cd);
    else
        snprintf(dir, len, "%s", worktree);
}

const char *host_node_install(const char *dir)
{
    if (exists(dir, "pnpm-lock.yaml"))
        return "pnpm install";
    if (exists(dir, "yarn.lock"))
        return "yarn install";
    if (exists(dir, "bun.lock") || exists(dir, "bun.lockb"))
        return "bun install";
    if (exists(dir, "package-lock.json") || exists(dir, "npm-shrinkwrap.json"))
        return "npm ci";
    return "npm install";
}

/* Whether dir's node_modules was made by an installer: it writes its
 * record there (npm, pnpm, yarn), and any app with a dev server has a
 * .bin. A node_modules holding only the wtproxy-whoami link doctor
 * suggests is none. */
static int installed(const char *dir)
{
    static const char *const marks[] = {
        "node_modules/.bin", "node_modules/.package-lock.json", "node_modules/.modules.yaml",
        "node_modules/.yarn-state.yml", "node_modules/.yarn-integrity"};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (exists(dir, marks[i]))
            return 1;
    return 0;
}

/* Whether name is given and dir has no under/name. */
static int lacks(const char *dir, const char *under, const char *name)
{
    char need[DEPS_NAME_MAX + 32];
    if (!name || !name[0])
        return 0;
    snprintf(need, sizeof need, "%s%s", under, name);
    return !exists(dir, need);
}

int host_node_deps_missing(const char *dir, const char *program, const char *package, char *out,
                           size_t len)
{
    char what[PATH_MAX + DEPS_NAME_MAX + 96];
    if (!exists(dir, "package.json"))
        return 0;
    if (!exists(dir, "node_modules"))
        snprintf(what, sizeof what,
                 "this worktree has no node_modules in %s (a new worktree starts without them)",
                 dir);
    else if (!installed(dir))
        snprintf(what, sizeof what,
                 "%s/node_modules holds no installed dependencies (only what was linked there)",
                 dir);
    else if (lacks(dir, "node_modules/.bin/", program))
        snprintf(what, sizeof what,
                 "%s/node_modules has no .bin/%s: its dependencies are not all installed", dir,
                 program);
    else if (lacks(dir, "node_modules/", package))
        snprintf(what, sizeof what,
                 "%s/node_modules has no %s: its dependencies are not all installed", dir, package);
    else
        return 0;
    snprintf(out, len, "%s; install them, by its lockfile: cd %s && %s", what, dir,
             host_node_install(dir));
    return 1;
}

/* The name quoted after what in lines ("Cannot find module 'next'") into
 * name, its package for a path into a node_modules; 0 when absent or a
 * relative or absolute file. */
static int quoted_after(const char *lines, const char *what, char *name, size_t len)
{
    const char *p = strstr(lines, what);
    if (!p)
        return 0;
    p += strlen(what);
    size_t n = strcspn(p, "'\r\n");
    if (p[n] != '\'' || n == 0)
        return 0;
    const char *nm = memmem(p, n, "/node_modules/", 14);
    if (nm) {
        n -= (size_t)(nm + 14 - p);
        p = nm + 14;
    } else if (p[0] == '.' || p[0] == '/') {
        return 0;
    }
    size_t part = strcspn(p, "/'");
    if (p[0] == '@' && p[part] == '/')
        part += 1 + strcspn(p + part + 1, "/'");
    snprintf(name, len, "%.*s", (int)(part < len ? part : len - 1), p);
    return 1;
}

/* The program a shell did not find ("sh: 1: vite: not found", "sh:
 * node_modules/.bin/vite: not found", bash's "vite: command not found")
 * into prog; 0 when lines say none. */
static int shell_missing(const char *lines, char *prog, size_t len)
{
    const char *tails[] = {": not found", ": command not found"};
    for (size_t i = 0; i < 2; i++)
        for (const char *p = strstr(lines, tails[i]); p; p = strstr(p + 1, tails[i])) {
            const char *b = p;
            while (b > lines && b[-1] != ' ' && b[-1] != '\n' && b[-1] != '/')
                b--;
            if (b < p && (size_t)(p - b) < len) {
                snprintf(prog, len, "%.*s", (int)(p - b), b);
                return 1;
            }
        }
    return 0;
}

/* The python a command runs (python3, .venv/bin/python), as found on PATH
 * (the server's PATH is this process's: the daemon's or the wrapper's)
 * or from dir, into out; 0 when the command names none. */
static int command_python(const char *command, const char *dir, char *out, size_t len)
{
    char w[256];
    const char *p = command;
    while (next_word(&p, w, sizeof w)) {
        const char *base = strrchr(w, '/') ? strrchr(w, '/') + 1 : w;
        if (strncmp(base, "python", 6) != 0)
            continue;
        if (w[0] == '/')
            snprintf(out, len, "%s", w);
        else if (!strchr(w, '/') && host_which(w, strlen(w), out, len) < 0)
            snprintf(out, len, "%s", w);
        else if (strchr(w, '/'))
            snprintf(out, len, "%.4000s/%s", dir, w);
        return 1;
    }
    return 0;
}

/* A Python server's missing module (not wtproxy_whoami, which
 * whoami/packages.c answers): which python lacks it, and its install. */
static int python_missing(const char *lines, const char *command, const char *dir, char *out,
                          size_t len)
{
    static const char says[] = "No module named '";
    const char *p = strstr(lines, says);
    if (!p)
        return 0;
    p += sizeof says - 1;
    size_t n = strcspn(p, ".'\r\n");
    char mod[DEPS_NAME_MAX], py[PATH_MAX + 256], install[2 * PATH_MAX + 512];
    if (n == 0 || n >= sizeof mod || strncmp(p, "wtproxy_whoami", n) == 0)
        return 0;
    snprintf(mod, sizeof mod, "%.*s", (int)n, p);
    if (!command_python(command, dir, py, sizeof py))
        snprintf(py, sizeof py, "python3");
    if (exists(dir, "requirements.txt"))
        snprintf(install, sizeof install, "cd %.4000s && %s -m pip install -r requirements.txt",
                 dir, py);
    else
        snprintf(install, sizeof install, "%s -m pip install <the package of %s>", py, mod);
    snprintf(out, len,
             "%s, the python that ran this server, has no module %s: the app's Python "
             "dependencies are not installed for it; install them (%s), or start it with a "
             "python that has them (on Debian, /usr/bin/python3 imports Django from the "
             "python3-django package)",
             py, mod, install);
    return 1;
}

int host_deps_missing(const char *lines, const char *command, const char *worktree, char *out,
                      size_t len)
{
    char dir[2 * PATH_MAX], prog[DEPS_NAME_MAX] = "", pkg[DEPS_NAME_MAX] = "";
    if (!lines || !worktree || !worktree[0])
        return 0;
    host_command_dir(command, worktree, dir, sizeof dir);
    if (python_missing(lines, command ? command : "", dir, out, len))
        return 1;
    if (!shell_missing(lines, prog, sizeof prog) &&
        !quoted_after(lines, "Cannot find module '", pkg, sizeof pkg) &&
        !quoted_after(lines, "Cannot find package '", pkg, sizeof pkg))
        return 0;
    if (strcmp(pkg, "wtproxy-whoami") == 0)
        return 0;
    return host_node_deps_missing(dir, prog, pkg, out, len);
}
