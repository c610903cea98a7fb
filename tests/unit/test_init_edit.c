/* test_init_edit.c - cli/init_edit.c and init_detect.c, the text rules of
 * `wtproxy init`: which `MIDDLEWARE = [` lines it edits and with what
 * indent, which webServer commands it rewrites (a plain string) and which
 * it leaves to a person (an expression, a template), the end of a config
 * block with quotes in its comments, and the literal ports it reads. */
#include "../../cli/args.c"
#include "../../cli/init_detect.c"
#include "../../cli/init_edit.c"

#include "tap.h"

static void test_middleware_spot(void)
{
    char indent[64];
    const char *four = "X = 1\nMIDDLEWARE = [\n    'a.B',\n]\n";
    is_int(middleware_spot(four, indent, sizeof indent), (long)strlen("X = 1\nMIDDLEWARE = [\n"),
           "after the `MIDDLEWARE = [` line");
    is_str(indent, "    ", "indented as the next entry");
    is_int(middleware_spot("MIDDLEWARE=[ # ours\n\t'a',\n]\n", indent, sizeof indent),
           (long)strlen("MIDDLEWARE=[ # ours\n"), "a trailing comment and no blanks are fine");
    is_str(indent, "\t", "a tab indent is kept");
    ok(middleware_spot("MIDDLEWARE = [\n]\n", indent, sizeof indent) > 0 &&
           strcmp(indent, "    ") == 0,
       "an empty list: four spaces");
    is_int(middleware_spot("MIDDLEWARE = ['a', 'b']\n", indent, sizeof indent), -1,
           "entries on the same line: not edited");
    is_int(middleware_spot("MIDDLEWARE += [\n    'a',\n]\n", indent, sizeof indent), -1,
           "+= is not the assignment");
    is_int(middleware_spot("MIDDLEWARE_CLASSES = [\n    'a',\n]\n", indent, sizeof indent), -1,
           "another name that starts the same is not it");
    is_int(middleware_spot("    MIDDLEWARE = [\n", indent, sizeof indent), -1,
           "an indented one (inside an if) is not edited");
    is_int(middleware_spot("MIDDLEWARE = list(BASE)\n", indent, sizeof indent), -1,
           "a list built in code is not edited");
}

/* edit_command on text with start "S {port}": the result, or NULL. */
static char *command_of(const char *text)
{
    static struct init_plan p;
    struct text t = {0};
    snprintf(p.app.start, sizeof p.app.start, "S {port}");
    if (!edit_command(&p, text, &t)) {
        free(t.s);
        return NULL;
    }
    return t.s;
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
}

static void test_block_end(void)
{
    const char *cfg = "webServer: {\n  // it's the dev server: 'npm' {\n  command: 'x}',\n"
                      "  /* a } here */ url: `y{`,\n}, after";
    const char *end = block_end(cfg);
    ok(end && strcmp(end, ", after") == 0, "comments and strings hold no braces or quotes");
    ok(!block_end("webServer: { command: 'x'"), "an unclosed block: NULL");
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

int main(void)
{
    test_middleware_spot();
    test_edit_command();
    test_block_end();
    test_literal_port();
    return done_testing();
}
