/* fingerprint.c - `wtproxy fingerprint`: the fingerprint of a tree as
 * wtproxy computes it for the gate, so a person (or the Python package,
 * `python3 -m wtproxy_whoami fingerprint`, which prints the same bytes) can
 * see the hash a server should report and, with --list, why two differ;
 * and, with --unknown-after-start, the fingerprint a server that loads
 * its code itself reports, for a server of a language no middleware
 * covers (Perl, Ruby), which runs it once as it starts. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "host.h"
#include "whoami.h"

struct opts {
    const char *dir;
    const char *inc[WHOAMI_MAX_PATTERNS], *exc[WHOAMI_MAX_PATTERNS];
    size_t n_inc, n_exc;
    int json, list, no_exclude;
    long long after_ns; /* files modified later are type 'u'; 0: none */
    long long pid;      /* --unknown-after-start's, else 0 */
};

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "wtproxy fingerprint: %s \"%s\" (see wtproxy fingerprint --help)\n", what, arg);
    return 2;
}

/* Add pattern v to list (n entries). 0, or 2 with a message. */
static int add_pattern(const char *flag, const char *v, const char **list, size_t *n)
{
    if (!v)
        return usage_error("missing the pattern after", flag);
    size_t len = strlen(v);
    if (len == 0 || len > WHOAMI_PATTERN_MAX)
        return usage_error("a pattern is 1 to 256 bytes, not", v);
    json_t *s = json_string(v);
    json_decref(s);
    if (!s)
        return usage_error("a pattern must be UTF-8:", v);
    if (*n == WHOAMI_MAX_PATTERNS)
        return usage_error("at most 64 patterns each; too many at", v);
    list[(*n)++] = v;
    return 0;
}

/* The number v of flag, 1 to LLONG_MAX, into *out. 0, or 2 with a message. */
static int parse_count(const char *flag, const char *v, long long *out)
{
    if (!v)
        return usage_error("missing the number after", flag);
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || end == v || *end || n <= 0)
        return usage_error("a positive whole number is needed, not", v);
    *out = n;
    return 0;
}

/* 0, the exit status of a usage error, or CLI_HELP. */
static int parse_args(int argc, char **argv, struct opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        int r = 0;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            return CLI_HELP;
        } else if (strcmp(a, "--json") == 0) {
            o->json = 1;
        } else if (strcmp(a, "--list") == 0) {
            o->list = 1;
        } else if (strcmp(a, "--no-exclude") == 0) {
            o->no_exclude = 1;
        } else if (strcmp(a, "--include") == 0) {
            r = add_pattern(a, next, o->inc, &o->n_inc), i++;
        } else if (strcmp(a, "--exclude") == 0) {
            r = add_pattern(a, next, o->exc, &o->n_exc), i++;
        } else if (strcmp(a, "--unknown-after") == 0) {
            r = parse_count(a, next, &o->after_ns), i++;
        } else if (strcmp(a, "--unknown-after-start") == 0) {
            r = parse_count(a, next, &o->pid), i++;
        } else if (a[0] == '-' && a[1]) {
            r = usage_error("unknown option", a);
        } else if (o->dir) {
            r = usage_error("one folder only; extra argument", a);
        } else {
            o->dir = a;
        }
        if (r)
            return r;
    }
    if (o->json && o->list)
        return usage_error("choose one of --json and", "--list");
    if (o->after_ns && o->pid)
        return usage_error("choose one of --unknown-after and", "--unknown-after-start");
    return 0;
}

/* Print path with control bytes and '\' as \xNN, so one record is one line. */
static void print_path(const char *p)
{
    for (const unsigned char *c = (const unsigned char *)p; *c; c++)
        if (*c < 0x20 || *c == 0x7f || *c == '\\')
            printf("\\x%02x", *c);
        else
            putchar(*c);
}

static json_t *str_array(char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static int print_json(const struct whoami_patterns *p, const struct whoami_fp *fp)
{
    json_t *o = json_pack("{ss so so sI ss}", "algorithm", WHOAMI_ALGORITHM, "include",
                          str_array(p->include, p->n_include), "exclude",
                          str_array(p->exclude, p->n_exclude), "files", (json_int_t)fp->n, "hash",
                          fp->hash);
    char *s = o ? json_dumps(o, JSON_ENSURE_ASCII) : NULL;
    json_decref(o);
    if (!s) {
        fprintf(stderr, "wtproxy fingerprint: out of memory printing JSON\n");
        return 1;
    }
    puts(s);
    free(s);
    return 0;
}

static int report(const struct opts *o, const struct whoami_patterns *p, const struct whoami_fp *fp)
{
    if (o->json)
        return print_json(p, fp);
    for (size_t i = 0; o->list && i < fp->n; i++) {
        printf("%c ", fp->file[i].type);
        for (int j = 0; j < 32; j++)
            printf("%02x", fp->file[i].digest[j]);
        putchar(' ');
        print_path(fp->file[i].path);
        putchar('\n');
    }
    printf("%s (%zu file%s)\n", fp->hash, fp->n, fp->n == 1 ? "" : "s");
    return 0;
}

/* The time after which a file's edit is unknown: --unknown-after's, or
 * the start of --unknown-after-start's process. 0, or 1 with a message. */
static int unknown_after(struct opts *o)
{
    if (!o->pid)
        return 0;
    if (o->pid > INT_MAX || !(o->after_ns = host_pid_started_ns((pid_t)o->pid))) {
        fprintf(stderr,
                "wtproxy fingerprint: no process %lld runs, so its start is unknown: "
                "--unknown-after-start takes the pid of the server that runs it ($$ in Perl, "
                "Ruby or a shell)\n",
                o->pid);
        return 1;
    }
    return 0;
}

int cli_fingerprint_main(int argc, char **argv)
{
    struct opts o = {0};
    int r = parse_args(argc, argv, &o);
    if (r || (r = unknown_after(&o)))
        return r;
    /* The Python middleware's defaults (defaults.c), each list replaced
     * as a whole by the flags. */
    const struct whoami_patterns *d = whoami_default_patterns();
    struct whoami_patterns p = {
        .include = o.n_inc ? (char **)o.inc : d->include,
        .n_include = o.n_inc ? o.n_inc : d->n_include,
        .exclude = o.n_exc || o.no_exclude ? (char **)o.exc : d->exclude,
        .n_exclude = o.n_exc || o.no_exclude ? o.n_exc : d->n_exclude,
    };
    struct whoami_fp fp;
    char err[PATH_MAX + 256];
    if (whoami_fp_compute(o.dir ? o.dir : ".", &p, NULL, &fp, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy fingerprint: %s\n", err);
        return 1;
    }
    if (o.after_ns && whoami_fp_unknown_after(&fp, o.after_ns) < 0) {
        fprintf(stderr, "wtproxy fingerprint: SHA-256 failed (out of memory?)\n");
        whoami_fp_free(&fp);
        return 1;
    }
    r = report(&o, &p, &fp);
    whoami_fp_free(&fp);
    return r;
}
