/* init_next.c - a Next.js app's /__whoami for `wtproxy init`: the route
 * that answers it and the config wrap that makes the answer
 * (whoami/node/next.mjs; `wtproxy help whoami`, "Next.js").
 *
 * The route is `APP/%5F%5Fwhoami/route.js` in the App Router's folder
 * (`app`, else `src/app`): Next does not route a folder named `__whoami`
 * (a private folder) and documents %5F as the escape for a leading `_`.
 * It imports only ./stamp.js beside it, which next dev rewrites under
 * Turbopack (whoami/node/next-turbopack.mjs: the route serving a stamp
 * proves Turbopack took every earlier edit in), gitignored by the
 * .gitignore written with it; so Next's bundler never resolves our
 * package, and the answer is left on globalThis by withWtproxyWhoami()
 * in next.config, which Node loads itself. A route of ours from before
 * the stamp is rewritten. A missing config becomes a new
 * next.config.mjs; a next.config.mjs whose `export default EXPR;` is one
 * line gets EXPR wrapped; any other config gets a note with the lines to
 * write by hand, as does an app without an App Router folder. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "init.h"

#define ROUTE_DIR "%5F%5Fwhoami"
#define WRAP_NAME "withWtproxyWhoami"
#define IMPORT_LINE_NOTE "import { " WRAP_NAME " } from 'wtproxy-whoami/next'"
#define IMPORT_LINE IMPORT_LINE_NOTE ";\n"

static const char route_text[] =
    "// wtproxy: answers GET /__whoami with this checkout and the code `next dev` compiled "
    "(the answer comes from withWtproxyWhoami in next.config; under Turbopack, once this route "
    "serves the ./stamp.js it rewrites), so wtproxy relays only to this worktree's up-to-date "
    "server. %5F%5Fwhoami is Next's spelling of the URL /__whoami (a folder named __whoami is "
    "private, not routed) - do not rename or remove\n"
    "import stamp from './stamp.js';\n"
    "\n"
    "export const dynamic = 'force-dynamic';\n"
    "export function GET() {\n"
    "  const whoami = globalThis[Symbol.for('wtproxy-whoami.next')];\n"
    "  if (whoami) return whoami.response({ stamp });\n"
    "  return new Response('wtproxy-whoami: next.config does not wrap its config in "
    "withWtproxyWhoami() from wtproxy-whoami/next, or this is not next dev: wtproxy init --apply "
    "in the app wraps it (wtproxy help whoami)\\n', { status: 501 });\n"
    "}\n";

/* stamp.js is next dev's to rewrite (whoami/node/next-turbopack.mjs), never
 * a change to commit */
static const char ignore_text[] = "# wtproxy: next dev rewrites stamp.js (withWtproxyWhoami)\n"
                                  "stamp.js\n";

static const char why_config[] =
    "// wtproxy: withWtproxyWhoami follows what `next dev` compiled, for the /__whoami route; "
    "without it wtproxy refuses the server - do not remove\n";

static const char *const configs[] = {"next.config.mjs", "next.config.js", "next.config.ts",
                                      "next.config.cjs"};
#define NCONFIGS (sizeof configs / sizeof configs[0])

static int is_dir(const char *dir, const char *rel)
{
    char path[PATH_MAX];
    struct stat st;
    return cli_join(path, sizeof path, dir, rel) == 0 && stat(path, &st) == 0 &&
           S_ISDIR(st.st_mode);
}

/* The text of dir/rel, NULL when there is none (errno ENOENT) or it
 * cannot be read (then a note says so). */
static char *read_rel(struct init_plan *p, const char *rel)
{
    char path[PATH_MAX], err[PATH_MAX + 64];
    if (cli_join(path, sizeof path, p->dir, rel) < 0) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    char *text = cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
    if (!text && errno != ENOENT)
        init_note(p, "%s: left alone: %s", rel, err);
    return text;
}

/* dir/rel written as text: a new file, or one of ours (holding marker)
 * brought up to date; another's is left alone with a note. */
static int plan_ours(struct init_plan *p, const char *rel, const char *marker, const char *text)
{
    char *now = read_rel(p, rel);
    if (!now && errno != ENOENT)
        return 0;
    if (now && (strcmp(now, text) == 0 || !strstr(now, marker))) {
        if (strcmp(now, text) != 0)
            init_note(p, "%s: already there with other content; left as it is", rel);
        free(now);
        return 0;
    }
    struct init_text t = {0};
    init_puts(&t, text);
    return t.oom ? (free(now), -1) : init_add_change(p, rel, now, &t);
}

/* The route, and the .gitignore beside it; a route.js from before
 * Turbopack's support (no stamp) is rewritten. */
static int plan_route(struct init_plan *p, const char *appdir)
{
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/%s/route.js", appdir, ROUTE_DIR);
    if (plan_ours(p, rel, "wtproxy-whoami.next", route_text) < 0)
        return -1;
    snprintf(rel, sizeof rel, "%s/%s/.gitignore", appdir, ROUTE_DIR);
    return plan_ours(p, rel, "stamp.js", ignore_text);
}

/* The line `export default EXPR;` of text (EXPR on that line), or NULL. */
static const char *export_default(const char *text, const char **expr, size_t *exprlen)
{
    const char *hit = NULL;
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, "export default ", 15) != 0)
            continue;
        if (hit)
            return NULL; /* two: not ours to choose */
        hit = l;
    }
    if (!hit)
        return NULL;
    const char *e = hit + 15, *end = strchr(e, '\n');
    end = end ? end : e + strlen(e);
    while (end > e && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        end--;
    if (end == e || end[-1] != ';' || end - 1 == e)
        return NULL;
    *expr = e;
    *exprlen = (size_t)(end - 1 - e);
    return hit;
}

static void note_by_hand(struct init_plan *p, const char *file, const char *why)
{
    init_note(p,
              "%s: %s; wrap its config by hand: `" IMPORT_LINE_NOTE "` and export `" WRAP_NAME
              "(yourConfig)` (wtproxy help whoami, \"Next.js\"); until then /__whoami answers 501 "
              "and wtproxy refuses the server",
              file, why);
}

/* next.config.mjs: a new one, or its one-line default export wrapped. */
static int plan_config(struct init_plan *p)
{
    for (size_t i = 0; i < NCONFIGS; i++) {
        char *now = read_rel(p, configs[i]);
        if (!now && errno == ENOENT)
            continue;
        if (!now)
            return 0;
        const char *expr;
        size_t len;
        const char *line = export_default(now, &expr, &len);
        struct init_text t = {0};
        if (strstr(now, WRAP_NAME)) {
            free(now);
        } else if (i != 0 || !line) {
            note_by_hand(p, configs[i],
                         i ? "not an ES module init can edit" : "no one-line `export default`");
            free(now);
        } else {
            init_puts(&t, why_config);
            init_puts(&t, IMPORT_LINE);
            init_put(&t, now, (size_t)(line - now));
            const char *eol = strchr(line, '\n');
            init_puts(&t, "export default " WRAP_NAME "(");
            init_put(&t, expr, len);
            init_puts(&t, ");\n");
            init_puts(&t, eol ? eol + 1 : "");
            return t.oom ? (free(now), free(t.s), -1) : init_add_change(p, configs[i], now, &t);
        }
        return 0;
    }
    struct init_text t = {0};
    init_puts(&t, why_config);
    init_puts(&t, IMPORT_LINE "\n/** @type {import('next').NextConfig} */\nconst nextConfig = "
                              "{};\n\nexport default " WRAP_NAME "(nextConfig);\n");
    return t.oom ? -1 : init_add_change(p, "next.config.mjs", NULL, &t);
}

int init_plan_next(struct init_plan *p)
{
    if (p->app.kind != CLI_APP_NEXT)
        return 0;
    const char *appdir = is_dir(p->dir, "app")       ? "app"
                         : is_dir(p->dir, "src/app") ? "src/app"
                                                     : NULL;
    if (!appdir) {
        init_note(p, "Next: no app/ nor src/app/ folder: the /__whoami route is an App Router "
                     "route handler (wtproxy help whoami, \"Next.js\"); without it wtproxy refuses "
                     "the server");
        return 0;
    }
    if (plan_route(p, appdir) < 0 || plan_config(p) < 0)
        return -1;
    if (!is_dir(p->dir, "node_modules/wtproxy-whoami"))
        init_note(
            p, "next.config imports 'wtproxy-whoami/next': link the package into the app "
               "(npm link wtproxy-whoami, or a node_modules/wtproxy-whoami symlink to the folder "
               "wtproxy help whoami names), or next dev cannot load its config");
    return 0;
}
