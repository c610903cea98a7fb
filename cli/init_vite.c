/* init_vite.c - a Vite front end's config (vite.config.*), for `wtproxy
 * init`: which one Vite reads (init_vite_plugin.c adds the /__whoami
 * plugin to it), and the one localhost port its dev server's
 * `proxy` sends to, which is the front of the API in a sibling folder
 * (`wtproxy init api` beside web/): every worktree's front end calls its
 * API there. Text inspection, as init_detect.c: only a plain string
 * literal is read; a URL built in code is said, never guessed. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "init.h"

static const char *const config_names[] = {"vite.config.js",  "vite.config.mjs", "vite.config.ts",
                                           "vite.config.mts", "vite.config.cjs", "vite.config.cts"};

char *init_vite_config(const char *dir, const char *sub, char *name, size_t len)
{
    char path[PATH_MAX], err[PATH_MAX + 64];
    for (size_t i = 0; i < sizeof config_names / sizeof config_names[0]; i++) {
        char *text = NULL;
        snprintf(name, len, "%s%s%s", sub, sub[0] ? "/" : "", config_names[i]);
        if (cli_join(path, sizeof path, dir, name) < 0)
            return errno = ENAMETOOLONG, NULL;
        if ((text = cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err)) || errno != ENOENT)
            return text; /* one Vite would read, or fail to */
    }
    return errno = ENOENT, NULL;
}

/* Whether the word w (n bytes) runs Vite: vite, a path ending in /vite,
 * or react-router (its dev command takes Vite's flags). */
static int is_vite(const char *w, size_t n)
{
    const char *base = w + n;
    while (base > w && base[-1] != '/')
        base--;
    size_t b = (size_t)(w + n - base);
    return (b == 4 && strncmp(base, "vite", 4) == 0) ||
           (b == 12 && strncmp(base, "react-router", 12) == 0);
}

int init_vite_config_flag(const char *cmd, char *out, size_t len)
{
    int in_vite = 0;
    for (const char *p = cmd; *p;) {
        p += strspn(p, " \t");
        size_t n = strcspn(p, " \t");
        if (n == 0)
            break;
        if ((n == 2 && strncmp(p, "&&", 2) == 0) || strchr(";|", *p))
            in_vite = 0; /* the next command's flags are not vite's */
        else if (!in_vite)
            in_vite = is_vite(p, n);
        else if ((n == 8 && strncmp(p, "--config", 8) == 0) ||
                 (n == 2 && strncmp(p, "-c", 2) == 0)) {
            const char *v = p + n + strspn(p + n, " \t");
            size_t m = strcspn(v, " \t;&|");
            if (m == 0 || m >= len || strchr("'\"$`", *v))
                return 0;
            snprintf(out, len, "%.*s", (int)m, v);
            return 1;
        } else if (n > 9 && strncmp(p, "--config=", 9) == 0 && n - 9 < len &&
                   !strchr("'\"$`", p[9])) {
            snprintf(out, len, "%.*s", (int)(n - 9), p + 9);
            return 1;
        }
        p += n;
    }
    return 0;
}

char *init_vite_config_of(const char *dir, const char *sub, const char *cwd, const char *cmd,
                          char *name, size_t len)
{
    char flag[PATH_MAX], path[PATH_MAX], err[PATH_MAX + 64];
    if (!init_vite_config_flag(cmd, flag, sizeof flag))
        return init_vite_config(dir, sub, name, len);
    if (flag[0] == '/')
        snprintf(name, len, "%s", flag);
    else if (snprintf(name, len, "%s%s%s", cwd, cwd[0] ? "/" : "", flag) >= (int)len)
        return errno = ENAMETOOLONG, NULL;
    if (name[0] == '/')
        snprintf(path, sizeof path, "%s", name);
    else if (cli_join(path, sizeof path, dir, name) < 0)
        return errno = ENAMETOOLONG, NULL;
    return cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
}

/* The port one string literal of a proxy block sends to: 0 when it is
 * no localhost URL ('/api', a remote host), -1 when it is a template
 * that builds one (another port per worktree: not a literal to propose). */
static int literal_target(const char *open, const char *close)
{
    char lit[512];
    snprintf(lit, sizeof lit, "%.*s", (int)(close - open - 1), open + 1);
    if (*open == '`' && strncmp(lit, "http", 4) == 0 && strstr(lit, "${"))
        return -1;
    return cli_url_port(lit);
}

int init_vite_proxy_ports(const char *text, int *ports, int max, int *built)
{
    const char *p = strstr(text, "proxy:");
    int depth = 0, n = 0;
    *built = 0;
    while (p && p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '$'))
        p = strstr(p + 6, "proxy:"); /* not the word: the plugin's "// wtproxy: ..." comment */
    if (!p || *(p += 6 + strspn(p + 6, " \t\r\n")) != '{')
        return 0;
    for (; *p; p++) {
        if (p[0] == '/' && (p[1] == '/' || p[1] == '*')) {
            const char *q = p[1] == '/' ? strchr(p, '\n') : strstr(p + 2, "*/");
            if (!q)
                return -1;
            p = q + (p[1] == '*');
        } else if (*p == '\'' || *p == '"' || *p == '`') {
            const char *q = strchr(p + 1, *p);
            if (!q)
                return -1;
            int one = literal_target(p, q), seen = 0;
            *built |= one < 0;
            for (int i = 0; i < n; i++)
                seen |= ports[i] == one;
            if (one > 0 && !seen && n < max)
                ports[n++] = one;
            p = q;
        } else if (*p == '{') {
            depth++;
        } else if (*p == '}' && --depth == 0) {
            return n;
        }
    }
    return -1; /* the block does not close */
}

int init_vite_proxy_port(const char *text)
{
    int ports[2], built, n = init_vite_proxy_ports(text, ports, 2, &built);
    return n < 0 || built || n > 1 ? -1 : n ? ports[0] : 0;
}

/* Fold the proxy port of dir/sub's Vite config into *port (0: none yet;
 * -1: several, or one built in code), its name into from when it has one. */
static void fold(const char *dir, const char *sub, int *port, char *from, size_t len)
{
    char name[PATH_MAX];
    char *text = init_vite_config(dir, sub, name, sizeof name);
    int one = text ? init_vite_proxy_port(text) : 0;
    free(text);
    if (one == 0)
        return;
    snprintf(from, len, "%s", name);
    *port = one < 0 || (*port && one != *port) ? -1 : one;
}

struct sibling {
    const char *own; /* "api" of TOP/api, "apps/api" of TOP/apps/api */
    const char *top;
    int port;
    char from[PATH_MAX];
};

static void fold_sibling(void *arg, const char *name, const char *path)
{
    struct sibling *s = arg;
    size_t n = strlen(name);
    (void)path;
    int own = strncmp(s->own, name, n) == 0 && (s->own[n] == '\0' || s->own[n] == '/');
    if (s->port >= 0 && !own)
        fold(s->top, name, &s->port, s->from, sizeof s->from);
}

int init_vite_sibling_front(struct init_plan *p)
{
    struct sibling s = {p->dir + strlen(p->top) + 1, p->top, 0, ""};
    fold(p->top, "", &s.port, s.from, sizeof s.from);
    if (s.port >= 0)
        init_members_each(p->top, fold_sibling, &s);
    int port = s.port;
    const char *from = s.from;
    if (port > 0)
        init_note(p,
                  "front %d: %s's dev-server proxy sends to http://localhost:%d, the front "
                  "every worktree's front end calls this server on (--front N takes another)",
                  port, from, port);
    else if (port < 0)
        init_note(p,
                  "%s: its dev-server proxy names no one literal http://localhost:PORT (several, "
                  "or one built in code), so the front is not taken from it; give the port the "
                  "front end calls this server on: --front N",
                  from);
    return port > 0 ? port : 0;
}
