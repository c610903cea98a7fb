/* test_cli_args.c - cli/args.c, the flags every subcommand parses: the
 * forms of a flag (--NAME VALUE, --NAME=VALUE, switches), what stops the
 * parse (--, a positional argument, --help), the errors people read, and
 * the values (ports, durations, ages) as `wtproxy register`, `run` and
 * `claim` take and print them. */
#include "../../cli/args.c"
#include "../../host/clock.c"

#include "tap.h"

static const char *port, *ttl;
static int json;
static const struct cli_opt opts[] = {
    {"port", &port, NULL}, {"ttl", &ttl, NULL}, {"json", NULL, &json}, {NULL, NULL, NULL}};

/* Parse the NULL-terminated words (argv[0] the command) with opts. */
static int parse(const char *const *words, int *rest, char *err, size_t errlen)
{
    int argc = 0;
    char *argv[16];
    while (words[argc]) {
        argv[argc] = (char *)words[argc];
        argc++;
    }
    port = ttl = NULL;
    json = 0;
    return cli_parse(argc, argv, opts, rest, err, errlen);
}

static void test_parse(void)
{
    char err[256] = "";
    int rest = -1;
    is_int(parse((const char *[]){"ls", "--port", "5000", "--ttl=1m", "--json", NULL}, NULL, err,
                 sizeof err),
           0, "--NAME VALUE, --NAME=VALUE and a switch parse");
    ok(port && strcmp(port, "5000") == 0 && ttl && strcmp(ttl, "1m") == 0 && json,
       "their values are where the table says");
    is_int(parse((const char *[]){"ls", "--json=yes", NULL}, NULL, err, sizeof err), -1,
           "a switch takes no value");
    has_str(err, "unknown option \"--json=yes\"", "... and is named in the error");
    is_int(parse((const char *[]){"ls", "--port", NULL}, NULL, err, sizeof err), -1,
           "a flag without its value is refused");
    is_str(err, "--port needs a value", "... saying which flag");
    is_int(parse((const char *[]){"ls", "--bogus", NULL}, NULL, err, sizeof err), -1,
           "an unknown flag is refused");
    is_int(parse((const char *[]){"ls", "extra", NULL}, NULL, err, sizeof err), -1,
           "no positional argument without rest");
    is_str(err, "unexpected argument \"extra\"", "... naming it");
    is_int(
        parse((const char *[]){"run", "--json", "--help", "--bogus", NULL}, NULL, err, sizeof err),
        1, "--help wins over a later bad flag");
    is_int(parse((const char *[]){"run", "--port", "1", "--", "cmd", "--help", NULL}, &rest, err,
                 sizeof err),
           0, "a --help after -- belongs to the command");
    is_int(rest, 4, "rest is the command after --");
    is_int(parse((const char *[]){"claim", "emu", "--ttl", "1m", NULL}, &rest, err, sizeof err), 0,
           "parsing stops at the first positional argument");
    is_int(rest, 1, "... which rest points at");
    is_int(parse((const char *[]){"claim", "--json", NULL}, &rest, err, sizeof err), 0,
           "no positional argument at all");
    is_int(rest, 2, "... rest is argc");
}

static void test_values(void)
{
    char err[256];
    int p = 0;
    long long ms = 0;
    long n = 0;
    ok(cli_port("port", "65535", &p, err, sizeof err) == 0 && p == 65535, "port 65535");
    ok(cli_port("front", "0", &p, err, sizeof err) < 0, "port 0 is refused");
    is_str(err, "--front \"0\" is not a port (1-65535)", "... naming the flag and the range");
    ok(cli_port("port", "80x", &p, err, sizeof err) < 0, "a port with trailing garbage is refused");
    ok(cli_number("4242", 1, 0x7fffffff, &n) == 0 && n == 4242, "a pid");
    ok(cli_number("-1", 1, 10, &n) < 0 && cli_number("", 1, 10, &n) < 0, "below range, empty");
    ok(cli_duration("ttl", "30s", &ms, err, sizeof err) == 0 && ms == 30000, "30s");
    ok(cli_duration("ttl", "1d", &ms, err, sizeof err) == 0 && ms == 86400000, "1d");
    ok(cli_duration("ttl", "250ms", &ms, err, sizeof err) == 0 && ms == 250, "250ms");
    ok(cli_duration("ttl", "30", &ms, err, sizeof err) < 0,
       "a bare number is refused: a person typing 30 means seconds, the config file ms");
    has_str(err, "e.g. --ttl 30s", "... the error shows the form");
    ok(cli_duration("ttl", "0s", &ms, err, sizeof err) < 0, "a zero duration is refused");
    ok(cli_duration("ttl", "366d", &ms, err, sizeof err) < 0, "more than a year is refused");
}

static void test_age(void)
{
    static const struct {
        long long ms;
        const char *want;
    } cases[] = {{-5000, "0s"},   {59999, "59s"},    {60000, "1m"},    {3599999, "59m"},
                 {3600000, "1h"}, {86399999, "23h"}, {86400000, "1d"}, {10 * 86400000LL, "10d"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[32];
        host_age(cases[i].ms, buf, sizeof buf);
        is_str(buf, cases[i].want, "age of %lld ms", cases[i].ms);
    }
}

int main(void)
{
    test_parse();
    test_values();
    test_age();
    return done_testing();
}
