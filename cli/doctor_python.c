/* doctor_python.c - `wtproxy doctor`'s `middleware` check: can the Python
 * that the .wtproxy's start runs (python3 itself, or the one a console
 * script such as uvicorn names in its first line) import wtproxy_whoami?
 * An install into a private prefix puts the package where Debian's
 * python3 does not look, and then every server the daemon starts dies at
 * its first import while the request that started it waits out
 * start_timeout, with every other check ok. So ask that interpreter, as
 * the daemon would run it (through /bin/sh, in the worktree, its inline
 * VAR=value settings kept), before any server is started; and, once it
 * does, whether it imports the framework its start runs (manage.py:
 * Django), which a new worktree's python may lack as well. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor.h"
#include "host.h"
#include "packages.h"

/* Prints "ok FOLDER" when the package imports, else "missing SITE" with the
 * folder this interpreter reads links from: the user site, or a
 * virtualenv's site-packages (where there is no user site). No single
 * quote: it goes to /bin/sh between two. */
static const char probe[] =
    "import site, sysconfig\n"
    "try:\n"
    "    import wtproxy_whoami\n"
    "    print(\"ok \" + wtproxy_whoami.__path__[0])\n"
    "except ImportError:\n"
    "    print(\"missing \" + (site.getusersitepackages() if site.ENABLE_USER_SITE\n"
    "                        else sysconfig.get_paths()[\"purelib\"]))\n";

/* The Python a console script runs (uvicorn, gunicorn, flask, a
 * virtualenv's bin/...): the interpreter its first line names
 * ("#!/w/.venv/bin/python3", "#! /usr/bin/python3", "#!/usr/bin/env
 * python3"), into out; -1 when prog (n bytes) is no Python script. prog
 * is a path, relative to dir, or a name looked up on PATH, as /bin/sh
 * finds it. */
static int script_python(const char *dir, const char *prog, size_t n, char *out, size_t len)
{
    char path[4096], line[512];
    int w = !memchr(prog, '/', n) ? host_which(prog, n, path, sizeof path)
            : prog[0] == '/'      ? snprintf(path, sizeof path, "%.*s", (int)n, prog)
                                  : snprintf(path, sizeof path, "%s/%.*s", dir, (int)n, prog);
    FILE *f =
        w >= 0 && (size_t)w < sizeof path && access(path, X_OK) == 0 ? fopen(path, "r") : NULL;
    int got = f && fgets(line, sizeof line, f) && strncmp(line, "#!", 2) == 0;
    if (f)
        fclose(f);
    if (!got)
        return -1;
    char *word = line + 2 + strspn(line + 2, " \t");
    size_t wn = strcspn(word, " \t\r\n");
    char *rest = word + wn + (word[wn] != '\0'); /* what follows, within the line */
    word[wn] = '\0';
    const char *base = strrchr(word, '/') ? strrchr(word, '/') + 1 : word;
    if (strcmp(base, "env") == 0) { /* #!/usr/bin/env python3 */
        word = rest + strspn(rest, " \t");
        word[strcspn(word, " \t\r\n")] = '\0';
        base = word;
    }
    if (strncmp(base, "python", 6) != 0 || strlen(word) >= len)
        return -1;
    snprintf(out, len, "%s", word);
    return 0;
}

/* The python a watcher's command runs, later in the start (`find app
 * -name '*.py' | entr -rn /usr/bin/python3 app/server.py {port}`,
 * watchexec, watchmedo): that word alone into out and label; -1 none. An
 * aiohttp user's check said "runs neither python nor node" and skipped
 * the import of wtproxy_whoami, which then stopped the server at start. */
static int watched_python(const char *rest, char *out, char *label, size_t len)
{
    for (const char *p = rest;;) {
        p += strspn(p, " \t|");
        size_t n = strcspn(p, " \t|");
        if (n == 0)
            return -1;
        const char *base = p + n;
        while (base > p && base[-1] != '/')
            base--;
        if (strncmp(base, "python", 6) == 0 &&
            strspn(base + 6, "0123456789.") == (size_t)(p + n - base - 6) && n < len) {
            snprintf(out, len, "%.*s", (int)n, p);
            memcpy(label, out, n + 1);
            return 0;
        }
        p += n;
    }
}

/* The start command up to the end of its interpreter, when that is a
 * Python (a first word after `cd DIR &&`, VAR=value settings, `env` and
 * `exec` named python*, or a Python console script: uvicorn, gunicorn...),
 * into out, and what to call it in messages into label (the same, or
 * "uvicorn (a /usr/bin/python3 script)"); else the python a watcher later
 * in it runs (watched_python); -1 when none. A `cd` is
 * kept: an app in a subfolder (`cd api && python3 manage.py ...`) imports
 * from there, and its scripts are found from there. */
static int python_prefix(const char *root, const char *start, char *out, char *label, size_t len)
{
    const char *p = start;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", root);
    for (;;) {
        p += strspn(p, " \t");
        size_t n = strcspn(p, " \t");
        if (n == 0)
            return -1;
        if (n == 2 && strncmp(p, "cd", 2) == 0) {
            p += n + strspn(p + n, " \t");
            size_t dn = strcspn(p, " \t");
            int w = p[0] == '/' ? snprintf(dir, sizeof dir, "%.*s", (int)dn, p)
                                : snprintf(dir, sizeof dir, "%s/%.*s", root, (int)dn, p);
            if (w < 0 || (size_t)w >= sizeof dir)
                return -1;
            p += dn;
            p += strspn(p, " \t");
            if (strncmp(p, "&& ", 3) != 0)
                return -1;
            p += 2;
            continue;
        }
        const char *eq = memchr(p, '=', n);
        int setting = eq && eq > p && !memchr(p, '/', (size_t)(eq - p));
        /* `exec CMD`: the shell replaces itself with CMD */
        if (setting || (n == 3 && strncmp(p, "env", 3) == 0) ||
            (n == 4 && strncmp(p, "exec", 4) == 0)) {
            p += n;
            continue;
        }
        const char *base = p + n;
        while (base > p && base[-1] != '/')
            base--;
        if ((size_t)(p + n - start) >= len)
            return -1;
        if (strncmp(base, "python", 6) == 0) {
            snprintf(out, len, "%.*s", (int)(p + n - start), start);
            memcpy(label, out, strlen(out) + 1);
            return 0;
        }
        char python[1024];
        if (script_python(dir, p, n, python, sizeof python) < 0)
            return watched_python(p + n, out, label, len);
        int o = snprintf(out, len, "%.*s%s", (int)(p - start), start, python);
        int l = snprintf(label, len, "%.*s (a %s script)", (int)(p + n - start), start, python);
        return o > 0 && (size_t)o < len && l > 0 && (size_t)l < len ? 0 : -1;
    }
}

/* The problem of a Python that lacks the package, with the link that fixes
 * it for every server this user starts, or, from a build folder, the
 * PYTHONPATH that puts the checkout's package on its path. */
static void missing(const char *python, const char *site, struct doc_result *r)
{
    char dir[4096];
    if (whoami_python_dir(dir, sizeof dir) < 0) {
        doc_set(r, DOC_PROBLEM,
                "%s cannot import wtproxy_whoami: the server the .wtproxy starts would stop "
                "at its first import",
                python);
        if (whoami_python_fix(r->fix, sizeof r->fix) < 0)
            snprintf(r->fix, sizeof r->fix, "wtproxy help whoami");
        return;
    }
    doc_set(r, DOC_PROBLEM,
            "%s cannot import wtproxy_whoami (this wtproxy installed it in %s, where that "
            "python does not look): the server the .wtproxy starts would stop at its first "
            "import, and the request that started it wait out start_timeout",
            python, dir);
    char cmd[3 * 4096 + 64]; /* a cut path would link the wrong folder: the guide then */
    int n =
        snprintf(cmd, sizeof cmd, "mkdir -p %s && ln -sfn %s/wtproxy_whoami %s/", site, dir, site);
    if (n < 0 || (size_t)n >= sizeof r->fix)
        snprintf(r->fix, sizeof r->fix, "wtproxy help whoami");
    else
        memcpy(r->fix, cmd, (size_t)n + 1);
}

/* Prints the interpreter's path when it imports the framework (%s), else
 * "lacks PATH". A server started by a python without its app's
 * dependencies (a virtualenv a new worktree has not, a python3 on PATH
 * that is not Debian's, which alone imports python3-django, or a pyenv
 * build without uvicorn) stops at its first import while the middleware
 * check was ok. */
static const char framework_probe[] = "import sys\n"
                                      "try:\n"
                                      "    import %s\n"
                                      "    print(sys.executable)\n"
                                      "except ImportError:\n"
                                      "    print(\"lacks \" + sys.executable)\n";

/* The framework a start line runs: Django for manage.py, the server
 * program for uvicorn and flask; NULL none of them. */
static const char *framework_of(const char *start)
{
    return strstr(start, "manage.py") ? "django"
           : strstr(start, "uvicorn") ? "uvicorn"
           : strstr(start, "flask")   ? "flask"
                                      : NULL;
}

/* Run framework_probe for fw with python in dir; 0 with its line in out. */
static int probe_framework(const char *dir, const char *python, const char *fw, char *out,
                           size_t len)
{
    char code[sizeof framework_probe + 16];
    snprintf(code, sizeof code, framework_probe, fw);
    return cli_py_probe(dir, python, code, out, len);
}

/* The framework a start line runs (manage.py: Django; uvicorn, flask) is
 * not importable by its python: r says which python lacks it, and the fix
 * installs the app's requirements for it, or names /usr/bin/python3 when
 * that one imports it (when the app lists no requirements). 0 when no
 * framework is named or it imports. */
static int framework_missing(const struct doc_ctx *c, const char *python, const char *label,
                             struct doc_result *r)
{
    char out[4096], sys_py[4096], dir[2 * PATH_MAX], req[2 * PATH_MAX + 32], fix[3 * PATH_MAX];
    const char *fw = framework_of(c->start);
    struct stat st;
    if (!fw || probe_framework(c->wt.root, python, fw, out, sizeof out) != 0 ||
        strncmp(out, "lacks ", 6) != 0)
        return 0;
    const char *exe = out + 6;
    host_command_dir(c->start, c->wt.root, dir, sizeof dir);
    snprintf(req, sizeof req, "%s/requirements.txt", dir);
    int debian = strcmp(exe, "/usr/bin/python3") != 0 &&
                 probe_framework(c->wt.root, "/usr/bin/python3", fw, sys_py, sizeof sys_py) == 0 &&
                 strncmp(sys_py, "lacks ", 6) != 0 && sys_py[0];
    doc_set(r, DOC_PROBLEM,
            "%s (the python %s) cannot import %s: the app's Python dependencies are not "
            "installed for it, and the server the .wtproxy starts would stop at its first "
            "import (\"No module named '%s'\")%s%s%s",
            label, exe, fw, fw,
            debian ? "; /usr/bin/python3 imports it (on Debian, the python3-" : "",
            debian ? fw : "", debian ? " package is importable from /usr/bin/python3 only)" : "");
    int n;
    if (stat(req, &st) == 0)
        n = snprintf(fix, sizeof fix, "cd %s && %s -m pip install -r requirements.txt", dir, exe);
    else if (debian)
        n = snprintf(fix, sizeof fix,
                     "in the .wtproxy's start line, run /usr/bin/python3 in place of %s", exe);
    else
        n = snprintf(fix, sizeof fix, "%s -m pip install %s", exe, fw);
    if (n < 0 || (size_t)n >= sizeof r->fix)
        snprintf(r->fix, sizeof r->fix, "wtproxy help wtproxy-file");
    else
        memcpy(r->fix, fix, (size_t)n + 1);
    return 1;
}

void doc_python(struct doc_ctx *c, struct doc_result *r)
{
    char python[2048], label[2048], out[4096];
    if (!c->have_wt || !c->has_file || !c->start[0]) {
        doc_set(r, DOC_SKIP, "no .wtproxy start command here to check");
        return;
    }
    if (doc_node(c, r))
        return;
    if (python_prefix(c->wt.root, c->start, python, label, sizeof python) < 0) {
        doc_set(r, DOC_SKIP,
                "the .wtproxy's start runs neither python (nor a Python script) nor node: its "
                "server answers /__whoami by itself (wtproxy help whoami-protocol)");
        return;
    }
    int st = cli_py_probe(c->wt.root, python, probe, out, sizeof out);
    if (strncmp(out, "ok ", 3) == 0 &&
        (framework_missing(c, python, label, r) || doc_pyapp_missing(c, python, label, r)))
        return;
    if (strncmp(out, "ok ", 3) == 0)
        doc_set(r, DOC_OK, "%s imports wtproxy_whoami from %s", label, out + 3);
    else if (strncmp(out, "missing ", 8) == 0)
        missing(label, out + 8, r);
    else {
        if (st < 0)
            doc_set(r, DOC_PROBLEM, "%s did not answer within %d ms", label, CLI_PY_PROBE_MS);
        else
            doc_set(r, DOC_PROBLEM,
                    "%s does not run in %s (exit status %d): the .wtproxy's start names it", label,
                    c->wt.root, st);
        snprintf(r->fix, sizeof r->fix, "wtproxy help wtproxy-file");
    }
}
