/* kind.c - see kind.h. A server trusted from its registration has no
 * answer to declare its patterns, and the Python defaults watched nothing
 * of a `go run` server: its edited .go files left it trusted while the
 * tests ran on the old binary. Its command says what it is built from. */
#include "kind.h"

#include <stdio.h>
#include <string.h>

#define N(a) (sizeof a / sizeof *a)

/* Every kind's excludes: tools' folders, and what a run writes into the
 * worktree (the recipe's .wtproxy-run/fp.json, Playwright's
 * test-results/.last-run.json and report, coverage). */
#define RUN_WRITES                                                                                 \
    "**/.git/**", "**/node_modules/**", "**/.venv/**", "**/venv/**", "**/__pycache__/**",          \
        "**/.wtproxy-run/**", "**/test-results/**", "**/playwright-report/**", "**/coverage/**"

/* .env files: read once at start by dotenv, Django, pydantic-settings. */
#define ENV_FILES "**/.env", "**/.env.*"

/* A Go binary is compiled from its packages and modules; its _test.go
 * files and testdata are not in it. */
#define GO_SOURCES "**/*.go", "**/go.mod", "**/go.sum", "**/go.work"
#define GO_BUILT "**/*_test.go", "**/testdata/**"
static char *go_inc[] = {GO_SOURCES};
static char *go_exc[] = {RUN_WRITES, GO_BUILT};

/* cargo builds into target/; tests/ and benches/ are not in the binary. */
#define RUST_SOURCES "**/*.rs", "**/Cargo.toml", "**/Cargo.lock"
#define RUST_BUILT "**/target/**", "**/tests/**", "**/benches/**"
static char *rust_inc[] = {RUST_SOURCES};
static char *rust_exc[] = {RUN_WRITES, RUST_BUILT};

#define RUBY_SOURCES "**/*.rb", "**/*.ru", "**/Gemfile.lock"
/* Rails reloads its templates itself, but late: its file watcher lags,
 * so the first request after an edit got the old page while the server
 * was trusted. And the .yml files under config/ (database.yml...) it
 * reads at start. */
#define RUBY_READ                                                                                  \
    "**/*.erb", "**/*.haml", "**/*.slim", "**/*.builder", "**/*.jbuilder", "**/config/**/*.yml"
#define RUBY_BUILT "**/spec/**", "**/test/**", "**/tmp/**", "**/log/**", "**/vendor/**"
static char *ruby_inc[] = {RUBY_SOURCES, RUBY_READ, ENV_FILES};
static char *ruby_exc[] = {RUN_WRITES, RUBY_BUILT};

/* The Node middleware's defaults (whoami/node/index.mjs DEFAULT_INCLUDE,
 * DEFAULT_EXCLUDE): JSON and HTML too, read at start by import, require or
 * a readFileSync (ng serve's src/index.html, trusted, was served old). And
 * the folders dev servers write generated .js, .ts and .json into as they
 * run (Vite's cache, SvelteKit's, Nuxt's, Astro's, Angular's): trusted,
 * such a server would be stale at once, restarted in a loop (ng serve 19
 * times in two minutes). And public/, sent as it is at each request. */
#define NODE_SOURCES                                                                               \
    "**/*.js", "**/*.mjs", "**/*.cjs", "**/*.jsx", "**/*.ts", "**/*.mts", "**/*.cts", "**/*.tsx",  \
        "**/*.json", "**/*.html"
#define NODE_BUILT                                                                                 \
    "**/dist/**", "**/e2e/**", "**/*.spec.*", "**/*.test.*", "**/.nyc_output/**", "**/.next/**",   \
        "**/%5F%5Fwhoami/stamp.js", "**/.vite/**", "**/.svelte-kit/**", "**/.nuxt/**",             \
        "**/.output/**", "**/.astro/**", "**/.turbo/**", "**/.cache/**", "**/.angular/**",         \
        "**/.parcel-cache/**", "**/public/**"
static char *node_inc[] = {NODE_SOURCES, ENV_FILES};
static char *node_exc[] = {RUN_WRITES, NODE_BUILT};

/* A Perl server (morbo, hypnotoad, plackup, starman, perl app.pl) loads
 * its modules and its templates (Mojolicious' .ep, Template Toolkit's
 * .tt, Text::Xslate's .tx) itself: a morbo server trusted while none of
 * these was watched served an edited .html.ep old with 200. carton
 * installs into local/ (its cpanfile.snapshot says so), tests are in t/. */
#define PERL_SOURCES "**/*.pl", "**/*.pm", "**/*.psgi", "**/cpanfile", "**/cpanfile.snapshot"
#define PERL_READ "**/*.ep", "**/*.tt", "**/*.tx"
#define PERL_BUILT "**/local/**", "**/t/**", "**/blib/**", "**/_build/**"
static char *perl_inc[] = {PERL_SOURCES, PERL_READ, ENV_FILES};
static char *perl_exc[] = {RUN_WRITES, PERL_BUILT};

/* The Python middleware's defaults (defaults.c). */
#define PY_SOURCES "**/*.py"
static char *py_inc[] = {PY_SOURCES, ENV_FILES};
static char *py_exc[] = {RUN_WRITES};

static char *any_inc[] = {GO_SOURCES, RUST_SOURCES, RUBY_SOURCES, RUBY_READ, NODE_SOURCES,
                          PY_SOURCES, PERL_SOURCES, PERL_READ,    ENV_FILES};
static char *any_exc[] = {RUN_WRITES,  GO_BUILT,    "**/target/**",
                          "**/tmp/**", "**/log/**", NODE_BUILT};

#define ANY_WATCHED                                                                                \
    "the sources of Go, Rust, Ruby, Node, Python and Perl servers (listed by wtproxy help "        \
    "config, trust_registry)"

/* Without a middleware, the guide that says how to answer /__whoami; its
 * Go recipe fingerprints the sources before the build, which any server
 * built before it runs can follow. */
#define GUIDE_GO                                                                                   \
    "give it a /__whoami of its own: wtproxy help whoami-protocol, section 1, has the recipe for " \
    "Go (wtproxy fingerprint --json before go build, the server answering that object)"
#define GUIDE_BUILT                                                                                \
    "give it a /__whoami of its own: wtproxy help whoami-protocol says what it answers (its "      \
    "section 1 recipe, a fingerprint taken before the build, fits any server built before it "     \
    "runs)"
/* A server that loads its code itself, as the middlewares' servers do:
 * its fingerprint must call a file edited after its start unknown, which
 * wtproxy fingerprint does for it. */
#define GUIDE_LOADS                                                                                \
    "give it a /__whoami of its own: wtproxy help whoami-protocol, section 1, has the recipe for " \
    "a server that loads its code itself (wtproxy fingerprint --json --unknown-after-start PID, "  \
    "run once as it starts with its own pid, the server answering that object)"

static const struct whoami_kind go = {
    "a Go server",
    {go_inc, N(go_inc), go_exc, N(go_exc)},
    NULL,
    "the files it embeds (//go:embed) or reads at start, such as templates",
    0,
    GUIDE_GO};
static const struct whoami_kind rust = {
    "a Rust server",
    {rust_inc, N(rust_inc), rust_exc, N(rust_exc)},
    NULL,
    "the files it includes (include_str!, include_bytes!) or reads at start",
    0,
    GUIDE_BUILT};
static const struct whoami_kind ruby = {"a Ruby server",
                                        {ruby_inc, N(ruby_inc), ruby_exc, N(ruby_exc)},
                                        NULL,
                                        "its assets (app/assets, app/javascript) and other files "
                                        "it reads",
                                        0,
                                        GUIDE_LOADS};
static const struct whoami_kind node = {"a Node server",
                                        {node_inc, N(node_inc), node_exc, N(node_exc)},
                                        NULL,
                                        "templates and other files it reads at start",
                                        1,
                                        ""};
static const struct whoami_kind python = {"a Python server",
                                          {py_inc, N(py_inc), py_exc, N(py_exc)},
                                          NULL,
                                          "templates and other files it reads at start",
                                          1,
                                          ""};
static const struct whoami_kind perl = {
    "a Perl server",
    {perl_inc, N(perl_inc), perl_exc, N(perl_exc)},
    NULL,
    "its config (a Mojolicious app.conf) and other files it reads at start",
    0,
    GUIDE_LOADS};
/* A language no middleware covers and no kind above names: every kind's
 * sources, as for an unknown command, but its guide, not the middlewares. */
static const struct whoami_kind other = {
    "a server of another language",
    {any_inc, N(any_inc), any_exc, N(any_exc)},
    ANY_WATCHED,
    "the sources of its own language and what it reads at start",
    0,
    GUIDE_BUILT};
static const struct whoami_kind unknown = {"a server of an unknown kind",
                                           {any_inc, N(any_inc), any_exc, N(any_exc)},
                                           ANY_WATCHED,
                                           "what it reads at start",
                                           1,
                                           ""};

static const char *const go_words[] = {"go", "air", NULL};
static const char *const rust_words[] = {"cargo", NULL};
static const char *const ruby_words[] = {"ruby", "rails", "bundle", "rackup", "puma", NULL};
static const char *const node_words[] = {"node", "tsx",  "npm",  "npx",         "pnpm", "yarn",
                                         "bun",  "vite", "next", "next-server", NULL};
static const char *const python_words[] = {
    "python",   "manage", "django-admin",   "uvicorn", "hypercorn", "fastapi",
    "gunicorn", "uwsgi",  "waitress-serve", "flask",   NULL};
static const char *const perl_words[] = {"perl",    "morbo",   "hypnotoad", "plackup",
                                         "starman", "starlet", "carton",    NULL};
static const char *const other_words[] = {"php",    "artisan", "java", "mvn", "gradle",
                                          "dotnet", "elixir",  "mix",  NULL};

int whoami_runs_one_of(const char *command, const char *const *words)
{
    for (; *words; words++)
        for (const char *p = strstr(command, *words); p; p = strstr(p + 1, *words)) {
            char after = p[strlen(*words)];
            if ((p == command || p[-1] == ' ' || p[-1] == '/') &&
                (after == '\0' || after == ' ' || after == '.' || after == '3'))
                return 1;
        }
    return 0;
}

const struct whoami_kind *whoami_kind_of(const char *command)
{
    static const struct {
        const char *const *words;
        const struct whoami_kind *kind;
    } kinds[] = {{go_words, &go},      {rust_words, &rust},     {ruby_words, &ruby},
                 {node_words, &node},  {python_words, &python}, {perl_words, &perl},
                 {other_words, &other}};
    for (size_t i = 0; command && i < N(kinds); i++)
        if (whoami_runs_one_of(command, kinds[i].words))
            return kinds[i].kind;
    return &unknown;
}

void whoami_kind_watched(const struct whoami_kind *k, char *out, size_t outlen)
{
    size_t used = 0;
    out[0] = '\0';
    if (k->watched) {
        snprintf(out, outlen, "%s", k->watched);
        return;
    }
    for (size_t i = 0; i < k->patterns.n_include && used < outlen; i++)
        used += (size_t)snprintf(out + used, outlen - used, "%s%s", i ? ", " : "",
                                 k->patterns.include[i]);
}
