/* init_pw_reporter.c - wtproxy's Playwright reporter added to the app's
 * reporters by `wtproxy init`. Without it, a run that no daemon answered
 * (stopped, a server started by hand on the front) passed on whatever
 * answered, and one started from another worktree's folder (`playwright
 * test -c ../wt-b/...`) tested that folder's servers: three users in one
 * stop met a wrong verdict init's config left possible. Guarded so that a
 * checkout where wtproxy-whoami is not linked (CI) loads the config as
 * before: the entry resolves the package first, as the config's own
 * module system does (import.meta.resolve, require.resolve). Text
 * inspection, as init_vite_plugin.c: a `reporter:` that is no string or
 * array literal is left to a note. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "init.h"

#define NAME "wtproxy-whoami/playwright"
#define WHY                                                                                        \
    "// wtproxy: prints what wtproxy refused under each failed test, and fails a run that no "     \
    "wtproxy daemon answered (its verdict would be on whatever code answered); skipped where "     \
    "wtproxy-whoami is not linked (CI) - do not remove\n"

/* The guarded entry, spread into a reporter array: the config's module
 * system resolves the package, or the entry is none. */
static void guarded_entry(int esm, char *out, size_t len)
{
    snprintf(out, len,
             "...(() => { try { %s('" NAME "'); return [['" NAME "']]; } catch { return []; } "
             "})()",
             esm ? "import.meta.resolve" : "require.resolve");
}

/* Whether the config file is an ES module: .mjs/.mts, or .js/.ts in a
 * package of "type": "module" (Playwright loads a .ts config as the
 * package's .js would be). */
static int config_esm(const char *dir, const char *file)
{
    const char *ext = strrchr(file, '.');
    if (ext && (!strcmp(ext, ".mjs") || !strcmp(ext, ".mts")))
        return 1;
    if (ext && (!strcmp(ext, ".cjs") || !strcmp(ext, ".cts")))
        return 0;
    json_t *pkg = cli_json_in(dir, "package.json");
    const char *type = json_string_value(json_object_get(pkg, "type"));
    int esm = type && !strcmp(type, "module");
    json_decref(pkg);
    return esm;
}

/* Past the string, comment or template literal at p (p itself when none). */
static const char *skip_literal(const char *p)
{
    if (p[0] == '/' && p[1] == '/') {
        const char *q = strchr(p, '\n');
        return q ? q : p + strlen(p);
    }
    if (p[0] == '/' && p[1] == '*') {
        const char *q = strstr(p + 2, "*/");
        return q ? q + 2 : p + strlen(p);
    }
    if (*p == '\'' || *p == '"' || *p == '`') {
        for (const char *q = p + 1; *q; q++)
            if (*q == '\\' && q[1])
                q++;
            else if (*q == *p)
                return q + 1;
        return p + strlen(p);
    }
    return p;
}

/* The bracket closing the one open at p ({, [ or (), NULL when none. */
static const char *closing(const char *p)
{
    int depth = 0;
    while (*p) {
        const char *q = skip_literal(p);
        if (q != p) {
            p = q;
            continue;
        }
        if (strchr("{[(", *p))
            depth++;
        else if (strchr("}])", *p) && --depth == 0)
            return p;
        p++;
    }
    return NULL;
}

/* The `{` of the config object: defineConfig({, export default {,
 * module.exports = {. */
static const char *config_object(const char *text)
{
    static const char *const opens[] = {"defineConfig(", "export default", "module.exports ="};
    for (size_t i = 0; i < sizeof opens / sizeof opens[0]; i++) {
        const char *p = strstr(text, opens[i]);
        if (p && *(p += strlen(opens[i]) + strspn(p + strlen(opens[i]), " \t\n")) == '{')
            return p;
    }
    return NULL;
}

static int ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c == '.';
}

/* The value after the object's own (depth 1) `reporter:` key, NULL none. */
static const char *reporter_value(const char *open, const char *close)
{
    for (const char *p = open + 1; p < close;) {
        const char *q = skip_literal(p);
        if (q != p) {
            p = q;
            continue;
        }
        if (strchr("{[(", *p)) {
            p = closing(p);
            if (!p)
                return NULL;
            p++;
            continue;
        }
        if (!strncmp(p, "reporter", 8) && !ident_char(p[-1]) && !ident_char(p[8])) {
            const char *v = p + 8 + strspn(p + 8, " \t");
            if (*v == ':')
                return v + 1 + strspn(v + 1, " \t");
        }
        p++;
    }
    return NULL;
}

/* The indent of the line after open's line, into out. */
static void key_indent(const char *open, char *out, size_t len)
{
    const char *nl = strchr(open, '\n');
    size_t n = nl ? strspn(nl + 1, " \t") : 0;
    snprintf(out, len, "%.*s", (int)(n && n < len ? n : 2), nl && n ? nl + 1 : "  ");
}

/* What the plan says of the reporter it added. */
static int added(struct init_plan *p)
{
    init_note(p,
              "%s: wtproxy's reporter added: it prints what wtproxy refused under each failed "
              "test, and fails a run that no daemon answered; it is on where "
              "node_modules/wtproxy-whoami is linked (wtproxy doctor prints the link), and none "
              "elsewhere (a CI without wtproxy)",
              p->app.pw.file);
    return 1;
}

int init_pw_reporter(struct init_plan *p, const char *text, struct init_text *t)
{
    const struct cli_playwright *pw = &p->app.pw;
    char entry[256], indent[32], line[1024];
    const char *open = config_object(text), *close = open ? closing(open) : NULL;
    if (strstr(text, NAME))
        return 0;
    guarded_entry(config_esm(p->dir, pw->file), entry, sizeof entry);
    const char *v = close ? reporter_value(open, close) : NULL;
    if (!close || (v && *v != '[' && *v != '\'' && *v != '"')) {
        init_note(p,
                  "%s: add wtproxy's reporter to its reporters by hand (wtproxy help "
                  "playwright): %s; without it a run that no daemon answered passes on "
                  "whatever code answered",
                  pw->file, entry);
        return 0;
    }
    if (!v) { /* Playwright's default reporters, and this one */
        const char *eol = strchr(open, '\n');
        if (!eol || eol > close) { /* a one-line object */
            init_put(t, text, (size_t)(open + 1 - text));
            snprintf(line, sizeof line, " reporter: [[process.env.CI ? 'dot' : 'list'], %s],",
                     entry);
            init_puts(t, line);
            init_puts(t, open + 1);
            return added(p);
        }
        key_indent(open, indent, sizeof indent);
        init_put(t, text, (size_t)(eol + 1 - text));
        snprintf(line, sizeof line,
                 "%s" WHY "%sreporter: [[process.env.CI ? 'dot' : 'list'], %s],\n", indent, indent,
                 entry);
        init_puts(t, line);
        init_puts(t, eol + 1);
        return added(p);
    }
    if (*v != '[') { /* one reporter by name */
        const char *end = skip_literal(v);
        init_put(t, text, (size_t)(v - text));
        snprintf(line, sizeof line, "[[%.*s], %s]", (int)(end - v), v, entry);
        init_puts(t, line);
        init_puts(t, end);
        return added(p);
    }
    const char *end = closing(v), *last = end;
    if (!end)
        return 0;
    while (last > v + 1 && strchr(" \t\n", last[-1]))
        last--;
    init_put(t, text, (size_t)(last - text));
    snprintf(line, sizeof line, "%s%s", last[-1] == '[' || last[-1] == ',' ? " " : ", ", entry);
    init_puts(t, last[-1] == '[' ? line + 1 : line);
    init_puts(t, last);
    return added(p);
}
