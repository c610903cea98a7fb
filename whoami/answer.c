/* answer.c - parse and check a backend's /__whoami answer (PROTOCOL.md,
 * section 1). The body is untrusted input from any process that holds a
 * port: every field is checked for type, form and size before anything is
 * copied, and the first failure is reported by the field's name. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "whoami.h"

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The integer member key of o, in [min, max]. 0 or -1 with err. */
static int get_int(json_t *o, const char *key, const char *name, long long min, long long max,
                   long long *out, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        return bad(err, errlen, "%s is missing or not an integer", name);
    *out = json_integer_value(v);
    if (*out < min || *out > max)
        return bad(err, errlen, "%s is %lld, not from %lld to %lld", name, *out, min, max);
    return 0;
}

/* The string v (a member or an element), 1 to max bytes, no NUL. NULL
 * with err. */
static const char *get_str(json_t *v, const char *name, size_t max, char *err, size_t errlen)
{
    if (!json_is_string(v))
        return bad(err, errlen, "%s is missing or not a string", name), NULL;
    size_t n = json_string_length(v);
    const char *s = json_string_value(v);
    if (n == 0 || n > max || strlen(s) != n)
        return bad(err, errlen, "%s is empty, longer than %zu bytes, or holds a NUL", name, max),
               NULL;
    return s;
}

static int digits(const char *s, int n, int *out)
{
    *out = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        *out = *out * 10 + (s[i] - '0');
    }
    return 0;
}

/* RFC 3339 in UTC, "YYYY-MM-DDTHH:MM:SS[.d{1,9}]Z", into unix ms. */
static int parse_time(const char *s, long long *ms)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, mo, d, h, mi, sec, frac = 0, fdig = 0;
    size_t n = strlen(s);
    if (n < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
        digits(s, 4, &y) || digits(s + 5, 2, &mo) || digits(s + 8, 2, &d) ||
        digits(s + 11, 2, &h) || digits(s + 14, 2, &mi) || digits(s + 17, 2, &sec))
        return -1;
    const char *p = s + 19;
    if (*p == '.') {
        while (p[1 + fdig] >= '0' && p[1 + fdig] <= '9' && fdig < 10)
            fdig++;
        if (fdig < 1 || fdig > 9)
            return -1;
        digits(p + 1, fdig < 3 ? fdig : 3, &frac);
        for (int i = fdig; i < 3; i++)
            frac *= 10;
        p += 1 + fdig;
    }
    if (strcmp(p, "Z") != 0 || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
        (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))) || h > 23 ||
        mi > 59 || sec > 60)
        return -1;
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = sec};
    *ms = (long long)timegm(&tm) * 1000 + frac;
    return 0;
}

static int is_hash(const char *s)
{
    if (strncmp(s, "sha256:", 7) != 0 || strlen(s) != 71)
        return 0;
    for (int i = 7; i < 71; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

/* fingerprint.<key>: an array of 0 to WHOAMI_MAX_PATTERNS patterns, copied
 * into *out (n in *n). 0 or -1 with err (nothing left to free). */
static int get_patterns(json_t *fp, const char *key, char ***out, size_t *n, char *err,
                        size_t errlen)
{
    json_t *a = json_object_get(fp, key);
    char name[64];
    if (!json_is_array(a))
        return bad(err, errlen, "fingerprint.%s is missing or not an array", key);
    if (json_array_size(a) > WHOAMI_MAX_PATTERNS)
        return bad(err, errlen, "fingerprint.%s has %zu patterns, more than %d", key,
                   json_array_size(a), WHOAMI_MAX_PATTERNS);
    *n = 0;
    *out = calloc(json_array_size(a) + 1, sizeof **out);
    if (!*out)
        return bad(err, errlen, "out of memory reading fingerprint.%s", key);
    for (size_t i = 0; i < json_array_size(a); i++) {
        snprintf(name, sizeof name, "fingerprint.%s[%zu]", key, i);
        const char *s = get_str(json_array_get(a, i), name, WHOAMI_PATTERN_MAX, err, errlen);
        char *copy = s ? strdup(s) : NULL;
        if (!copy) {
            if (s)
                bad(err, errlen, "out of memory reading %s", name);
            while (*n)
                free((*out)[--*n]);
            free(*out);
            *out = NULL;
            return -1;
        }
        (*out)[(*n)++] = copy;
    }
    return 0;
}

static int parse_fingerprint(json_t *fp, struct whoami_answer *out, char *err, size_t errlen)
{
    long long files = 0;
    if (!json_is_object(fp))
        return bad(err, errlen, "fingerprint is missing or not an object");
    const char *alg = get_str(json_object_get(fp, "algorithm"), "fingerprint.algorithm",
                              WHOAMI_ANSWER_MAX, err, errlen);
    if (!alg)
        return -1;
    if (strcmp(alg, WHOAMI_ALGORITHM) != 0)
        return bad(err, errlen, "fingerprint.algorithm is not \"%s\"", WHOAMI_ALGORITHM);
    const char *hash =
        get_str(json_object_get(fp, "hash"), "fingerprint.hash", WHOAMI_ANSWER_MAX, err, errlen);
    if (!hash || !is_hash(hash))
        return hash ? bad(err, errlen, "fingerprint.hash is not \"sha256:\" and 64 hex digits")
                    : -1;
    if (get_int(fp, "files", "fingerprint.files", 0, WHOAMI_MAX_FILES, &files, err, errlen) < 0)
        return -1;
    struct whoami_patterns *p = &out->patterns;
    if (get_patterns(fp, "include", &p->include, &p->n_include, err, errlen) < 0)
        return -1;
    if (get_patterns(fp, "exclude", &p->exclude, &p->n_exclude, err, errlen) < 0) {
        whoami_answer_free(out);
        return -1;
    }
    memcpy(out->hash, hash, 72);
    out->files = (size_t)files;
    return 0;
}

/* The optional taking_in (PROTOCOL.md, section 1): absent, or an object
 * whose since is an RFC 3339 UTC time no earlier than started_at (a
 * process cannot have seen a change before it began). */
static int parse_taking_in(json_t *root, struct whoami_answer *out, char *err, size_t errlen)
{
    json_t *ti = json_object_get(root, "taking_in");
    if (!ti)
        return 0;
    if (!json_is_object(ti))
        return bad(err, errlen, "taking_in is not an object");
    const char *since = get_str(json_object_get(ti, "since"), "taking_in.since",
                                sizeof out->started_at - 1, err, errlen);
    if (!since)
        return -1;
    if (parse_time(since, &out->taking_in_ms) < 0)
        return bad(err, errlen,
                   "taking_in.since is not an RFC 3339 UTC time "
                   "(\"2026-12-02T08:00:00Z\")");
    if (out->taking_in_ms < out->started_ms)
        return bad(err, errlen, "taking_in.since is before started_at");
    return 0;
}

/* The optional reloads (PROTOCOL.md, section 1.2): absent, or a boolean;
 * only false changes anything. */
static int parse_reloads(json_t *root, struct whoami_answer *out, char *err, size_t errlen)
{
    json_t *r = json_object_get(root, "reloads");
    if (!r)
        return 0;
    if (!json_is_boolean(r))
        return bad(err, errlen, "reloads is not true or false");
    out->no_reloader = json_is_false(r);
    return 0;
}

static int parse_top(json_t *root, struct whoami_answer *out, char *err, size_t errlen)
{
    long long version = 0, pid = 0;
    if (!json_is_object(root))
        return bad(err, errlen, "the answer is not a JSON object");
    if (get_int(root, "wtproxy_whoami", "wtproxy_whoami", 1, 1, &version, err, errlen) < 0)
        return -1;
    const char *checkout =
        get_str(json_object_get(root, "checkout"), "checkout", PATH_MAX - 1, err, errlen);
    if (!checkout)
        return -1;
    if (checkout[0] != '/')
        return bad(err, errlen, "checkout is not an absolute path");
    if (get_int(root, "pid", "pid", 1, 2147483647, &pid, err, errlen) < 0)
        return -1;
    const char *at = get_str(json_object_get(root, "started_at"), "started_at",
                             sizeof out->started_at - 1, err, errlen);
    if (!at)
        return -1;
    if (parse_time(at, &out->started_ms) < 0)
        return bad(err, errlen,
                   "started_at is not an RFC 3339 UTC time "
                   "(\"2026-12-02T08:00:00Z\")");
    memcpy(out->checkout, checkout, strlen(checkout) + 1);
    memcpy(out->started_at, at, strlen(at) + 1);
    out->pid = (pid_t)pid;
    if (parse_taking_in(root, out, err, errlen) < 0 || parse_reloads(root, out, err, errlen) < 0)
        return -1;
    return parse_fingerprint(json_object_get(root, "fingerprint"), out, err, errlen);
}

int whoami_answer_parse(const char *body, size_t len, struct whoami_answer *out, char *err,
                        size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (len > WHOAMI_ANSWER_MAX)
        return bad(err, errlen, "the answer is %zu bytes, more than %d", len, WHOAMI_ANSWER_MAX);
    /* jansson's words for no bytes are "wrong arguments (line -1, column -1)";
     * php -S answers so when the router does not compile */
    if (len == 0)
        return bad(err, errlen,
                   "the answer is empty (a 200 with no body, as php -S sends when the script "
                   "failed: the server's log says why)");
    json_error_t jerr;
    /* JSON_ALLOW_NUL: a "\u0000" in a string is then refused by get_str,
     * with the field's name, rather than by the parser without it. */
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!root) {
        /* jansson quotes the bytes near the error: keep the message printable */
        for (char *c = jerr.text; *c; c++)
            if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
                *c = '?';
        return bad(err, errlen, "the answer is not JSON: %s (line %d, column %d)", jerr.text,
                   jerr.line, jerr.column);
    }
    int r = parse_top(root, out, err, errlen);
    json_decref(root);
    if (r < 0)
        memset(out, 0, sizeof *out);
    return r;
}

void whoami_answer_free(struct whoami_answer *a)
{
    struct whoami_patterns *p = &a->patterns;
    for (size_t i = 0; i < p->n_include; i++)
        free(p->include[i]);
    for (size_t i = 0; i < p->n_exclude; i++)
        free(p->exclude[i]);
    free(p->include);
    free(p->exclude);
    memset(p, 0, sizeof *p);
}
