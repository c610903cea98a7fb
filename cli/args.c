/* args.c - the flags every subcommand parses the same way (--NAME VALUE,
 * --NAME=VALUE, switches), the values they share (ports, durations,
 * numbers) and the one age format people read ("5s", "3m", "2h", "4d"). */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Match argv[*i] against opts and consume its value. Returns 0, or -1
 * with err for an unknown flag or a missing value. */
static int take_opt(int argc, char **argv, int *i, const struct cli_opt *opts, char *err,
                    size_t errlen)
{
    const char *arg = argv[*i] + 2, *eq = strchr(arg, '=');
    size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    for (const struct cli_opt *o = opts; o->name; o++) {
        if (strlen(o->name) != n || strncmp(o->name, arg, n) != 0)
            continue;
        if (!o->val) {
            if (eq)
                break; /* a switch takes no value */
            *o->on = 1;
            return 0;
        }
        if (eq) {
            *o->val = eq + 1;
        } else if (*i + 1 < argc) {
            *o->val = argv[++*i];
        } else {
            snprintf(err, errlen, "--%s needs a value", o->name);
            return -1;
        }
        return 0;
    }
    snprintf(err, errlen, "unknown option \"%s\"", argv[*i]);
    return -1;
}

int cli_parse(int argc, char **argv, const struct cli_opt *opts, int *rest, char *err,
              size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return 1;
        if (rest && strcmp(a, "--") == 0) {
            *rest = i + 1;
            return 0;
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            if (rest) {
                *rest = i;
                return 0;
            }
            snprintf(err, errlen, "unexpected argument \"%s\"", a);
            return -1;
        }
        if (take_opt(argc, argv, &i, opts, err, errlen) < 0)
            return -1;
    }
    if (rest)
        *rest = argc;
    return 0;
}

int cli_number(const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < lo || n > hi)
        return -1;
    *out = n;
    return 0;
}

int cli_port(const char *flag, const char *v, int *port, char *err, size_t errlen)
{
    long n;
    if (cli_number(v, 1, 65535, &n) < 0) {
        snprintf(err, errlen, "--%s \"%s\" is not a port (1-65535)", flag, v);
        return -1;
    }
    *port = (int)n;
    return 0;
}

/* A TTL: a number with a unit (ms, s, m, h, d). A bare number is refused:
 * the config file reads it as ms, a person typing --ttl 30 means seconds. */
int cli_duration(const char *flag, const char *v, long long *ms, char *err, size_t errlen)
{
    static const struct {
        const char *unit;
        long long ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    for (size_t i = 0; !errno && end != v && n > 0 && i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].unit) == 0 && n <= 365LL * 86400000 / units[i].ms) {
            *ms = n * units[i].ms;
            return 0;
        }
    }
    snprintf(err, errlen,
             "--%s \"%s\" is not a duration: give a number and a unit, "
             "e.g. --%s 30s, 10m, 2h, 1d",
             flag, v, flag);
    return -1;
}
