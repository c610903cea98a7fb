/* init_py_top.c - a Python app in a subfolder of an app whose top runs a
 * Python server already (a second FastAPI app in admin/ beside app/main.py,
 * adopted first). `wtproxy init admin` looked at admin/ alone and wrote
 * `cd admin && python3 -m uvicorn main:app`: the python3 on the daemon's
 * PATH (a pyenv build without FastAPI) where the top's service runs
 * /usr/bin/python3, no --reload where it reloads, and `cd admin`, under
 * which admin/main.py's `from app.db import engine` fails: the module
 * imports the top's packages, so it is served from the top as
 * admin.main:app (admin/ is a package there, or a namespace one). Here the
 * top's .wtproxy services, and its Playwright config and scripts, stand
 * for the folder's own when it names none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app.h"
#include "host.h"
#include "init.h"
#include "wtfile.h"

int cli_pytop(const char *dir, char *root, size_t rlen, char *rel, size_t rellen)
{
    struct host_worktree w;
    char real[PATH_MAX];
    if (!realpath(dir, real) || host_worktree_of(real, &w, NULL, 0) < 0)
        return 0;
    size_t n = strlen(w.root);
    const char *r = real + n + 1;
    if (strncmp(real, w.root, n) != 0 || real[n] != '/' ||
        (strchr(r, '/') && !init_member_is(w.root, r)))
        return 0; /* the top itself, or deeper than its subfolders and workspace members */
    snprintf(root, rlen, "%s", w.root);
    snprintf(rel, rellen, "%s", r);
    return 1;
}

/* Whether dir holds a module or package name (name.py, or a folder: a
 * package, or a namespace one). */
static int has_module(const char *dir, const char *name, size_t n)
{
    char path[PATH_MAX];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%.*s", dir, (int)n, name) >= (int)sizeof path - 3)
        return 0;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return 1;
    strcat(path, ".py");
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Whether rel ("admin", "apps/api") is a dotted module path once its
 * slashes are dots: each part a Python name. */
static int dotted(const char *rel)
{
    static const char word[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_";
    for (const char *p = rel; *p; p += *p == '/') {
        size_t n = strspn(p, word);
        if (n == 0 || (*p >= '0' && *p <= '9') || (p[n] && p[n] != '/'))
            return 0;
        p += n;
    }
    return rel[0] != '\0';
}

int cli_pytop_module(const char *dir, const char *text, char *out, size_t len)
{
    char root[PATH_MAX], rel[PATH_MAX];
    int top = 0, own = 0;
    if (!cli_pytop(dir, root, sizeof root, rel, sizeof rel) || !dotted(rel))
        return 0;
    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        int from = strncmp(l, "from ", 5) == 0;
        if (!from && strncmp(l, "import ", 7) != 0)
            continue;
        /* `import a, b.c` names several; `from a.b import c` one; `from .x`
         * imports within the package, whichever folder is on the path */
        for (const char *p = l + (from ? 5 : 7);; p++) {
            p += strspn(p, " \t");
            size_t n = strcspn(p, " \t.,#\r\n");
            if (n && *p != '.') {
                int in_dir = has_module(dir, p, n);
                own |= in_dir;
                top |= !in_dir && has_module(root, p, n);
            }
            p += strcspn(p, ",#\n");
            if (from || *p != ',')
                break;
        }
    }
    if (!top || own) /* own: `from models import x` of admin/models.py needs cd admin */
        return 0;
    snprintf(out, len, "%s", rel);
    for (char *c = out; *c; c++)
        *c = *c == '/' ? '.' : *c;
    return 1;
}

/* "../" for each folder of rel, into out: the way from rel to the top. */
static void way_up(const char *rel, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (const char *s = rel; s && used + 3 < len; s = strchr(s, '/'), s = s ? s + 1 : NULL)
        used += (size_t)snprintf(out + used, len - used, "../");
}

void cli_pytop_rebase(const char *dir, char *py, size_t len)
{
    char root[PATH_MAX], rel[PATH_MAX], up[PATH_MAX], was[1024];
    if (py[0] == '/' || !strchr(py, '/') || !cli_pytop(dir, root, sizeof root, rel, sizeof rel))
        return; /* a path from / or a name found on PATH is the same from the top */
    way_up(rel, up, sizeof up);
    snprintf(was, sizeof was, "%s", py);
    if (strncmp(was, up, strlen(up)) == 0)
        snprintf(py, len, "%s", was + strlen(up));
    else
        snprintf(py, len, "%s/%s", rel, was);
}

/* The interpreter start runs by its path before runs (" -m uvicorn"), as
 * a path from the top: "/usr/bin/python3" of "/usr/bin/python3 -m uvicorn
 * app.main:app ...", "api/.venv/bin/python" of "cd api &&
 * .venv/bin/python -m uvicorn ...". -1 when it names none so. */
static int start_python(const char *start, const char *runs, char *out, size_t len)
{
    const char *p = start, *cd = "";
    size_t cdn = 0;
    if (strncmp(p, "cd ", 3) == 0) {
        cd = p + 3;
        cdn = strcspn(cd, " \t");
        p = cd + cdn + strspn(cd + cdn, " \t");
        if (strncmp(p, "&& ", 3) != 0 || cd[0] == '/')
            return -1;
        p += 3 + strspn(p + 3, " \t");
    }
    size_t n = strcspn(p, " \t");
    const char *base = memrchr(p, '/', n);
    if (!base || strncmp(base + 1, "python", 6) != 0 || strncmp(p + n, runs, strlen(runs)) != 0 ||
        memchr(p, '$', n) || memchr(p, '`', n))
        return -1;
    int w = p[0] == '/' || !cdn ? snprintf(out, len, "%.*s", (int)n, p)
                                : snprintf(out, len, "%.*s/%.*s", (int)cdn, cd, (int)n, p);
    return w > 0 && (size_t)w < len ? 0 : -1;
}

/* The top's .wtproxy (malloc'd), NULL when there is none or the daemon
 * refuses it. */
static struct wtfile *top_file(const char *root)
{
    char err[1024];
    struct wtfile *f = malloc(sizeof *f);
    if (f && wtfile_read(root, f, err, sizeof err) != 0) {
        free(f);
        return NULL;
    }
    return f;
}

int cli_pytop_python(const char *dir, const char *runs, char *out, size_t len)
{
    char root[PATH_MAX], rel[PATH_MAX], py[1024] = "", up[PATH_MAX];
    if (!cli_pytop(dir, root, sizeof root, rel, sizeof rel))
        return -1;
    struct wtfile *f = top_file(root);
    for (int i = 0; f && i < f->n && !py[0]; i++)
        if (start_python(f->svc[i].start, runs, py, sizeof py) < 0)
            py[0] = '\0';
    free(f);
    if (!py[0]) { /* the top's Playwright config, else its virtualenv */
        struct cli_playwright pw;
        cli_playwright_read(root, &pw);
        cli_python_of(root, &pw, runs, py, sizeof py);
        free(pw.text);
        if (strcmp(py, "python3") == 0)
            return -1;
    }
    way_up(rel, up, sizeof up);
    int w = py[0] == '/' ? snprintf(out, len, "%s", py) : snprintf(out, len, "%s%s", up, py);
    return w > 0 && (size_t)w < len ? 0 : -1;
}

int cli_pytop_reload(const char *dir, const char *server, char *source, size_t len)
{
    char root[PATH_MAX], rel[PATH_MAX], up[PATH_MAX];
    if (!cli_pytop(dir, root, sizeof root, rel, sizeof rel))
        return 0;
    struct wtfile *f = top_file(root);
    int flask = strcmp(server, "flask") == 0, found = 0;
    way_up(rel, up, sizeof up);
    for (int i = 0; f && i < f->n && !found; i++) {
        const char *s = f->svc[i].start;
        found = strstr(s, server) && (strstr(s, "--reload") || (flask && strstr(s, "--debug")));
        if (found)
            snprintf(source, len, "%s.wtproxy's %s%s%s", up, f->svc[i].name[0] ? "[service " : "",
                     f->svc[i].name[0] ? f->svc[i].name : "start", f->svc[i].name[0] ? "]" : "");
    }
    free(f);
    return found;
}

int cli_start_in(const char *start, const char *rel)
{
    char cd[PATH_MAX + 8], mod[PATH_MAX + 2];
    snprintf(cd, sizeof cd, "cd %s &&", rel);
    if (strncmp(start, cd, strlen(cd)) == 0)
        return 1;
    if (!dotted(rel))
        return 0;
    snprintf(mod, sizeof mod, " %s.", rel); /* " admin." of admin.main:app, --app admin.main */
    for (char *c = mod; *c; c++)
        *c = *c == '/' ? '.' : *c;
    return strstr(start, mod) != NULL;
}
