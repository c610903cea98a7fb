/* test_config_file.c - the settings' sources (proxy/config_file.c,
 * config_args.c): the config file, the shipped conf/wtproxy.conf (in step
 * with proxy_limits.h and --help), `wtproxy serve` flags and
 * $WTPROXY_CONFIG, and the --help text. Includes the .c files to reach the
 * key table.
 * Usage: test_config_file [PATH/TO/conf/wtproxy.conf] */
#include "../../proxy/config.c"
#include "../../proxy/config_args.c"
#include "../../proxy/config_file.c"
#include "../../proxy/config_value.c"

#include <stdlib.h>
#include <unistd.h>

#include "tap.h"

static char err[1024];

/* Write content to a new temporary file; its name goes to path. */
static void write_file(char *path, size_t len, const char *content)
{
    int fd;

    snprintf(path, len, "/tmp/wtp-test-config-XXXXXX");
    fd = mkstemp(path);
    if (fd < 0 || write(fd, content, strlen(content)) != (ssize_t)strlen(content)) {
        perror("test_config: temporary file");
        exit(1);
    }
    close(fd);
}

/* The first key whose value differs between a and b, "nlisten"/"listen"
 * for the listener lists, or NULL when they agree (config_path aside). */
static const char *first_difference(const struct proxy_config *a, const struct proxy_config *b)
{
    char va[512], vb[512];

    if (a->nlisten != b->nlisten)
        return "nlisten";
    for (int i = 0; i < a->nlisten; i++)
        if (a->listen[i].port != b->listen[i].port || strcmp(a->listen[i].host, b->listen[i].host))
            return "listen";
    for (size_t i = 0; i < NKEYS; i++) {
        proxy_config_format_value(&keys[i], a, va, sizeof va);
        proxy_config_format_value(&keys[i], b, vb, sizeof vb);
        if (strcmp(va, vb) != 0)
            return keys[i].name;
    }
    return NULL;
}

static void test_file(void)
{
    struct proxy_config c;
    char path[64], want[512], line[MAX_LINE + 2];
    int rc;

    write_file(path, sizeof path,
               "# a comment\n"
               "\n"
               "   head_timeout   =   3s   \n"
               "max_head_size=16k # trailing comment\n"
               "\t# indented comment\n"
               "listen = 9000\r\n"
               "listen = 127.0.0.1:9001\n");
    proxy_config_defaults(&c);
    rc = proxy_config_load_file(&c, path, err, sizeof err);
    is_int(rc, 0, "file with comments, blanks, spaces and CRLF loads: %s", rc ? err : "");
    is_int(c.head_timeout_ms, 3000, "  head_timeout = 3s");
    is_int((long long)c.max_head_size, 16384, "  trailing comment cut");
    is_int(c.nlisten, 2, "  the file's listen lines replace the default");
    is_int(c.listen[0].port, 9000, "  first listener");
    is_str(c.listen[1].host, "127.0.0.1", "  second listener appended");
    is_str(c.config_path, path, "  config_path recorded");
    unlink(path);

    write_file(path, sizeof path, "backend = localhost:3000#x\n");
    is_int(proxy_config_load_file(&c, path, err, sizeof err), -1,
           "a hash inside a value is not a comment");
    unlink(path);

    write_file(path, sizeof path, "head_timeout = 1s\n\nfoo = 1\n");
    is_int(proxy_config_load_file(&c, path, err, sizeof err), -1, "unknown key rejected");
    snprintf(want, sizeof want, "%s:3: unknown key \"foo\" (wtproxy serve --help lists the keys)",
             path);
    is_str(err, want, "  FILE:LINE: unknown key");
    unlink(path);

    write_file(path, sizeof path, "# ok\nhead_timeout = 10x\n");
    is_int(proxy_config_load_file(&c, path, err, sizeof err), -1, "bad value rejected");
    snprintf(want, sizeof want, "%s:2: head_timeout: \"10x\" is not a duration", path);
    ok(strncmp(err, want, strlen(want)) == 0, "  FILE:LINE: key: value: %s", err);
    unlink(path);

    write_file(path, sizeof path, "head_timeout 10s\n");
    is_int(proxy_config_load_file(&c, path, err, sizeof err), -1, "line without '=' rejected");
    has_str(err, ":1: expected \"key = value\"", "  and says what a line looks like");
    unlink(path);

    write_file(path, sizeof path, "= 10s\n");
    is_int(proxy_config_load_file(&c, path, err, sizeof err), -1, "line without key rejected");
    unlink(path);

    memset(line, '#', MAX_LINE);
    memcpy(line + MAX_LINE, "\n", 2);
    write_file(path, sizeof path, line);
    is_int(proxy_config_load_file(&c, path, err, sizeof err), 0, "a %d-byte line is fine",
           MAX_LINE);
    unlink(path);
    memset(line, '#', MAX_LINE + 1);
    line[MAX_LINE + 1] = '\0';
    write_file(path, sizeof path, line);
    is_int(proxy_config_load_file(&c, path, err, sizeof err), -1, "a longer one is not");
    snprintf(want, sizeof want, "%s:1: line is longer than 4096 bytes", path);
    is_str(err, want, "  and the message says so");
    unlink(path);

    write_file(path, sizeof path, "");
    proxy_config_defaults(&c);
    is_int(proxy_config_load_file(&c, path, err, sizeof err), 0, "empty file loads");
    is_int(c.nlisten, 1, "  and keeps the default listener");
    unlink(path);

    is_int(proxy_config_load_file(&c, path, err, sizeof err), -1, "missing file rejected");
    snprintf(want, sizeof want, "cannot read config file %s: %s", path, strerror(ENOENT));
    is_str(err, want, "  naming the path and the reason");
}

/* conf/wtproxy.conf documents every key at its default: as shipped it
 * changes nothing, and with its "# key = value" lines uncommented it still
 * changes nothing. Each key's help line is there, as --help prints it. */
static void test_shipped_conf(const char *conf)
{
    struct proxy_config c, d;
    char text[16384], path[64], want[600], *p;
    size_t n = 0;
    int nkeys = 0, rc;
    FILE *f = fopen(conf, "r");

    if (!ok(f != NULL, "%s opens", conf))
        return;
    n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    ok(n < sizeof text - 1, "  and fits the test's buffer");
    proxy_config_defaults(&d);
    proxy_config_defaults(&c);
    rc = proxy_config_load_file(&c, conf, err, sizeof err);
    is_int(rc, 0, "  it loads %s", rc ? err : "");
    is_str(first_difference(&c, &d), NULL, "  as shipped it is the defaults");
    for (size_t i = 0; i < NKEYS; i++) {
        char def[96];
        proxy_config_format_value(&keys[i], &d, def, sizeof def);
        snprintf(want, sizeof want, "\n# %s =%s%s\n", keys[i].name, def[0] ? " " : "", def);
        ok(strstr(text, want) && !strstr(strstr(text, want) + 1, want),
           "  documents %s once, at its default %s", keys[i].name, def[0] ? def : "(none)");
        snprintf(want, sizeof want, "\n# %s\n", keys[i].help);
        has_str(text, want, "  with its --help line");
    }
    for (p = text; (p = strstr(p, "\n# ")) != NULL;) { /* "# key =" -> "key =" */
        char key[64];
        size_t len = strspn(p + 3, "abcdefghijklmnopqrstuvwxyz_");
        snprintf(key, sizeof key, "%.*s", (int)len, p + 3);
        if (proxy_config_find_key(key) && strncmp(p + 3 + len, " =", 2) == 0) {
            memmove(p + 1, p + 3, strlen(p + 3) + 1);
            nkeys++;
        }
        p++;
    }
    is_int(nkeys, NKEYS, "%d settings uncommented", nkeys);
    write_file(path, sizeof path, text);
    proxy_config_defaults(&c);
    rc = proxy_config_load_file(&c, path, err, sizeof err);
    is_int(rc, 0, "uncommented, it loads %s", rc ? err : "");
    is_str(first_difference(&c, &d), NULL, "  and is still the defaults");
    unlink(path);
}

/* Run proxy_config_from_args on a NULL-terminated argument list. */
static int run(struct proxy_config *c, char **argv)
{
    int argc = 0;

    while (argv[argc])
        argc++;
    return proxy_config_from_args(c, argc, argv, err, sizeof err);
}

#define ARGS(...) run(&c, (char *[]){__VA_ARGS__, NULL})

static void test_args(void)
{
    struct proxy_config c, d;
    char file[64], other[64], conf_flag[80];

    unsetenv("WTPROXY_CONFIG");
    proxy_config_defaults(&d);
    memset(&c, 0x5a, sizeof c);
    is_int(run(&c, (char *[]){NULL}), 0, "no flags");
    is_str(first_difference(&c, &d), NULL, "  gives the defaults, whatever c held");
    is_str(c.config_path, "", "  and no config file");
    is_int(ARGS("--head-timeout", "2s"), 0, "--head-timeout 2s");
    is_int(c.head_timeout_ms, 2000, "  sets head_timeout");
    is_int(ARGS("--head-timeout=3s", "--max-head-size", "1k"), 0, "--KEY=VALUE and --KEY VALUE");
    is_int(c.head_timeout_ms, 3000, "  head_timeout");
    is_int((long long)c.max_head_size, 1024, "  max_head_size");
    is_int(ARGS("--pool_size", "0"), 0, "underscores work in flags too");
    is_int(ARGS("--listen", "1", "--listen", "[::1]:2"), 0, "--listen twice");
    is_int(c.nlisten, 2, "  replaces the default, then appends");
    is_int(c.listen[1].port, 2, "  in order");

    write_file(file, sizeof file,
               "head_timeout = 3s\nlisten = 9000\nlisten = 9001\nbackend = localhost:3000\n");
    write_file(other, sizeof other, "head_timeout = 5s\n");
    is_int(ARGS("--head-timeout", "4s", "--config", file), 0, "--config after a flag");
    is_int(c.head_timeout_ms, 4000, "  the flag still wins over the file");
    is_int(c.nlisten, 2, "  the file's listeners");
    is_int(c.listen[1].port, 9001, "  in order");
    is_str(c.backend, "localhost:3000", "  the file's backend");
    is_str(c.config_path, file, "  config_path");
    snprintf(conf_flag, sizeof conf_flag, "--config=%s", file);
    is_int(ARGS("--listen", "7000", conf_flag, "--listen", "7001"), 0, "--listen around --config=");
    is_int(c.nlisten, 2, "  the flags' listeners replace the file's");
    ok(c.listen[0].port == 7000 && c.listen[1].port == 7001, "  7000 and 7001");
    is_int(ARGS("--config", file, "--backend", ""), 0, "--backend \"\"");
    is_str(c.backend, "", "  clears the file's backend");

    setenv("WTPROXY_CONFIG", file, 1);
    is_int(run(&c, (char *[]){NULL}), 0, "$WTPROXY_CONFIG");
    is_int(c.head_timeout_ms, 3000, "  is read");
    is_str(c.config_path, file, "  and recorded");
    is_int(ARGS("--config", other), 0, "--config with $WTPROXY_CONFIG set");
    is_int(c.head_timeout_ms, 5000, "  --config wins");
    setenv("WTPROXY_CONFIG", "", 1);
    is_int(run(&c, (char *[]){NULL}), 0, "empty $WTPROXY_CONFIG");
    is_str(c.config_path, "", "  is ignored");
    setenv("WTPROXY_CONFIG", "/nonexistent/wtproxy.conf", 1);
    is_int(run(&c, (char *[]){NULL}), -1, "$WTPROXY_CONFIG naming a missing file");
    has_str(err,
            "/nonexistent/wtproxy.conf: No such file or directory; $WTPROXY_CONFIG names it: "
            "fix or unset WTPROXY_CONFIG",
            "  says where the name came from, and the fix");
    unsetenv("WTPROXY_CONFIG");

    is_int(ARGS("-h"), 1, "-h asks for help");
    is_int(ARGS("--help"), 1, "--help asks for help");
    is_int(ARGS("--head-timeout", "10x", "--help"), 1, "--help wins over a bad value");
    is_int(ARGS("--foo"), -1, "unknown flag");
    is_str(err, "unknown option \"--foo\" for wtproxy serve (see wtproxy serve --help)",
           "  named, with where to look");
    is_int(ARGS("--foo=1"), -1, "unknown --flag=value");
    has_str(err, "\"--foo\"", "  names the flag alone");
    is_int(ARGS("-x"), -1, "unknown short flag");
    is_int(ARGS("--"), -1, "bare --");
    is_int(ARGS("8000"), -1, "a bare argument");
    has_str(err, "unexpected argument \"8000\"", "  is named");
    is_int(ARGS("--head-timeout"), -1, "flag without its value");
    is_str(err, "option --head-timeout needs a value (DURATION)", "  says what value");
    is_int(ARGS("--head-timeout", "--listen", "1"), -1, "flag followed by a flag");
    has_str(err, "needs a value", "  is a missing value");
    is_int(ARGS("--config"), -1, "--config without a file");
    is_str(err, "option --config needs a value (FILE)", "  says so");
    is_int(ARGS("--head-timeout", "10x"), -1, "bad value in a flag");
    is_str(err, "head_timeout: \"10x\" is not a duration (use e.g. 500ms, 10s, 2m)", "  named");
    is_int(ARGS("--config", file, "--config", other), -1, "--config twice");
    is_int(ARGS("--config", "/nonexistent/x.conf"), -1, "--config naming a missing file");
    has_str(err,
            "cannot read config file /nonexistent/x.conf: No such file or directory; give "
            "--config a readable file",
            "  names it, and the fix");
    unlink(file);
    unlink(other);
}

static void test_usage(void)
{
    char *text = NULL, flag[80], row[256], def[96], want[100];
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    struct proxy_config d;

    proxy_config_defaults(&d);
    proxy_config_usage(f);
    fclose(f);
    has_str(text, "usage: wtproxy serve [--config FILE]", "--help starts with usage");
    has_str(text, "\n  --config FILE ", "--config is listed");
    has_str(text, "\n  -h, --help ", "--help is listed");
    for (size_t i = 0; i < NKEYS; i++) { /* "\n  --head-timeout DURATION   10s   help\n" */
        size_t n = (size_t)snprintf(flag, sizeof flag, "\n  --%s %s ", keys[i].name,
                                    kinds[keys[i].kind].metavar);
        const char *at;
        for (size_t j = 5; j < n && flag[j] != ' '; j++)
            if (flag[j] == '_')
                flag[j] = '-';
        at = strstr(text, flag);
        if (!has_str(text, flag, "--help lists %s", flag + 3))
            continue;
        snprintf(row, sizeof row, "%.*s", (int)strcspn(at + 1, "\n"), at + 1);
        proxy_config_format_value(&keys[i], &d, def, sizeof def);
        snprintf(want, sizeof want, " %s ", def[0] ? def : "none");
        has_str(row, want, "  with its default");
        has_str(row, keys[i].help, "  and its help");
    }
    free(text);
}

int main(int argc, char **argv)
{
    test_file();
    test_shipped_conf(argc > 1 ? argv[1] : "conf/wtproxy.conf");
    test_args();
    test_usage();
    return done_testing();
}
