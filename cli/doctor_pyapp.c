/* doctor_pyapp.c - `wtproxy doctor`'s middleware check, the app module's
 * part: does the app module a uvicorn or flask start serves import, with
 * its python, from the start's folder? A second FastAPI app in admin/
 * started by `cd admin && python3 -m uvicorn main:app` stopped at `from
 * app.db import engine` (No module named 'app': app/ is the top's), while
 * doctor said ok, having imported wtproxy_whoami only. Importing the
 * module runs its top level, as the server's start would; only an
 * ImportError is judged (the start's environment, a database, may differ),
 * and a module that does not answer within the probe's time is let be. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "doctor.h"
#include "host.h"

/* Prints "ok" when the module imports, else "fails EXE<TAB>ERROR" (the
 * ImportError: "ModuleNotFoundError: No module named 'app'"). %s is the module: a
 * dotted name, no quote (it goes to /bin/sh between single quotes). */
static const char module_probe[] =
    "import sys\n"
    "try:\n"
    "    import %s\n"
    "    print(\"ok\")\n"
    "except ImportError as e:\n"
    "    print(\"fails \" + sys.executable + \"\\t\" + type(e).__name__ + \": \" + "
    "str(e))\n";

static const char dotted_chars[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.";

int doc_py_served_module(const char *start, char *out, size_t len, const char **at)
{
    const char *u = strstr(start, "uvicorn"), *f = strstr(start, "--app");
    const char *m = NULL;
    if (u && !strstr(u, "--app-dir"))
        for (const char *w = u + 7; *(w += strspn(w, " \t")); w += strcspn(w, " \t")) {
            size_t n = strcspn(w, " \t");
            const char *colon = memchr(w, ':', n);
            if (*w != '-' && colon && (size_t)(colon - w) == strspn(w, dotted_chars)) {
                m = w;
                break;
            }
        }
    else if (f && strstr(start, "flask") && (f[5] == ' ' || f[5] == '='))
        m = f + 6 + strspn(f + 6, " ");
    size_t n = m ? strspn(m, dotted_chars) : 0;
    if (!m || n == 0 || n >= len || m[0] == '.' || (m[n] && !strchr(": \t", m[n])))
        return -1;
    snprintf(out, len, "%.*s", (int)n, m);
    if (at)
        *at = m;
    return 0;
}

/* Whether dir holds the module or package name (its first part). */
static int holds(const char *dir, const char *name)
{
    char path[2 * PATH_MAX];
    struct stat st;
    size_t n = strcspn(name, ".");
    snprintf(path, sizeof path, "%s/%.*s", dir, (int)n, name);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return 1;
    snprintf(path, sizeof path, "%s/%.*s.py", dir, (int)n, name);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* For a start `cd SUB && PY ...` whose module imports the top's packages:
 * the start that serves it from the top (SUB.MOD), into out, when PY
 * imports it there. PY is then a path from / or a name on PATH, the same
 * from the top. -1 when not. */
static int from_top(const struct doc_ctx *c, const char *python, const char *module, const char *at,
                    char *out, size_t len)
{
    char sub[PATH_MAX], top_module[PATH_MAX + 272], code[sizeof module_probe + PATH_MAX + 272],
        got[4096];
    const char *s = c->start, *and = strstr(s, " && ");
    if (strncmp(s, "cd ", 3) != 0 || !and || (size_t)(and-s - 3) >= sizeof sub ||
        memchr(s + 3, '/', (size_t)(and-s - 3)))
        return -1; /* a subfolder of the top, one deep, is what init writes */
    snprintf(sub, sizeof sub, "%.*s", (int)(and-s - 3), s + 3);
    const char *py = python + (and-s) + 4; /* python_prefix keeps the cd */
    py += strspn(py, " \t");
    size_t pn = strcspn(py, " \t");
    if (strspn(sub, dotted_chars) != strlen(sub) || strchr(sub, '.') ||
        (py[0] != '/' && memchr(py, '/', pn)))
        return -1;
    snprintf(top_module, sizeof top_module, "%s.%s", sub, module);
    snprintf(code, sizeof code, module_probe, top_module);
    if (cli_py_probe(c->wt.root, py, code, got, sizeof got) != 0 || strcmp(got, "ok") != 0)
        return -1;
    int n = snprintf(out, len, "%.*s%s.%s", (int)(at - and-4), and+4, sub, at);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* "[service admin]" of the service on c->front, "" when unnamed. */
static void service_of(const struct doc_ctx *c, char *out, size_t len)
{
    out[0] = '\0';
    for (int i = 0; i < c->nfronts; i++)
        if (c->fronts[i] == c->front && c->front_svc[i][0])
            snprintf(out, len, "'s [service %s]", c->front_svc[i]);
}

/* The fix for module failing to import name (an ImportError's "No module
 * named 'name'"), with python exe, into r->fix. */
static void import_fix(const struct doc_ctx *c, const char *python, const char *module,
                       const char *at, const char *exe, const char *name, struct doc_result *r)
{
    char dir[2 * PATH_MAX], start[2048], req[2 * PATH_MAX + 32], svc[REG_SERVICE_MAX + 16];
    struct stat st;
    int n;
    host_command_dir(c->start, c->wt.root, dir, sizeof dir);
    snprintf(req, sizeof req, "%s/requirements.txt", dir);
    service_of(c, svc, sizeof svc);
    if (name[0] && from_top(c, python, module, at, start, sizeof start) == 0)
        n = snprintf(r->fix, sizeof r->fix,
                     "serve it from the worktree's top folder, where Python finds %s: in the "
                     ".wtproxy%s, start = %s",
                     name, svc, start);
    else if (name[0] && strncmp(module, name, strcspn(module, ".")) != 0 && !holds(dir, name) &&
             !holds(c->wt.root, name)) /* a package not installed, not the app's own module */
        n = stat(req, &st) == 0
                ? snprintf(r->fix, sizeof r->fix, "cd %s && %s -m pip install -r requirements.txt",
                           dir, exe)
                : snprintf(r->fix, sizeof r->fix, "%s -m pip install %.*s", exe,
                           (int)strcspn(name, "."), name);
    else
        n = snprintf(r->fix, sizeof r->fix,
                     "see the whole error: cd %s && %s -c \"import %s\"; then correct the "
                     ".wtproxy's start line, or the module's import",
                     dir, exe, module);
    if (n < 0 || (size_t)n >= sizeof r->fix)
        snprintf(r->fix, sizeof r->fix, "wtproxy help wtproxy-file");
}

int doc_pyapp_missing(const struct doc_ctx *c, const char *python, const char *label,
                      struct doc_result *r)
{
    char module[256], code[sizeof module_probe + 256], out[4096], name[256] = "", dir[2 * PATH_MAX];
    const char *at;
    if (doc_py_served_module(c->start, module, sizeof module, &at) < 0)
        return 0;
    snprintf(code, sizeof code, module_probe, module);
    if (cli_py_probe(c->wt.root, python, code, out, sizeof out) != 0 ||
        strncmp(out, "fails ", 6) != 0 || !strchr(out, '\t'))
        return 0;
    char *exe = out + 6, *why = strchr(out, '\t');
    *why++ = '\0';
    const char *q = strstr(why, "No module named '");
    if (q)
        snprintf(name, sizeof name, "%.*s", (int)strcspn(q + 17, "'"), q + 17);
    host_command_dir(c->start, c->wt.root, dir, sizeof dir);
    doc_set(r, DOC_PROBLEM,
            "%s imports wtproxy_whoami, but not %s, the app module its start serves: in %s, "
            "`import %s` fails with %s: the server the .wtproxy starts would stop at its start",
            label, module, dir, module, why);
    import_fix(c, python, module, at, exe, name, r);
    return 1;
}
