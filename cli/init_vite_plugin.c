/* init_vite_plugin.c - a Vite app's /__whoami plugin, added to its
 * vite.config.* by `wtproxy init`, so that adopting a Vite front end
 * needs no edit by hand.
 *
 * The entry added to `plugins` loads the plugin only under `wtproxy run`
 * (which sets WTPROXY_PORT): a static import fails `vite build`, the
 * app's CI and production wherever wtproxy-whoami is not installed. And
 * it names it through String(): Vite bundles its config before running
 * it and resolves every literal import in it, a dynamic one too (Vite 8
 * warns "Could not resolve" at every build without the package), and
 * tsc fails on a module it cannot find in a vite.config.ts. A promise in
 * `plugins` is awaited by Vite, so the entry needs no top-level await and
 * works in every config form, CommonJS too.
 *
 * Text inspection, as the rest of init: the one `export default` (or
 * `module.exports =`) of an object literal, bare or in defineConfig(),
 * whose `plugins` is a literal array or absent; the JavaScript is walked
 * with its strings, templates, comments and regular expressions skipped.
 * Any other shape gets a note with the line to paste. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "init.h"

#define ENTRY CLI_VITE_WHOAMI_ENTRY

static const char why_entry[] =
    "// wtproxy: answers /__whoami so wtproxy routes only to this worktree's up-to-date server; "
    "loaded under wtproxy run only, and named through String() so that vite build, tsc and CI "
    "never resolve wtproxy-whoami - do not remove or make it a static import\n";

/* The config init writes where there is none. */
static const char empty_config[] = "export default {};\n";

static int is_ident(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '$';
}

/* The end of the literal or comment at p (a string, a template, `//`,
 * a block comment, or a regular expression where one may begin: after
 * prev, the last significant character), or p + 1 for any other
 * character; NULL when it does not end. */
static const char *js_skip(const char *p, char prev)
{
    if (p[0] == '/' && p[1] == '/')
        return p + strcspn(p, "\n");
    if (p[0] == '/' && p[1] == '*') {
        const char *e = strstr(p + 2, "*/");
        return e ? e + 2 : NULL;
    }
    int regex = p[0] == '/' && strchr("(,=:[!&|?{};+-*%<>~^", prev);
    if (*p != '\'' && *p != '"' && *p != '`' && !regex)
        return p + 1;
    int in_class = 0;
    for (const char *q = p + 1; *q; q++) {
        if (*q == '\\' && q[1])
            q++;
        else if (*q == '\n' && *p != '`')
            return NULL;
        else if (regex && (*q == '[' || *q == ']'))
            in_class = *q == '[';
        else if (*q == *p && !in_class)
            return q + 1;
    }
    return NULL;
}

/* What a walk of one bracketed span found. */
struct js_span {
    const char *close; /* the matching bracket */
    const char *last;  /* the last significant character inside; open when none */
    const char *key;   /* an object's key (js_walk's want) at its top, if any */
    int spread;        /* an object's `...` at its top */
};

/* Walk from open ('{' or '[') to its matching bracket. -1 when it does
 * not close. */
static int js_walk(const char *open, const char *want, struct js_span *s)
{
    size_t wlen = strlen(want);
    int depth = 0;
    char prev = '(';
    memset(s, 0, sizeof *s);
    s->last = open;
    for (const char *p = open; *p;) {
        const char *n = js_skip(p, prev);
        if (!n)
            return -1;
        int comment = p[0] == '/' && (p[1] == '/' || p[1] == '*');
        if (n == p + 1 && isspace((unsigned char)*p)) {
            p = n;
            continue;
        }
        if (n > p + 1) {
            prev = comment ? prev : 'a'; /* a literal is a value: a '/' after it divides */
        } else {
            if (strchr("{[(", *p))
                depth++;
            else if (strchr("}])", *p) && --depth == 0)
                return s->close = p, 0;
            if (depth == 1 && *open == '{' && strncmp(p, "...", 3) == 0)
                s->spread = 1;
            if (depth == 1 && *open == '{' && (prev == '{' || prev == ',') &&
                strncmp(p, want, wlen) == 0 && !is_ident(p[wlen]))
                s->key = p;
            prev = is_ident(*p) ? 'a' : *p;
        }
        if (depth == 1 && p > open && !comment)
            s->last = n - 1;
        p = n;
    }
    return -1;
}

/* The indent of the line p is on, into out (at most len - 1 characters). */
static void indent_of(const char *text, const char *p, char *out, size_t len)
{
    while (p > text && p[-1] != '\n')
        p--;
    size_t n = strspn(p, " \t");
    snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), p);
}

/* ind one level deeper, into out: a tab for a tab-indented file, else two
 * spaces (Vite's templates). */
static void deeper(const char *ind, char *out, size_t len)
{
    snprintf(out, len, "%s%s", ind, ind[0] == '\t' ? "\t" : "  ");
}

/* The entry with its comment, each line indented by ind. */
static void put_entry(struct init_text *t, const char *ind)
{
    init_puts(t, ind);
    init_puts(t, why_entry);
    init_puts(t, ind);
    init_puts(t, ENTRY ",\n");
}

/* The object literal the config exports: after the one line beginning
 * `export default ` or `module.exports = `, bare or as defineConfig's
 * argument; NULL with why. */
static const char *exported_object(const char *text, const char **why)
{
    const char *hit = NULL;
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *a = strncmp(l, "export default ", 15) == 0     ? l + 15
                        : strncmp(l, "module.exports = ", 17) == 0 ? l + 17
                                                                   : NULL;
        if (a && hit)
            return *why = "it has two default exports", NULL;
        hit = a ? a : hit;
    }
    if (!hit)
        return *why = "no line begins `export default` or `module.exports =`", NULL;
    hit += strspn(hit, " \t");
    if (strncmp(hit, "defineConfig(", 13) == 0)
        hit += 13 + strspn(hit + 13, " \t\r\n");
    if (*hit != '{')
        return *why = "it exports no object literal (a function, a variable)", NULL;
    return hit;
}

/* No `plugins` key: one, first in the object at obj; within a new `outer:
 * { ... }` key when outer is not NULL (Astro's `vite`). */
static void add_key(const char *text, const char *obj, const char *outer, struct init_text *t)
{
    char base[128], ind[132], ind2[136];
    indent_of(text, obj, base, sizeof base);
    deeper(base, ind, sizeof ind);
    const char *eol = obj + 1 + strspn(obj + 1, " \t\r");
    const char *next = *eol == '\n' ? eol + 1 : NULL;
    size_t n = next ? strspn(next, " \t") : 0;
    if (n && n < sizeof ind && next[n] != '}' && next[n] != '\n')
        snprintf(ind, sizeof ind, "%.*s", (int)n, next); /* the object's own keys' indent */
    deeper(ind, ind2, sizeof ind2);
    const char *at = next ? next : obj + 1;
    init_put(t, text, (size_t)(at - text));
    if (!next)
        init_puts(t, "\n");
    if (outer) {
        char ind3[140];
        deeper(ind2, ind3, sizeof ind3);
        init_puts(t, ind);
        init_puts(t, outer);
        init_puts(t, ": {\n");
        init_puts(t, ind2);
        init_puts(t, "plugins: [\n");
        put_entry(t, ind3);
        init_puts(t, ind2);
        init_puts(t, "],\n");
        init_puts(t, ind);
        init_puts(t, "},\n");
    } else {
        init_puts(t, ind);
        init_puts(t, "plugins: [\n");
        put_entry(t, ind2);
        init_puts(t, ind);
        init_puts(t, "],\n");
    }
    if (!next) { /* `{ server: ... }` on one line: the rest on a line of its own */
        const char *rest = obj + 1 + strspn(obj + 1, " \t");
        init_puts(t, *rest == '}' ? base : ind);
        at = rest;
    }
    init_puts(t, at);
}

/* The entry, last in the array at open (its walk a). */
static void add_entry(const char *text, const char *open, const struct js_span *a,
                      struct init_text *t)
{
    char base[128], ind[132];
    indent_of(text, open, base, sizeof base);
    deeper(base, ind, sizeof ind);
    const char *close = a->close, *last = a->last;
    int lines = memchr(open, '\n', (size_t)(close - open)) != NULL;
    if (lines && last != open && memchr(open, '\n', (size_t)(last - open)))
        indent_of(text, last, ind, sizeof ind); /* the entries' own indent */
    const char *bol = close;
    while (bol > last + 1 && (bol[-1] == ' ' || bol[-1] == '\t'))
        bol--;
    int own_line = lines && bol > text && bol[-1] == '\n' && bol > last + 1;
    if (!lines) { /* [] or [react()]: one entry a line */
        init_put(t, text, (size_t)(open + 1 - text));
        init_puts(t, "\n");
        if (last != open) {
            init_puts(t, ind);
            init_put(t, open + 1 + strspn(open + 1, " \t"),
                     (size_t)(last + 1 - (open + 1 + strspn(open + 1, " \t"))));
            init_puts(t, *last == ',' ? "\n" : ",\n");
        }
    } else {
        init_put(t, text, (size_t)(last + 1 - text));
        if (last != open && *last != ',')
            init_puts(t, ",");
        init_put(t, last + 1, (size_t)((own_line ? bol : close) - (last + 1)));
        if (!own_line)
            init_puts(t, "\n");
    }
    put_entry(t, ind);
    if (!own_line)
        init_puts(t, base);
    init_puts(t, own_line ? bol : close);
}

/* The value of the key at key (`plugins: [`: its '['). */
static const char *key_value(const char *key, size_t klen)
{
    const char *v = key + klen + strspn(key + klen, " \t");
    if (*v == ':')
        v += 1 + strspn(v + 1, " \t\r\n");
    return v;
}

/* text with the entry in the plugins of the object literal at obj (a
 * Vite config's), into t; -1 with why when its shape is not one to edit
 * safely. */
static int edit_object(const char *text, const char *obj, struct init_text *t, const char **why)
{
    struct js_span o, a;
    if (js_walk(obj, "plugins", &o) < 0)
        return *why = "its exported object does not close as init reads it", -1;
    if (!o.key && o.spread)
        return *why = "it has no `plugins` key but a spread (`...`) that may set one", -1;
    if (!o.key) {
        add_key(text, obj, NULL, t);
        return 0;
    }
    const char *v = key_value(o.key, 7);
    if (*v != '[' || js_walk(v, "plugins", &a) < 0)
        return *why = "its `plugins` is not a literal array", -1;
    add_entry(text, v, &a, t);
    return 0;
}

static int edit_config(const char *text, struct init_text *t, const char **why)
{
    const char *obj = exported_object(text, why);
    return obj ? edit_object(text, obj, t, why) : -1;
}

int init_astro_config_edit(const char *text, struct init_text *t, const char **why)
{
    struct js_span o;
    const char *obj = exported_object(text, why);
    if (!obj)
        return -1;
    if (js_walk(obj, "vite", &o) < 0)
        return *why = "its exported object does not close as init reads it", -1;
    if (!o.key && o.spread)
        return *why = "it has no `vite` key but a spread (`...`) that may set one", -1;
    if (!o.key) {
        add_key(text, obj, "vite", t);
        return 0;
    }
    const char *v = key_value(o.key, 4);
    if (*v != '{')
        return *why = "its `vite` is not an object literal", -1;
    return edit_object(text, v, t, why);
}

/* Whether node_modules/wtproxy-whoami is in the app's folder or Vite's root. */
static int linked(const struct init_plan *p)
{
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s%snode_modules/wtproxy-whoami/package.json", p->app.vite_root,
             p->app.vite_root[0] ? "/" : "");
    return cli_is_file(p->dir, rel, 0) ||
           cli_is_file(p->dir, "node_modules/wtproxy-whoami/package.json", 0);
}

int init_plan_vite(struct init_plan *p)
{
    char name[PATH_MAX];
    const char *why = NULL;
    struct init_text t = {0};
    char *text = init_vite_config_of(p->dir, p->app.vite_root, "", p->app.start, name, sizeof name);
    if (!text && errno != ENOENT) {
        init_note(p, "%s: left alone: %s", name, strerror(errno));
        return 0;
    }
    if (text && (strstr(text, "wtproxyWhoami") || strstr(text, "wtproxy-whoami/vite"))) {
        init_note(p, "Vite: %s lists the /__whoami plugin already (wtproxyWhoami)", name);
        free(text);
        return 0;
    }
    if (!text) { /* a new config: the plugins array alone */
        snprintf(name, sizeof name, "%s%svite.config.mjs", p->app.vite_root,
                 p->app.vite_root[0] ? "/" : "");
        add_key(empty_config, empty_config + 15, NULL, &t);
    } else if (edit_config(text, &t, &why) < 0) {
        init_note(
            p,
            "%s: %s, so init leaves it alone; add to its plugins by hand, as one entry: `" ENTRY
            "` (loaded under wtproxy run only: vite build and CI need no wtproxy-whoami; "
            "wtproxy help whoami); without it wtproxy refuses the server",
            name, why);
        free(t.s);
        free(text);
        return t.oom ? -1 : 0;
    }
    if (!linked(p))
        init_note(p,
                  "%s loads 'wtproxy-whoami/vite' under wtproxy run: link the package into each "
                  "worktree (npm link wtproxy-whoami, or a node_modules/wtproxy-whoami symlink to "
                  "the folder wtproxy help whoami names; wtproxy doctor prints it), or the dev "
                  "server cannot load its config",
                  name);
    return init_add_change(p, name, text, &t);
}
