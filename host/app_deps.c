/* app_deps.c - a dev server that did not start because its app's own
 * dependencies are not installed where it runs (host.h).
 *
 * node_modules and virtualenvs are never committed: `git worktree add`
 * makes a worktree without them, and the first server started there exits
 * with "sh: 1: vite: not found" (status 127), "Cannot find module 'next'"
 * or "No module named 'django'". Told only "fix the error its last lines
 * name", an agent went looking for a bug; the fix is the install, in the
 * folder the server runs in (its start line's `cd DIR`), by the lockfile
 * there; only for what the app declares (its package.json, its
 * requirements), never for its own modules: a misspelt import is its
 * code's error, which no install fixes. The daemon's loop calls it for a
 * 503: stat(2)s, and a read of those small files once the last lines
 * named a missing module. */
#include "host.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define DEPS_NAME_MAX 128 /* a program's or a package's name */

static int exists(const char *dir, const char *name)
{
    char path[2 * PATH_MAX];
    struct stat st;
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    return n > 0 && (size_t)n < sizeof path && stat(path, &st) == 0;
}

static int word_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_';
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

static const char *const lockfiles[] = {"pnpm-lock.yaml",    "yarn.lock",
                                        "bun.lock",          "bun.lockb",
                                        "package-lock.json", "npm-shrinkwrap.json"};

const char *host_node_install(const char *dir)
{
    static const char *const installs[] = {"pnpm install", "yarn install", "bun install",
                                           "bun install",  "npm ci",       "npm ci"};
    for (size_t i = 0; i < sizeof lockfiles / sizeof lockfiles[0]; i++)
        if (exists(dir, lockfiles[i]))
            return installs[i];
    return "npm install";
}

/* The start of dir/name into text (NUL-terminated); 0 when unreadable.
 * Read only when a server's last lines already named a missing module. */
static int read_small(const char *dir, const char *name, char *text, size_t len)
{
    char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(text, 1, len - 1, f);
    fclose(f);
    text[n] = '\0';
    return 1;
}

static int has_lockfile(const char *dir)
{
    for (size_t i = 0; i < sizeof lockfiles / sizeof lockfiles[0]; i++)
        if (exists(dir, lockfiles[i]))
            return 1;
    return 0;
}

/* Whether dir is a workspace's root (npm, yarn, bun: "workspaces" in its
 * package.json; pnpm: its pnpm-workspace.yaml). A repository's top
 * package.json that is not one (its linters) installs none of an app's. */
static int workspace_root(const char *dir)
{
    char text[65536];
    return exists(dir, "pnpm-workspace.yaml") ||
           (read_small(dir, "package.json", text, sizeof text) && strstr(text, "\"workspaces\""));
}

/* Cuts dir to its parent, not above top; 0 when it is top already or
 * not under it. */
static int up_to(char *dir, const char *top)
{
    size_t n = strlen(top);
    char *slash = strrchr(dir, '/');
    if (strncmp(dir, top, n) != 0 || dir[n] != '/' || !slash || slash < dir + n)
        return 0;
    *slash = '\0';
    return 1;
}

void host_node_install_root(const char *dir, const char *top, char *root, size_t len)
{
    char d[2 * PATH_MAX];
    snprintf(d, sizeof d, "%s", dir);
    if (!has_lockfile(d))
        while (up_to(d, top))
            if (workspace_root(d)) {
                snprintf(root, len, "%s", d);
                return;
            }
    snprintf(root, len, "%s", dir);
}

void host_node_bin(const char *dir, const char *top, const char *program, char *out, size_t len)
{
    char root[2 * PATH_MAX], own[DEPS_NAME_MAX + 32];
    snprintf(own, sizeof own, "node_modules/.bin/%s", program);
    host_node_install_root(dir, top, root, sizeof root);
    size_t n = strlen(root);
    out[0] = '\0';
    if (!exists(dir, own) && strncmp(dir, root, n) == 0 && dir[n] == '/')
        for (const char *p = dir + n; (p = strchr(p, '/')); p++) /* one ../ a folder */
            if (strlen(out) + 3 < len)
                strcat(out, "../");
    if (strlen(out) + strlen(own) < len)
        strcat(out, own);
}

/* Whether dir/name exists in dir or a folder above it up to root, as
 * Node looks for node_modules: a workspace's installs are hoisted to its
 * root. The nearest such folder into at (when not NULL). */
static int exists_up(const char *dir, const char *root, const char *name, char *at, size_t len)
{
    char d[2 * PATH_MAX];
    snprintf(d, sizeof d, "%s", dir);
    do
        if (exists(d, name)) {
            if (at)
                snprintf(at, len, "%s", d);
            return 1;
        }
    while (up_to(d, root));
    return 0;
}

/* Whether a node_modules from dir up to root was made by an installer: it
 * writes its record there (npm, pnpm, yarn), and any app with a dev
 * server has a .bin. A node_modules holding only the wtproxy-whoami link
 * doctor suggests is none. */
static int installed(const char *dir, const char *root)
{
    static const char *const marks[] = {
        "node_modules/.bin", "node_modules/.package-lock.json", "node_modules/.modules.yaml",
        "node_modules/.yarn-state.yml", "node_modules/.yarn-integrity"};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (exists_up(dir, root, marks[i], NULL, 0))
            return 1;
    return 0;
}

/* Whether name is given and no folder from dir up to root has under/name. */
static int lacks(const char *dir, const char *root, const char *under, const char *name)
{
    char need[DEPS_NAME_MAX + 32];
    if (!name || !name[0])
        return 0;
    snprintf(need, sizeof need, "%s%s", under, name);
    return !exists_up(dir, root, need, NULL, 0);
}

/* Whether dir's package.json names package (as "package"): one it
 * declares is an install away; one it does not is a misspelt import or a
 * dependency never added, which no install brings. */
static int declares_package(const char *dir, const char *package)
{
    char text[65536], quoted[DEPS_NAME_MAX + 4];
    snprintf(quoted, sizeof quoted, "\"%s\"", package);
    return read_small(dir, "package.json", text, sizeof text) && strstr(text, quoted);
}

int host_node_deps_missing(const char *dir, const char *top, const char *program,
                           const char *package, char *out, size_t len)
{
    char what[3 * PATH_MAX + DEPS_NAME_MAX + 96], root[2 * PATH_MAX], nm[2 * PATH_MAX];
    if (!exists(dir, "package.json"))
        return 0;
    host_node_install_root(dir, top, root, sizeof root);
    int has_nm = exists_up(dir, root, "node_modules", nm, sizeof nm);
    if (!has_nm)
        snprintf(what, sizeof what,
                 "this worktree has no node_modules in %s (a new worktree starts without them)",
                 root);
    else if (!installed(dir, root))
        snprintf(what, sizeof what,
                 "%s/node_modules holds no installed dependencies (only what was linked there)",
                 nm);
    else if (lacks(dir, root, "node_modules/.bin/", program))
        snprintf(what, sizeof what,
                 "%s/node_modules has no .bin/%s: its dependencies are not all installed", nm,
                 program);
    else if (lacks(dir, root, "node_modules/", package) && declares_package(dir, package))
        snprintf(what, sizeof what,
                 "%s/node_modules has no %s: its dependencies are not all installed", nm, package);
    else
        return 0;
    snprintf(out, len, "%s; install them, by its lockfile: cd %s && %s", what, root,
             host_node_install(root));
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

/* Whether text names mod as a word, in any case, '-' and '_' alike
 * (Django, django-environ's "django" is not; rest_framework's package is
 * djangorestframework, which this misses: then nothing is claimed). */
static int names_module(const char *text, const char *mod)
{
    size_t n = strlen(mod);
    for (const char *p = text; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] &&
               (tolower((unsigned char)p[i]) == tolower((unsigned char)mod[i]) ||
                (strchr("-_", p[i]) && strchr("-_", mod[i]))))
            i++;
        if (i == n && (p == text || !word_char(p[-1])) && !word_char(p[n]))
            return 1;
    }
    return 0;
}

/* Whether the files of dir that declare Python dependencies name mod: 1
 * yes, 0 no, -1 when dir has none of them. */
static int declares_module(const char *dir, const char *mod)
{
    static const char *const files[] = {"requirements.txt", "requirements-dev.txt",
                                        "pyproject.toml",   "Pipfile",
                                        "setup.cfg",        "setup.py"};
    char text[65536];
    int any = -1;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (read_small(dir, files[i], text, sizeof text)) {
            if (names_module(text, mod))
                return 1;
            any = 0;
        }
    return any;
}

/* Whether command itself runs the framework mod: `manage.py` or
 * `django-admin` is Django, `-m uvicorn`, `uvicorn app:app`, `flask run`,
 * `gunicorn`... name theirs as a word (a program's base name, or a
 * module after -m). */
static int command_runs(const char *command, const char *mod)
{
    char w[256];
    const char *p = command;
    while (next_word(&p, w, sizeof w)) {
        const char *base = strrchr(w, '/') ? strrchr(w, '/') + 1 : w;
        if (strcmp(mod, "django") == 0 &&
            (strcmp(base, "manage.py") == 0 || strcmp(base, "django-admin") == 0))
            return 1;
        if (strcasecmp(base, mod) == 0)
            return 1;
    }
    return 0;
}

/* Whether mod is a dependency to install, as far as the app says: not
 * one of its own folders or files (a broken import of its own code), and
 * named by its requirements where it has some (else a misspelt import).
 * With no requirements, only the framework the start command runs is
 * surely one: any other module may be a misspelt import of the code
 * (`import no_such_module` in a FastAPI app was told as an install). */
static int python_dependency(const char *mod, const char *command, const char *dir,
                             const char *worktree)
{
    char file[DEPS_NAME_MAX + 8];
    snprintf(file, sizeof file, "%s.py", mod);
    if (exists(dir, mod) || exists(dir, file) || exists(worktree, mod) || exists(worktree, file))
        return 0;
    int said = declares_module(dir, mod);
    if (said < 0 && strcmp(dir, worktree) != 0)
        said = declares_module(worktree, mod);
    return said > 0 || (said < 0 && command_runs(command, mod));
}

/* A Python server's missing module (not wtproxy_whoami, which
 * whoami/packages.c answers), one the app depends on: which python lacks
 * it, and its install. */
static int python_missing(const char *lines, const char *command, const char *dir,
                          const char *worktree, char *out, size_t len)
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
    if (!python_dependency(mod, command, dir, worktree))
        return 0;
    if (!command_python(command, dir, py, sizeof py))
        snprintf(py, sizeof py, "python3");
    if (exists(dir, "requirements.txt"))
        snprintf(install, sizeof install, "cd %.4000s && %s -m pip install -r requirements.txt",
                 dir, py);
    else
        snprintf(install, sizeof install, "%s -m pip install <the package of %s>", py, mod);
    /* Debian packages Django for /usr/bin/python3; other names are not sure */
    const char *debian = strcmp(mod, "django") == 0 ? " (on Debian, /usr/bin/python3 imports "
                                                      "Django from the python3-django package)"
                                                    : "";
    snprintf(out, len,
             "%s, the python that ran this server, has no module %s: the app's Python "
             "dependencies are not installed for it; install them (%s), or start it with a "
             "python that has them%s",
             py, mod, install, debian);
    return 1;
}

int host_deps_missing(const char *lines, const char *command, const char *worktree, char *out,
                      size_t len)
{
    char dir[2 * PATH_MAX], prog[DEPS_NAME_MAX] = "", pkg[DEPS_NAME_MAX] = "";
    if (!lines || !worktree || !worktree[0])
        return 0;
    host_command_dir(command, worktree, dir, sizeof dir);
    if (python_missing(lines, command ? command : "", dir, worktree, out, len))
        return 1;
    if (!shell_missing(lines, prog, sizeof prog) &&
        !quoted_after(lines, "Cannot find module '", pkg, sizeof pkg) &&
        !quoted_after(lines, "Cannot find package '", pkg, sizeof pkg))
        return 0;
    if (strcmp(pkg, "wtproxy-whoami") == 0)
        return 0;
    return host_node_deps_missing(dir, worktree, prog, pkg, out, len);
}
