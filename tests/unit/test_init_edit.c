/* test_init_edit.c - cli/init_edit.c, init_detect.c and init_python.c,
 * the text rules of `wtproxy init`: which `MIDDLEWARE = [` lines it edits
 * and with what indent, which webServer commands it rewrites (a plain
 * string) and which it leaves to a person (an expression, a template), the
 * end of a config block with quotes in its comments, the literal ports it
 * reads, which `app = ...(` lines make a FastAPI, Starlette or Flask app,
 * where the whoami wrap goes in its module, what asks for --reload, and
 * which Vite proxy targets give an API's front (init_vite.c), and where
 * the /__whoami plugin's entry goes in a Vite config (init_vite_plugin.c;
 * test 158 loads each form in Vite). */
#include "../../cli/args.c"
#include "../../cli/init_astro.c"
#include "../../cli/init_detect.c"
#include "../../cli/init_edit.c"
#include "../../cli/init_flask.c"
#include "../../cli/init_gunicorn.c"
#include "../../cli/init_members.c"
#include "../../cli/init_nest.c"
#include "../../cli/init_next.c"
#include "../../cli/init_node.c"
#include "../../cli/init_pw_reporter.c"
#include "../../cli/init_python.c"
#include "../../cli/init_rack.c"
#include "../../cli/init_vite.c"
#include "../../cli/init_vite_plugin.c"

#include "tap.h"

/* Every python here imports what it runs (python3 stays python3): test
 * 085 runs the real probe, with a python3 first on PATH that cannot. */
int cli_py_probe(const char *dir, const char *prefix, const char *code, char *out, size_t len)
{
    (void)dir, (void)prefix, (void)code;
    if (len)
        out[0] = '\0';
    return 0;
}

/* The top folder's config needs a git worktree: test 089 covers it. */
void cli_playwright_of_top(const char *dir, struct cli_playwright *pw)
{
    (void)dir;
    (void)pw;
}

/* So does a subfolder's Python app seen from the top: test 091 covers it. */
int cli_pytop(const char *dir, char *root, size_t rlen, char *rel, size_t rellen)
{
    (void)dir, (void)root, (void)rlen, (void)rel, (void)rellen;
    return 0;
}

int cli_pytop_module(const char *dir, const char *text, char *out, size_t len)
{
    (void)dir, (void)text, (void)out, (void)len;
    return 0;
}

int cli_pytop_python(const char *dir, const char *runs, char *out, size_t len)
{
    (void)dir, (void)runs, (void)out, (void)len;
    return -1;
}

void cli_pytop_rebase(const char *dir, char *py, size_t len)
{
    (void)dir, (void)py, (void)len;
}

int cli_pytop_reload(const char *dir, const char *server, char *source, size_t len)
{
    (void)dir, (void)server, (void)source, (void)len;
    return 0;
}

static void test_middleware_spot(void)
{
    char indent[64];
    int same;
    const char *four = "X = 1\nMIDDLEWARE = [\n    'a.B',\n]\n";
    is_int(middleware_spot(four, indent, sizeof indent, &same),
           (long)strlen("X = 1\nMIDDLEWARE = [\n"), "after the `MIDDLEWARE = [` line");
    is_str(indent, "    ", "indented as the next entry");
    is_int(middleware_spot("MIDDLEWARE=[ # ours\n\t'a',\n]\n", indent, sizeof indent, &same),
           (long)strlen("MIDDLEWARE=[ # ours\n"), "a trailing comment and no blanks are fine");
    is_str(indent, "\t", "a tab indent is kept");
    ok(middleware_spot("MIDDLEWARE = [\n]\n", indent, sizeof indent, &same) > 0 &&
           strcmp(indent, "    ") == 0,
       "an empty list: four spaces");
    is_int(middleware_spot("MIDDLEWARE = [ 'a', 'b']\n", indent, sizeof indent, &same),
           (long)strlen("MIDDLEWARE = [ "), "entries on the same line: before the first");
    ok(same && strcmp(indent, "    ") == 0, "... said so, with four spaces");
    is_int(middleware_spot("MIDDLEWARE = []\n", indent, sizeof indent, &same),
           (long)strlen("MIDDLEWARE = ["), "an empty list on one line: inside it");
    is_int(middleware_spot("MIDDLEWARE += [\n    'a',\n]\n", indent, sizeof indent, &same), -1,
           "+= is not the assignment");
    is_int(middleware_spot("MIDDLEWARE_CLASSES = [\n    'a',\n]\n", indent, sizeof indent, &same),
           -1, "another name that starts the same is not it");
    is_int(middleware_spot("    MIDDLEWARE = [\n", indent, sizeof indent, &same), -1,
           "an indented one (inside an if) is not edited");
    is_int(middleware_spot("MIDDLEWARE = list(BASE)\n", indent, sizeof indent, &same), -1,
           "a list built in code is not edited");
}

/* edit_command on text with start "S {port}" and that front port: the
 * result, or NULL. */
static char *command_on(const char *text, int front)
{
    static struct init_plan p;
    struct init_text t = {0};
    p.front = front;
    snprintf(p.app.start, sizeof p.app.start, "S {port}");
    if (!edit_command(&p, text, &t)) {
        free(t.s);
        return NULL;
    }
    return t.s;
}

static char *command_of(const char *text)
{
    return command_on(text, WTP_DEFAULT_FRONT_PORT);
}

static void test_edit_command(void)
{
    char *s = command_of("x\n  webServer: {\n    command: \"npm run dev\",\n    url: 'u',\n  },\n");
    ok(s && strstr(s, "    // wtproxy: ") &&
           strstr(s, "    command: \"wtproxy run -- S {port}\",\n"
                     "    url: 'u',"),
       "a double-quoted command: replaced, the comment above it, indented alike");
    free(s);
    s = command_of("webServer: { command: `npm start` }");
    ok(s && strstr(s, "command: `wtproxy run -- S {port}` }"), "a backtick string without ${}");
    free(s);
    ok(!command_of("webServer: {\n command: `node s.js ${port}`,\n}"),
       "a template with ${...}: left to a person");
    ok(!command_of("webServer: {\n command: env.X ? 'a' : 'b',\n}"),
       "an expression: left to a person");
    ok(!command_of("webServer: {\n command: 'a' + port,\n}"), "a concatenation: left");
    ok(!command_of("export default { use: {} }\n"), "no webServer: nothing to edit");
    s = command_on("webServer: { command: 'npm start', url: 'http://localhost:3000/' }", 3000);
    ok(s && strstr(s, "command: 'wtproxy run --front 3000 -- S {port}',"),
       "another front than 8000: `wtproxy run` is told it, or it registers on 8000");
    free(s);
}

/* The --front of a config's `wtproxy run`, as doctor reads it (0: none). */
static void test_run_front(void)
{
    const char *cases[][2] = {
        {"command: 'wtproxy run -- x {port}'", "0"},
        {"command: 'wtproxy run --front 3000 -- x {port}'", "3000"},
        {"command: 'wtproxy run --front=3001 --service web -- x'", "3001"},
        {"command: 'wtproxy run -- x --front 9 {port}'", "0"}, /* CMD's own flag */
        {"command: `${wtproxy} run --front 4000 -- x`", "4000"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *text = cases[i][0];
        is_int(run_front(text, text + strlen(text)), atol(cases[i][1]), "%s", text);
    }
}

/* The interpreter a config's webServer.command names for manage.py, which
 * init keeps in the commands it writes. */
static void test_config_python(void)
{
    struct cli_playwright pw = {0};
    char py[512];
    pw.text = "webServer: { command: '/usr/bin/python3 manage.py runserver 8000' }";
    ok(config_python(&pw, " manage.py runserver", py, sizeof py) == 0 &&
           strcmp(py, "/usr/bin/python3") == 0,
       "a path to python: kept");
    pw.text =
        "webServer: { command: 'wtproxy run -- .venv/bin/python manage.py runserver {port}' }";
    ok(config_python(&pw, " manage.py runserver", py, sizeof py) == 0 &&
           strcmp(py, ".venv/bin/python") == 0,
       "after `wtproxy run --`");
    pw.text = "webServer: { command: 'python3 manage.py runserver 8000' }";
    is_int(config_python(&pw, " manage.py runserver", py, sizeof py), -1,
           "a bare python3: no path to keep");
    pw.text = "webServer: { command: '/opt/node manage.py runserver' }";
    is_int(config_python(&pw, " manage.py runserver", py, sizeof py), -1, "not a python");
    pw.text = "webServer: { command: 'venv/bin/python3 -m uvicorn main:app --port 8000' }";
    ok(config_python(&pw, " -m uvicorn", py, sizeof py) == 0 && strcmp(py, "venv/bin/python3") == 0,
       "uvicorn's interpreter");
    is_int(config_python(&pw, " -m flask", py, sizeof py), -1, "not what flask runs with");
}

static void test_framework_of(void)
{
    const char *cases[][3] = {
        {"from fastapi import FastAPI\napp = FastAPI()\n", "FastAPI", "FastAPI"},
        {"import fastapi\napp=fastapi.FastAPI(title='x')\n", "FastAPI",
         "module.FastAPI, no blanks"},
        {"app = Starlette(routes=routes)\n", "Starlette", "Starlette"},
        {"from flask import Flask\napp = Flask(__name__)\n", "Flask", "Flask"},
        {"def make():\n    app = Flask(__name__)\n", NULL, "not at the top level"},
        {"application = Flask(__name__)\n", NULL, "another name"},
        {"app == FastAPI()\n", NULL, "a comparison"},
        {"app = FastAPIWrapper()\n", NULL, "another class"},
        {"app = create_app()\n", NULL, "a factory"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct framework *f = framework_of(cases[i][0]);
        is_str(f ? f->ctor : "(none)", cases[i][1] ? cases[i][1] : "(none)", "%s", cases[i][2]);
    }
}

/* The flags of the project's flask run line that init's start keeps. */
static void test_flask_flags(void)
{
    static const char *const cases[][4] = {
        {"flask --app app run --debug --port 8430", " --debug", "",
         "run's --debug, moved before run"},
        {"  command: 'flask --app app --debug run -p 8430 --with-threads',", " --debug",
         " --with-threads", "a Playwright command: cut at its quote"},
        {"dev:\n\tpython -m flask -A shop -e .env.dev run --host 0.0.0.0 --port=8000 --cert adhoc "
         "--reload && echo",
         " -e .env.dev", " --cert adhoc", "values kept with their flag"},
        {"pip install flask\nflask routes\nflask run --extra-files a.cfg", "",
         " --extra-files a.cfg", "not a flask run line, then one"},
    };
    char group[128], run[128];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ok(cli_flask_flags(cases[i][0], group, sizeof group, run, sizeof run) == 1, "%s: found",
           cases[i][3]);
        is_str(group, cases[i][1], "%s: before run", cases[i][3]);
        is_str(run, cases[i][2], "%s: after run", cases[i][3]);
    }
    ok(cli_flask_flags("flask shell\n", group, sizeof group, run, sizeof run) == 0 && !group[0],
       "no flask run: none");
}

/* A Playwright config of one literal webServer command. */
static int gunicorn_of(const char *cmd, char *out, size_t len)
{
    struct cli_playwright pw = {0};
    snprintf(pw.command, sizeof pw.command, "%s", cmd);
    return cli_gunicorn_start(&pw, out, len);
}

static void test_gunicorn_start(void)
{
    static const char *const cases[][3] = {
        {"/usr/bin/gunicorn --reload --workers 2 --bind 127.0.0.1:8610 shop.wsgi",
         "/usr/bin/gunicorn --reload --workers 2 --bind 127.0.0.1:{port} shop.wsgi", "--bind X"},
        {"gunicorn -b 0.0.0.0:8000 shop.wsgi:application",
         "gunicorn -b 127.0.0.1:{port} shop.wsgi:application", "-b X, every interface"},
        {"gunicorn --bind=localhost:8000 --reload shop.wsgi",
         "gunicorn --bind=127.0.0.1:{port} --reload shop.wsgi", "--bind=X"},
        {"gunicorn -b:8000 shop.wsgi", "gunicorn -b127.0.0.1:{port} shop.wsgi", "-bX"},
        {".venv/bin/python -m gunicorn --reload shop.wsgi",
         ".venv/bin/python -m gunicorn --bind 127.0.0.1:{port} --reload shop.wsgi",
         "python -m gunicorn without a bind: one added"},
        {"gunicorn --reload --bind 127.0.0.1:{port} shop.wsgi",
         "gunicorn --reload --bind 127.0.0.1:{port} shop.wsgi", "init's own line: the same"},
    };
    char out[1024];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ok(gunicorn_of(cases[i][0], out, sizeof out) == 0, "%s: kept", cases[i][2]);
        is_str(out, cases[i][1], "%s: its bind is {port}'s", cases[i][2]);
    }
    static const char *const not [][2] = {
        {"python3 manage.py runserver 8000", "runserver"},
        {"gunicorn -b 127.0.0.1:8000 -b [::1]:8000 shop.wsgi", "two binds"},
        {"gunicorn --bind 127.0.0.1:$PORT shop.wsgi", "a variable"},
        {"cd api && gunicorn shop.wsgi", "shell syntax"},
        {"gunicorn --reload shop.wsgi --bind", "a bind without its value"},
        {"/opt/greenunicorn shop.wsgi", "another program"},
    };
    for (size_t i = 0; i < sizeof not / sizeof not [0]; i++)
        is_int(gunicorn_of(not [i][0], out, sizeof out), -1, "%s: not kept", not [i][1]);
}

static void test_wrap_spot(void)
{
    const char *plain = "app = FastAPI()\n@app.get('/')\ndef r():\n    return 1\n";
    is_int(wrap_spot(plain), (long)strlen(plain), "at the end");
    const char *main_block = "app = Flask(__name__)\n\nif __name__ == '__main__':\n    "
                             "app.run()\n\n# done\n";
    is_int(wrap_spot(main_block), (long)strlen("app = Flask(__name__)\n\n"),
           "before a closing `if __name__` block, which serves the wrapped app");
    is_int(wrap_spot("app = Flask(__name__)\nif __name__ == '__main__':\n    app.run()\n"
                     "@app.route('/late')\ndef late():\n    pass\n"),
           -1, "top-level code after that block: left to a person");
    is_int(wrap_spot("app = FastAPI()\nx = 1 + \\\n"), -1, "a continued last line: left");
    is_int(wrap_spot("app = FastAPI()"), (long)strlen("app = FastAPI()"), "no final newline");
}

static void test_runs_with_reload(void)
{
    ok(runs_with_reload("dev:\n\tuvicorn main:app --reload --port 8000\n", "uvicorn"),
       "a Makefile's uvicorn --reload");
    ok(!runs_with_reload("dev:\n\tuvicorn main:app\nwatch: --reload\n", "uvicorn"),
       "--reload on another line is not the server's");
    ok(runs_with_reload("web: flask --app app --debug run\n", "flask"), "flask --debug reloads");
    ok(!runs_with_reload("web: uvicorn main:app --debug\n", "uvicorn"),
       "uvicorn's --debug does not");
}

static void test_block_end(void)
{
    const char *cfg = "webServer: {\n  // it's the dev server: 'npm' {\n  command: 'x}',\n"
                      "  /* a } here */ url: `y{`,\n}, after";
    const char *end = cli_block_end(cfg);
    ok(end && strcmp(end, ", after") == 0, "comments and strings hold no braces or quotes");
    ok(!cli_block_end("webServer: { command: 'x'"), "an unclosed block: NULL");
}

static void test_literal_port(void)
{
    const char *s = "use: { baseURL: 'http://localhost:5173' }, x: \"http://127.0.0.1:3000/\"";
    is_int(literal_port(s, s + strlen(s), "baseURL:"), 5173, "baseURL's port");
    const char *u = "url: \"http://127.0.0.1:3000/\"";
    is_int(literal_port(u, u + strlen(u), "url:"), 3000, "127.0.0.1 with a path");
    const char *tpl = "baseURL: `http://localhost:${front}`";
    is_int(literal_port(tpl, tpl + strlen(tpl), "baseURL:"), 0, "a template: no port");
    const char *far = "baseURL: 'http://localhost:99999'";
    is_int(literal_port(far, far + strlen(far), "baseURL:"), 0, "no port past 65535");
}

#define W(ind)                                                                                     \
    ind "// wtproxy: answers /__whoami so wtproxy routes only to this worktree's "                 \
        "up-to-date server; loaded under wtproxy run only, and named through String() so that "    \
        "vite build, tsc and CI never resolve wtproxy-whoami - do not remove or make it a static " \
        "import\n" ind CLI_VITE_WHOAMI_ENTRY ",\n"

static void test_vite_proxy_port(void)
{
    is_int(init_vite_proxy_port("export default { server: { proxy: { '/api': "
                                "'http://localhost:23805' } } };\n"),
           23805, "a path proxied to a literal localhost URL");
    is_int(init_vite_proxy_port("proxy: {\n  '/api': { target: \"http://127.0.0.1:8001/v1\", "
                                "changeOrigin: true },\n  '/ws': 'http://localhost:8001',\n}"),
           8001, "as a target:, twice the same port");
    is_int(init_vite_proxy_port("proxy: { '/api': 'http://localhost:8001', "
                                "'/auth': 'http://localhost:8002' }"),
           -1, "two ports: which is this server's is not for init to guess");
    is_int(init_vite_proxy_port("proxy: { '/api': "
                                "`http://localhost:${process.env.WTPROXY_FRONT_API}` }"),
           -1, "a URL built in code: said, not guessed");
    is_int(init_vite_proxy_port("proxy: {\n  // was 'http://localhost:9999'\n  '/api': "
                                "'http://localhost:8001' }"),
           8001, "a comment's URL is prose");
    is_int(init_vite_proxy_port("proxy: { '/api': 'https://api.example.com' }"), 0,
           "a remote target: no port of this machine");
    is_int(init_vite_proxy_port("proxy: apiProxy, plugins: [x({ a: 'http://localhost:1' })]"), 0,
           "a proxy that is not a literal block: nothing read past it");
    is_int(init_vite_proxy_port("proxy: { '/api': 'http://localhost:8001'"), -1,
           "an unclosed block");
    is_int(init_vite_proxy_port("export default {\n  plugins: [\n" W(
               "    ") "  ],\n  server: { "
                       "proxy: { '/api': 'http://localhost:8001' } },\n};\n"),
           8001, "after init added the plugin: its comment's \"wtproxy:\" is no proxy block");
    int ports[4], built;
    is_int(
        init_vite_proxy_ports("proxy: { '/api': 'http://localhost:3001', '/ws': "
                              "`http://localhost:${process.env.WTPROXY_FRONT_WS}`, "
                              "'/auth': 'http://127.0.0.1:3002', '/x': 'http://localhost:3001' }",
                              ports, 4, &built),
        2, "each literal port once, the built one left out: what doctor judges");
    ok(ports[0] == 3001 && ports[1] == 3002 && built, "in order, and the built URL said");
}

/* The Vite config text with the plugin's entry (W: its two lines at
 * that indent), or why it is left alone. */
static char *vite_edit(const char *text)
{
    static char why_buf[256];
    struct init_text t = {0};
    const char *why = NULL;
    if (edit_config(text, &t, &why) < 0) {
        free(t.s);
        snprintf(why_buf, sizeof why_buf, "why: %s", why);
        return strdup(why_buf);
    }
    return t.s;
}

static void test_vite_plugin(void)
{
    static const struct {
        const char *in, *out, *what;
    } cases[] = {
        {"export default defineConfig({\n  plugins: [react()],\n})\n",
         "export default defineConfig({\n  plugins: [\n    react(),\n" W("    ") "  ],\n})\n",
         "a one-line array: one entry a line"},
        {"export default {\n  plugins: [\n    react(), // ours: ] }\n  ],\n};\n",
         "export default {\n  plugins: [\n    react(), // ours: ] }\n" W("    ") "  ],\n};\n",
         "a multi-line array: last, a comment with brackets kept"},
        {"export default {\n  plugins: [\n    a(),\n    b({ x: '}' })\n  ],\n}\n",
         "export default {\n  plugins: [\n    a(),\n    b({ x: '}' }),\n" W("    ") "  ],\n}\n",
         "a comma after the last entry"},
        {"export default { plugins: [] };\n", "export default { plugins: [\n" W("  ") "] };\n",
         "an empty array"},
        {"export default { server: { port: 5173 } };\n",
         "export default {\n  plugins: [\n" W("    ") "  ],\n  server: { port: 5173 } };\n",
         "a one-line object without plugins"},
        {"module.exports = {\n\troot: /[}\\]]/.source,\n};\n",
         "module.exports = {\n\tplugins: [\n" W("\t\t") "\t],\n\troot: /[}\\]]/.source,\n};\n",
         "CommonJS, tabs, a regex with brackets"},
        {"export default {};\n", "export default {\n  plugins: [\n" W("    ") "  ],\n};\n",
         "an empty object"},
        {"export default defineConfig(({ mode }) => ({ plugins: [] }));\n",
         "why: it exports no object literal (a function, a variable)", "a config function"},
        {"const c = { plugins: [] };\nexport default c;\n",
         "why: it exports no object literal (a function, a variable)", "a variable"},
        {"export default { plugins: mine() };\n", "why: its `plugins` is not a literal array",
         "plugins built in code"},
        {"export default { ...base, server: {} };\n",
         "why: it has no `plugins` key but a spread (`...`) that may set one", "a spread"},
        {"export default { build: { rollupOptions: { plugins: [] } } };\n",
         "export default {\n  plugins: [\n" W(
             "    ") "  ],\n  build: { rollupOptions: { plugins: [] "
                     "} } };\n",
         "a nested plugins key is not Vite's"},
        {"export default { a: 'unclosed };\n",
         "why: its exported object does not close as init reads it", "a string that never ends"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = vite_edit(cases[i].in);
        is_str(got, cases[i].out, "vite config: %s", cases[i].what);
        free(got);
    }
}

/* An Astro config's text with the entry in vite.plugins, or why not. */
static char *astro_edit(const char *text)
{
    static char why_buf[256];
    struct init_text t = {0};
    const char *why = NULL;
    if (init_astro_config_edit(text, &t, &why) < 0) {
        free(t.s);
        snprintf(why_buf, sizeof why_buf, "why: %s", why);
        return strdup(why_buf);
    }
    return t.s;
}

static void test_astro_plugin(void)
{
    static const struct {
        const char *in, *out, *what;
    } cases[] = {
        {"export default defineConfig({\n  output: 'server',\n});\n",
         "export default defineConfig({\n  vite: {\n    plugins: [\n" W(
             "      ") "    ],\n  },\n"
                       "  output: 'server',\n});\n",
         "no vite key: one, with plugins"},
        {"export default defineConfig({\n  vite: {\n    server: { port: 1 },\n  },\n});\n",
         "export default defineConfig({\n  vite: {\n    plugins: [\n" W(
             "      ") "    ],\n"
                       "    server: { port: 1 },\n  },\n});\n",
         "a vite key without plugins"},
        {"export default defineConfig({\n  vite: {\n    plugins: [tailwind()],\n  },\n});\n",
         "export default defineConfig({\n  vite: {\n    plugins: [\n      tailwind(),\n" W(
             "      ") "    ],\n  },\n});\n",
         "vite.plugins: the entry last"},
        {"export default defineConfig({\n  integrations: [{ vite: 1 }],\n  vite: "
         "viteConfig,\n});\n",
         "why: its `vite` is not an object literal", "vite built in code"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = astro_edit(cases[i].in);
        is_str(got, cases[i].out, "astro config: %s", cases[i].what);
        free(got);
    }
}

/* Which config file a vite command names: Vite's flags only, never the
 * next command's, and nothing quoted or built. */
static void test_vite_config_flag(void)
{
    static const struct {
        const char *cmd, *want;
    } cases[] = {
        {"vite --config web/vite.config.ts --port 8490", "web/vite.config.ts"},
        {"node_modules/.bin/vite -c web/v.mjs", "web/v.mjs"},
        {"vite --config=web/vite.config.ts", "web/vite.config.ts"},
        {"cd web && ../node_modules/.bin/vite build --config x.mjs", "x.mjs"},
        {"react-router dev --config app/vite.config.ts", "app/vite.config.ts"},
        {"vite --port 1 && tsc --config tsconfig.json", NULL},
        {"tsc -c x.json && vite", NULL},
        {"vite --config \"web/vite.config.ts\"", NULL},
        {"vite --config $CONFIG", NULL},
        {"vitest --config web/vitest.config.ts", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[64] = "";
        int r = init_vite_config_flag(cases[i].cmd, out, sizeof out);
        is_str(r ? out : NULL, cases[i].want, "%s", cases[i].cmd);
    }
}

/* wtproxy's reporter in a Playwright config's reporters: added beside
 * the defaults, a name, or an array; guarded by the config's own module
 * system; left to a note when built in code. */
static void test_pw_reporter(void)
{
#define CJS_ENTRY                                                                                  \
    "...(() => { try { require.resolve('wtproxy-whoami/playwright'); return "                      \
    "[['wtproxy-whoami/playwright']]; } catch { return []; } })()"
#define ESM_ENTRY                                                                                  \
    "...(() => { try { import.meta.resolve('wtproxy-whoami/playwright'); return "                  \
    "[['wtproxy-whoami/playwright']]; } catch { return []; } })()"
    static const struct {
        const char *file, *in, *out, *what;
    } cases[] = {
        {"playwright.config.mjs", "export default defineConfig({\n  reporter: 'html',\n});\n",
         "export default defineConfig({\n  reporter: [['html'], " ESM_ENTRY "],\n});\n",
         "one reporter by name, an ES module"},
        {"playwright.config.cjs",
         "module.exports = {\n  reporter: [['list'], ['json', { outputFile: 'r.json' }]],\n};\n",
         "module.exports = {\n  reporter: [['list'], ['json', { outputFile: 'r.json' }], " CJS_ENTRY
         "],\n};\n",
         "an array, CommonJS"},
        {"playwright.config.mjs", "export default {\n  reporter: [\n    ['list'],\n  ],\n};\n",
         "export default {\n  reporter: [\n    ['list'], " ESM_ENTRY "\n  ],\n};\n",
         "a multi-line array whose last entry has a comma"},
        {"playwright.config.mjs", "export default { testDir: 'e2e' };\n",
         "export default { reporter: [[process.env.CI ? 'dot' : 'list'], " ESM_ENTRY
         "], testDir: 'e2e' };\n",
         "none, a one-line object: the defaults and it"},
        {"playwright.config.mjs",
         "export default {\n  use: { reporter: 'x' },\n  testMatch: /.*\\.e2e\\.ts/,\n};\n", NULL,
         "a nested key of that name is not the config's: added at the top"},
        {"playwright.config.mjs",
         "export default {\n  reporter: process.env.CI ? 'dot' : 'list',\n};\n", "",
         "built in code: a note"},
        {"playwright.config.mjs",
         "export default {\n  reporter: [['wtproxy-whoami/playwright']],\n};\n", "",
         "there already"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        static struct init_plan p;
        struct init_text t = {0};
        memset(&p, 0, sizeof p);
        p.dir = "/nonexistent";
        snprintf(p.app.pw.file, sizeof p.app.pw.file, "%s", cases[i].file);
        p.notes = json_array();
        int r = init_pw_reporter(&p, cases[i].in, &t);
        if (cases[i].out && !cases[i].out[0])
            is_int(r, 0, "%s: left as it is", cases[i].what);
        else if (cases[i].out)
            is_str(r == 1 ? t.s : NULL, cases[i].out, "%s", cases[i].what);
        else
            ok(r == 1 && strstr(t.s, "  reporter: [[process.env.CI ? 'dot' : 'list'], " ESM_ENTRY
                                     "],\n  use: { reporter: 'x' }"),
               "%s", cases[i].what);
        free(t.s);
        json_decref(p.notes);
    }
}

int main(void)
{
    test_middleware_spot();
    test_edit_command();
    test_block_end();
    test_literal_port();
    test_vite_proxy_port();
    test_vite_config_flag();
    test_pw_reporter();
    test_run_front();
    test_config_python();
    test_framework_of();
    test_flask_flags();
    test_gunicorn_start();
    test_wrap_spot();
    test_runs_with_reload();
    test_vite_plugin();
    test_astro_plugin();
    return done_testing();
}
