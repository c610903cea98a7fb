/* test_wtfile.c - proxy/wtfile.c: today's file without sections is one
 * unnamed service with the same meaning; `[service NAME]` sections, their
 * keys and the start order that `after` gives; and each bad file refused
 * with its path, its line and the fix. Given conf/wtproxy-file.example, it
 * must parse, and so must its services example (its `#| ` lines). The
 * file's key (what tells the dashboard's cache to read it again) follows
 * each rewrite, and is all zero when there is no file. */
#include "../../proxy/wtfile.c"

#include "tap.h"

static char dir[] = "/tmp/wtp-wtfile-XXXXXX";
static char err[2048];
static struct wtfile f;

static int parse(const char *text)
{
    char path[64];
    snprintf(path, sizeof path, "%s/.wtproxy", dir);
    FILE *o = fopen(path, "w");
    fputs(text, o);
    fclose(o);
    err[0] = '\0';
    return wtfile_read(dir, &f, err, sizeof err);
}

static void test_one_service(void)
{
    char none[] = "/tmp/wtp-wtfile-none-XXXXXX";
    is_int(wtfile_read(mkdtemp(none), &f, err, sizeof err), 1, "no .wtproxy: 1");
    rmdir(none);
    is_int(parse("# the dev server\nstart = ./serve {port}  # comment\nfront = 8001\n"
                 "idle_stop = 2s\n"),
           0, "a file without sections");
    is_int(f.n, 1, "  is one service");
    is_str(f.svc[0].name, "", "  unnamed");
    is_str(f.svc[0].start, "./serve {port}", "  its start, comment cut");
    is_int(f.svc[0].front, 8001, "  its front");
    ok(f.svc[0].idle_ms == 2000, "  its idle_stop");
    is_int(parse("start = a#b {port}\n"), 0, "'#' inside a word is kept");
    is_str(f.svc[0].start, "a#b {port}", "  in the command");
    is_int(f.svc[0].front, 8000, "  front defaults to 8000");
    ok(f.svc[0].idle_ms == 30ULL * 60 * 1000, "  idle_stop to 30m");
}

static void test_sections(void)
{
    int order[WTFILE_MAX_SERVICES];
    is_int(parse("[service db]\nstart = d {port}\nfront = 8002\n"
                 "[service web]\nstart = w {port}\nafter = api\n"
                 "[service api]\nstart = a {port}\nfront = 8001\nready = /api/health\n"
                 "after = db\nidle_stop = 0\n"),
           0, "three sections");
    is_int(f.n, 3, "  three services");
    const struct wtfile_service *web = wtfile_by_name(&f, "web");
    const struct wtfile_service *api = wtfile_by_front(&f, 8001);
    ok(web && web->front == 8000, "  web on the default front");
    ok(api && strcmp(api->name, "api") == 0, "  api found by its front");
    is_str(api->ready, "/api/health", "  api's ready path");
    ok(api->idle_ms == 0, "  idle_stop 0: never");
    is_int(wtfile_start_order(&f, (int)(web - f.svc), order), 3, "web needs all three");
    ok(strcmp(f.svc[order[0]].name, "db") == 0 && strcmp(f.svc[order[1]].name, "api") == 0 &&
           strcmp(f.svc[order[2]].name, "web") == 0,
       "  in the order db, api, web");
    is_int(wtfile_start_order(&f, 0, order), 1, "db needs only itself");
    char var[64];
    wtfile_front_var("my-api_2", var, sizeof var);
    is_str(var, "WTPROXY_FRONT_MY_API_2", "the front variable: upper case, '-' as '_'");
}

static void refused(const char *text, const char *line, const char *what, const char *why)
{
    is_int(parse(text), -1, "%s: refused", why);
    has_str(err, line, "  names the file and line");
    has_str(err, what, "  says what is wrong");
}

static void test_bad(void)
{
    refused("[service a]\nstart = x\nafter = b\n[service b]\nstart = y\nfront = 1\nafter = a\n",
            ".wtproxy:3:", "`after` makes a cycle: a -> b -> a", "a cycle");
    refused("[service a]\nstart = x\nafter = a\n", ".wtproxy:3:", "cycle: a -> a", "self");
    refused("[service a]\nstart = x\nfront = 9000\n[service b]\nstart = y\nfront = 9000\n",
            ".wtproxy:6:", "services `a` and `b` both serve front 9000", "two on one front");
    refused("[service a]\nstart = x\n[service b]\nstart = y\n",
            ".wtproxy:3:", "both serve front 8000", "two on the default front");
    refused("[service a]\nstart = x\nafter = nope\n",
            ".wtproxy:3:", "`after` names `nope`, which this file does not declare",
            "unknown after");
    refused("[service a]\nstart = x\n[service a]\nstart = y\nfront = 2\n",
            ".wtproxy:3:", "service `a` is declared twice (first at line 1)", "duplicate");
    refused("[service Bad!]\nstart = x\n", ".wtproxy:1:", "is not 1-32 of a-z", "invalid name");
    refused("[svc a]\n", ".wtproxy:1:", "a section is written `[service NAME]`", "bad section");
    refused("start = x\n[service a]\nstart = y\n", ".wtproxy:1:", "belongs to no service",
            "keys before sections");
    refused("[service a]\nfront = 9\n", ".wtproxy:1:", "has no `start", "no start");
    refused("start = x\nidle_stop = 30\n", ".wtproxy:2:", "bad or unknown `idle_stop`",
            "a bare duration");
    refused("start = x\nready = health\n", ".wtproxy:2:", "bad or unknown `ready`",
            "a relative ready path");
    refused("start = x\nport = 3\n", ".wtproxy:2:", "bad or unknown `port`", "unknown key");
    refused("just words\n", ".wtproxy:1:", "not `key = value`", "not a key");
    refused("", ".wtproxy:1:", "declares no server", "empty");
}

/* The documented file as it is, then its services example uncommented. */
static void test_example(const char *path)
{
    char text[WTFILE_MAX_BYTES], services[WTFILE_MAX_BYTES] = "", line[1024];
    FILE *in = fopen(path, "r");
    size_t n = in ? fread(text, 1, sizeof text - 1, in) : 0;
    ok(in != NULL, "%s can be read", path);
    text[n] = '\0';
    if (in)
        fclose(in);
    is_int(parse(text), 0, "the example file parses: %s", err);
    ok(f.n == 1 && f.svc[0].name[0] == '\0', "  one unnamed service");
    for (char *l = text, *next; l; l = next) {
        if ((next = strchr(l, '\n')))
            *next++ = '\0';
        if (strncmp(l, "#|", 2) == 0) {
            snprintf(line, sizeof line, "%s\n", l[2] == ' ' ? l + 3 : l + 2);
            strncat(services, line, sizeof services - strlen(services) - 1);
        }
    }
    is_int(parse(services), 0, "its services example parses: %s", err);
    const struct wtfile_service *web = wtfile_by_name(&f, "web");
    ok(f.n == 2 && web && web->nafter == 1 && strcmp(f.svc[web->after[0]].name, "api") == 0,
       "  api, and web after api");
}

static void test_key(void)
{
    struct wtfile_key k, zero = {0};
    char none[] = "/tmp/wtp-wtfile-nokey-XXXXXX";
    wtfile_key(mkdtemp(none), &k);
    ok(wtfile_key_same(&k, &zero), "no .wtproxy: the key is all zero");
    rmdir(none);
    is_int(parse("start = a {port}\n"), 0, "a file");
    wtfile_key(dir, &k);
    ok(!wtfile_key_same(&k, &zero), "  has a key");
    ok(wtfile_key_same(&k, &f.key), "  the one read has the same");
    struct wtfile_key before = k;
    wtfile_key(dir, &k);
    ok(wtfile_key_same(&k, &before), "  untouched: the same key");
    is_int(parse("start = a longer command {port}\n"), 0, "rewritten");
    wtfile_key(dir, &k);
    ok(!wtfile_key_same(&k, &before), "  a new key");
    ok(wtfile_key_same(&k, &f.key), "  as read");
}

int main(int argc, char **argv)
{
    if (!mkdtemp(dir))
        return 1;
    test_one_service();
    test_sections();
    test_bad();
    test_key();
    if (argc > 1)
        test_example(argv[1]);
    char path[64];
    snprintf(path, sizeof path, "%s/.wtproxy", dir);
    unlink(path);
    rmdir(dir);
    return done_testing();
}
