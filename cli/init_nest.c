/* init_nest.c - a NestJS app for `wtproxy init` and `wtproxy doctor`: its
 * entry module (nest-cli.json's sourceRoot and entryFile, src/main.ts by
 * default), the /__whoami middleware put in it right after
 * `NestFactory.create(...)`, and its listen made to take wtproxy's port.
 *
 * The line loads the package under `wtproxy run` only (WTPROXY_PORT), and
 * names it through String(): tsc then never resolves it (a build, the
 * team's CI and production need no wtproxy-whoami), and `await import()`
 * works whether tsc emits CommonJS (a require of the package's ES module,
 * Node 20.19 on) or ES modules. It goes before the first listen, where
 * Nest has not mounted its routes yet, so it answers /__whoami first.
 * Text inspection, as the rest of init: one `NestFactory.create(` whose
 * call ends in `;`, assigned to a name; any other shape (a Fastify
 * adapter, a monorepo's projects) gets a note with the line to write. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "init.h"

#define NEST_WHY_LINE                                                                              \
    "// wtproxy: answers /__whoami so wtproxy routes only to this worktree's up-to-date "          \
    "server; loaded under wtproxy run only, and named through String() so that tsc, nest build "   \
    "and CI never resolve wtproxy-whoami - do not remove\n"

int cli_nest_entry(const char *dir, char *out, size_t len)
{
    json_t *cfg = cli_json_in(dir, "nest-cli.json");
    const char *root = json_string_value(json_object_get(cfg, "sourceRoot"));
    const char *entry = json_string_value(json_object_get(cfg, "entryFile"));
    int mono = json_object_get(cfg, "projects") != NULL;
    int n = snprintf(out, len, "%s/%s.ts", root ? root : "src", entry ? entry : "main");
    json_decref(cfg);
    return mono || n < 0 || (size_t)n >= len ? -1 : 0;
}

int cli_nest_lacks_whoami(const char *dir, char *file, size_t len)
{
    char path[PATH_MAX], err[PATH_MAX + 64];
    char *pkg = cli_join(path, sizeof path, dir, "package.json") < 0
                    ? NULL
                    : cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
    int nest = pkg && strstr(pkg, "\"@nestjs/core\"");
    free(pkg);
    if (!nest || cli_nest_entry(dir, file, len) < 0 || cli_join(path, sizeof path, dir, file) < 0)
        return 0;
    char *main = cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
    int lacks = main && !strstr(main, "wtproxy-whoami");
    free(main);
    return lacks;
}

void cli_nest_use_line(const char *app, char *out, size_t len)
{
    snprintf(out, len,
             "if (process.env.WTPROXY_PORT) %s.use((await "
             "import(String('wtproxy-whoami'))).whoami());",
             app);
}

/* The end of the bracketed span opening at p ('(' only), strings and
 * comments skipped: the byte after its ')', NULL when it does not close. */
static const char *paren_end(const char *p)
{
    int depth = 0;
    for (; *p; p++) {
        if (p[0] == '/' && p[1] == '/') {
            p += strcspn(p, "\n");
            if (!*p)
                return NULL;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            if (!e)
                return NULL;
            p = e + 1;
        } else if (*p == '\'' || *p == '"' || *p == '`') {
            const char *q = p + 1;
            while (*q && *q != *p)
                q += q[0] == '\\' && q[1] ? 2 : 1;
            if (!*q)
                return NULL;
            p = q;
        } else if (*p == '(') {
            depth++;
        } else if (*p == ')' && --depth == 0) {
            return p + 1;
        }
    }
    return NULL;
}

/* Where `const|let NAME = await NestFactory.create...(...);` ends (the
 * byte after its line), with NAME into app and the line's indent into
 * indent; NULL when main has no such one statement. */
static const char *create_statement(const char *main, char *app, size_t alen, char *indent,
                                    size_t ilen)
{
    const char *call = strstr(main, "NestFactory.create");
    if (!call || strstr(call + 1, "NestFactory.create"))
        return NULL;
    const char *bol = call;
    while (bol > main && bol[-1] != '\n')
        bol--;
    size_t ind = strspn(bol, " \t");
    const char *p = bol + ind;
    if (strncmp(p, "const ", 6) != 0 && strncmp(p, "let ", 4) != 0)
        return NULL;
    p += *p == 'c' ? 6 : 4;
    size_t n = 0;
    while (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '$')
        n++;
    const char *open = strchr(call, '(');
    const char *end = open ? paren_end(open) : NULL;
    if (n == 0 || n >= alen || ind >= ilen || !end || *end != ';' ||
        (strchr(end, '\n') && strspn(end + 1, " \t\r") != (size_t)(strchr(end, '\n') - end - 1)))
        return NULL;
    snprintf(app, alen, "%.*s", (int)n, p);
    snprintf(indent, ilen, "%.*s", (int)ind, bol);
    const char *eol = strchr(end, '\n');
    return eol ? eol + 1 : end + strlen(end);
}

/* `.listen(3000` of a literal port, with the digits' place; NULL when
 * the listen takes anything else (a name, process.env.PORT). */
static const char *literal_listen(const char *text, size_t *digits)
{
    const char *l = strstr(text, ".listen(");
    if (!l)
        return NULL;
    l += 8;
    l += strspn(l, " ");
    *digits = strspn(l, "0123456789");
    return *digits && strchr(",) ", l[*digits]) ? l : NULL;
}

static void nest_by_hand(struct init_plan *p, const char *file, const char *why)
{
    char line[256];
    cli_nest_use_line("app", line, sizeof line);
    init_note(p,
              "NestJS: %s: %s; add by hand, right after `const app = await "
              "NestFactory.create(...)`: `%s` (wtproxy help whoami, \"NestJS\"); until then "
              "wtproxy refuses the server (502 no-whoami)",
              file, why, line);
}

/* The new text of main: the middleware after the create statement, a
 * literal listen port made $PORT's. */
static void nest_edited(const char *main, const char *after, const char *app, const char *indent,
                        struct init_text *t)
{
    char line[256];
    size_t digits;
    const char *port = literal_listen(main, &digits);
    cli_nest_use_line(app, line, sizeof line);
    init_put(t, main, (size_t)(after - main));
    init_puts(t, indent);
    init_puts(t, NEST_WHY_LINE);
    init_puts(t, indent);
    init_puts(t, line);
    init_puts(t, "\n");
    if (!port || port < after) {
        init_puts(t, after);
        return;
    }
    init_put(t, after, (size_t)(port - after));
    init_puts(t, "process.env.PORT ?? ");
    init_puts(t, port);
}

int init_plan_nest(struct init_plan *p)
{
    char file[PATH_MAX], path[PATH_MAX], err[PATH_MAX + 64], app[64], indent[64];
    if (p->app.kind != CLI_APP_NEST)
        return 0;
    if (cli_nest_entry(p->dir, file, sizeof file) < 0) {
        nest_by_hand(p, "nest-cli.json", "a monorepo's projects: init edits one app's entry only");
        return 0;
    }
    char *main = cli_join(path, sizeof path, p->dir, file) < 0
                     ? NULL
                     : cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
    const char *after =
        main ? create_statement(main, app, sizeof app, indent, sizeof indent) : NULL;
    if (!main)
        nest_by_hand(p, file, err);
    else if (strstr(main, "wtproxy-whoami"))
        init_note(p, "NestJS: %s imports wtproxy-whoami already", file);
    else if (strstr(main, "FastifyAdapter"))
        nest_by_hand(p, file, "a Fastify adapter, whose middleware init does not write");
    else if (!after)
        nest_by_hand(p, file, "no one `const app = await NestFactory.create(...);` statement");
    if (!main || strstr(main, "wtproxy-whoami") || strstr(main, "FastifyAdapter") || !after) {
        free(main);
        return 0;
    }
    struct init_text t = {0};
    nest_edited(main, after, app, indent, &t);
    if (!strstr(t.s ? t.s : "", "process.env.PORT"))
        init_note(p,
                  "NestJS: %s does not listen on process.env.PORT: wtproxy run gives the "
                  "server its port there; write `await %s.listen(process.env.PORT ?? 3000)`",
                  file, app);
    init_note(p, "Node: every worktree needs node_modules/wtproxy-whoami (node_modules is not "
                 "committed); wtproxy doctor, run in a worktree, prints the link that adds it");
    return t.oom ? (free(main), free(t.s), -1) : init_add_change(p, file, main, &t);
}
