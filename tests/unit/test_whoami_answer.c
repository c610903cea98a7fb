/* test_whoami_answer.c - whoami_answer_parse (whoami/answer.c): a valid
 * answer fills every field; each broken field is refused with an error
 * that names it; truncations and random mutations never crash or leak
 * (ASan and LeakSanitizer watch). */
#include <stdlib.h>
#include <string.h>

#include "../../whoami/answer.c"
#include "tap.h"

#define HASH "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

/* The valid answer with field name's value replaced by value (name
 * "fingerprint.x" for the inner object), or as is when name is NULL. */
static char *answer_with(const char *name, const char *value)
{
    /* one answer's fields beside their values: kept out of clang-format */
    /* clang-format off */
    static const char *const keys[] = {"wtproxy_whoami", "checkout", "pid", "started_at",
                                       "fingerprint.algorithm", "fingerprint.include",
                                       "fingerprint.exclude", "fingerprint.files",
                                       "fingerprint.hash"};
    static const char *const vals[] = {"1", "\"/home/dev/shop/wt-b\"", "4242",
                                       "\"2026-12-02T08:00:00Z\"", "\"wtproxy-fp-v1\"",
                                       "[\"**/*.py\"]", "[\"**/.git/**\", \"**/node_modules/**\"]",
                                       "87", "\"" HASH "\""};
    /* clang-format on */
    size_t cap = 200000, n = 0;
    char *s = malloc(cap);
    n += (size_t)snprintf(s + n, cap - n, "{\"extra\": {\"ignored\": [1, 2]}, ");
    for (size_t i = 0; i < 9; i++) {
        const char *v = name && strcmp(name, keys[i]) == 0 ? value : vals[i];
        const char *key = strncmp(keys[i], "fingerprint.", 12) == 0 ? keys[i] + 12 : keys[i];
        if (i == 4)
            n += (size_t)snprintf(s + n, cap - n, "\"fingerprint\": {\"future\": true, ");
        if (v)
            n += (size_t)snprintf(s + n, cap - n, "\"%s\": %s, ", key, v);
        if (i == 8)
            n -= 2, n += (size_t)snprintf(s + n, cap - n, "}, ");
    }
    snprintf(s + n - 2, cap - n + 2, "}");
    return s;
}

static void test_valid(void)
{
    char *body = answer_with(NULL, NULL), err[512] = "";
    struct whoami_answer a;
    int r = whoami_answer_parse(body, strlen(body), &a, err, sizeof err);
    is_int(r, 0, "a valid answer (with unknown fields) parses: %s", err);
    is_str(a.checkout, "/home/dev/shop/wt-b", "checkout");
    is_int(a.pid, 4242, "pid");
    is_str(a.started_at, "2026-12-02T08:00:00Z", "started_at");
    is_int(a.started_ms, 1796198400000LL, "started_ms");
    is_int((long long)a.patterns.n_include, 1, "one include");
    is_str(a.patterns.include[0], "**/*.py", "include[0]");
    is_int((long long)a.patterns.n_exclude, 2, "two excludes");
    is_str(a.patterns.exclude[1], "**/node_modules/**", "exclude[1]");
    is_int((long long)a.files, 87, "files");
    is_str(a.hash, HASH, "hash");
    whoami_answer_free(&a);
    free(body);

    body = answer_with("started_at", "\"2024-02-29T23:59:60.250123Z\"");
    r = whoami_answer_parse(body, strlen(body), &a, err, sizeof err);
    is_int(r, 0, "a leap day, a leap second and a fraction parse: %s", err);
    is_int(a.started_ms, 1709251200250LL, "started_ms counts the fraction's milliseconds");
    whoami_answer_free(&a);
    free(body);

    body = answer_with("fingerprint.include", "[]");
    r = whoami_answer_parse(body, strlen(body), &a, err, sizeof err);
    is_int(r, 0, "empty pattern lists are allowed: %s", err);
    whoami_answer_free(&a);
    free(body);
}

/* The valid answer with the top-level "key": value added. */
static char *with_top(const char *key, const char *value)
{
    char *base = answer_with(NULL, NULL);
    size_t cap = strlen(base) + strlen(key) + strlen(value) + 32;
    char *s = malloc(cap);
    snprintf(s, cap, "{\"%s\": %s, %s", key, value, base + 1);
    free(base);
    return s;
}

/* taking_in (PROTOCOL.md, section 1): optional; when present an object
 * whose since is a time no earlier than started_at. */
static void test_taking_in(void)
{
    char err[512] = "";
    struct whoami_answer a;
    char *body = answer_with(NULL, NULL);
    is_int(whoami_answer_parse(body, strlen(body), &a, err, sizeof err), 0, "no taking_in: %s",
           err);
    is_int(a.taking_in_ms, 0, "  is not taking anything in");
    whoami_answer_free(&a);
    free(body);
    body = with_top("taking_in", "{\"since\": \"2026-12-02T08:00:01.5Z\", \"later\": [1]}");
    is_int(whoami_answer_parse(body, strlen(body), &a, err, sizeof err), 0,
           "taking_in with a since (and an unknown member): %s", err);
    is_int(a.taking_in_ms, 1796198401500LL, "  since in unix ms");
    whoami_answer_free(&a);
    free(body);
    const struct {
        const char *value, *want;
    } cases[] = {
        {"true", "taking_in is not an object"},
        {"null", "taking_in is not an object"},
        {"\"2026-12-02T08:00:01Z\"", "taking_in is not an object"},
        {"{}", "taking_in.since is missing or not a string"},
        {"{\"since\": 1796198401}", "taking_in.since is missing or not a string"},
        {"{\"since\": \"\"}", "taking_in.since is empty"},
        {"{\"since\": \"2026-12-02T08:00:01+01:00\"}", "taking_in.since is not an RFC 3339"},
        {"{\"since\": \"2026-12-02T07:59:59.999Z\"}", "taking_in.since is before started_at"},
        {"{\"since\": \"2026-12-02T08:00:01Z\", \"since\": \"2026-12-02T08:00:02Z\"}",
         "duplicate object key"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        body = with_top("taking_in", cases[i].value);
        ok(whoami_answer_parse(body, strlen(body), &a, err, sizeof err) == -1,
           "taking_in = %s is refused", cases[i].value);
        has_str(err, cases[i].want, "  and the error names it");
        free(body);
    }
}

/* reloads (PROTOCOL.md, section 1.2): optional; a boolean when present,
 * and only false says nothing takes a change in for the server. */
static void test_reloads(void)
{
    char err[512] = "";
    struct whoami_answer a;
    const struct {
        const char *value;
        int no_reloader;
    } good[] = {{NULL, 0}, {"true", 0}, {"false", 1}};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        char *body = good[i].value ? with_top("reloads", good[i].value) : answer_with(NULL, NULL);
        is_int(whoami_answer_parse(body, strlen(body), &a, err, sizeof err), 0,
               "reloads = %s is accepted: %s", good[i].value ? good[i].value : "(absent)", err);
        is_int(a.no_reloader, good[i].no_reloader, "  nothing reloads it: %d", good[i].no_reloader);
        whoami_answer_free(&a);
        free(body);
    }
    const char *bad[] = {"\"false\"", "0", "null", "{}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *body = with_top("reloads", bad[i]);
        ok(whoami_answer_parse(body, strlen(body), &a, err, sizeof err) == -1,
           "reloads = %s is refused", bad[i]);
        has_str(err, "reloads is not true or false", "  and the error names it");
        free(body);
    }
}

static char *repeat(const char *pre, char c, size_t n, const char *post)
{
    size_t a = strlen(pre), b = strlen(post);
    char *s = malloc(a + n + b + 1);
    memcpy(s, pre, a);
    memset(s + a, c, n);
    memcpy(s + a + n, post, b + 1);
    return s;
}

static char *patterns(int n)
{
    size_t cap = (size_t)n * 8 + 3, len = 1;
    char *s = malloc(cap);
    s[0] = '[';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s\"*.p\"", i ? ", " : "");
    snprintf(s + len, cap - len, "]");
    return s;
}

static void test_bad_fields(void)
{
    char *long_checkout = repeat("\"/", 'a', PATH_MAX, "\"");
    char *long_pattern = repeat("[\"", 'a', WHOAMI_PATTERN_MAX + 1, "\"]");
    char *many = patterns(WHOAMI_MAX_PATTERNS + 1);
    const struct {
        const char *field, *value, *want;
    } cases[] = {
        {"wtproxy_whoami", NULL, "wtproxy_whoami is missing or not an integer"},
        {"wtproxy_whoami", "2", "wtproxy_whoami is 2, not from 1 to 1"},
        {"wtproxy_whoami", "\"1\"", "wtproxy_whoami is missing or not an integer"},
        {"wtproxy_whoami", "1.0", "wtproxy_whoami is missing or not an integer"},
        {"checkout", NULL, "checkout is missing or not a string"},
        {"checkout", "\"wt-b\"", "checkout is not an absolute path"},
        {"checkout", "\"\"", "checkout is empty"},
        {"checkout", "\"/a\\u0000b\"", "checkout is empty, longer than 4095 bytes, or holds a NUL"},
        {"checkout", long_checkout, "checkout is empty, longer than"},
        {"checkout", "[\"/x\"]", "checkout is missing or not a string"},
        {"pid", "0", "pid is 0, not from 1 to 2147483647"},
        {"pid", "-5", "pid is -5"},
        {"pid", "2147483648", "pid is 2147483648"},
        {"pid", "\"42\"", "pid is missing or not an integer"},
        {"pid", "null", "pid is missing or not an integer"},
        {"started_at", "\"2026-12-02 08:00:00Z\"", "started_at is not an RFC 3339 UTC time"},
        {"started_at", "\"2026-12-02T08:00:00+00:00\"", "started_at is not an RFC 3339"},
        {"started_at", "\"2026-12-02T08:00:00z\"", "started_at is not an RFC 3339"},
        {"started_at", "\"2026-13-02T08:00:00Z\"", "started_at is not an RFC 3339"},
        {"started_at", "\"2025-02-29T08:00:00Z\"", "started_at is not an RFC 3339"},
        {"started_at", "\"2026-12-02T24:00:00Z\"", "started_at is not an RFC 3339"},
        {"started_at", "\"2026-12-02T08:00:00.Z\"", "started_at is not an RFC 3339"},
        {"started_at", "\"2026-12-02T08:00:00.1234567890Z\"", "started_at is not an RFC 3339"},
        {"started_at", "\"1969-12-31T23:59:59Z\"", "started_at is not an RFC 3339"},
        {"started_at", "\"2026-12-02T08:00:00.000000000000000000000000000000000000Z\"",
         "started_at is empty, longer than 39 bytes"},
        {"started_at", "1796198400", "started_at is missing or not a string"},
        {"fingerprint.algorithm", "\"wtproxy-fp-v2\"",
         "fingerprint.algorithm is not \"wtproxy-fp-v1\""},
        {"fingerprint.algorithm", NULL, "fingerprint.algorithm is missing or not a string"},
        {"fingerprint.hash",
         "\"sha256:9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08\"",
         "fingerprint.hash is not \"sha256:\" and 64 hex digits"},
        {"fingerprint.hash", "\"sha256:9f86\"", "fingerprint.hash is not \"sha256:\""},
        {"fingerprint.hash",
         "\"md5:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"",
         "fingerprint.hash is not"},
        {"fingerprint.hash", "\"" HASH "0\"", "fingerprint.hash is not"},
        {"fingerprint.hash", NULL, "fingerprint.hash is missing or not a string"},
        {"fingerprint.files", "-1", "fingerprint.files is -1, not from 0 to 1048576"},
        {"fingerprint.files", "1048577", "fingerprint.files is 1048577"},
        {"fingerprint.files", "1e3", "fingerprint.files is missing or not an integer"},
        {"fingerprint.files", "99999999999999999999", "the answer is not JSON"},
        {"fingerprint.include", "\"**/*.py\"", "fingerprint.include is missing or not an array"},
        {"fingerprint.include", NULL, "fingerprint.include is missing or not an array"},
        {"fingerprint.include", "[1]", "fingerprint.include[0] is missing or not a string"},
        {"fingerprint.include", "[\"\"]", "fingerprint.include[0] is empty"},
        {"fingerprint.include", long_pattern, "fingerprint.include[0] is empty, longer than 256"},
        {"fingerprint.include", many, "fingerprint.include has 65 patterns, more than 64"},
        {"fingerprint.exclude", "[\"ok/**\", null]",
         "fingerprint.exclude[1] is missing or not a string"},
        {"fingerprint.exclude", "{}", "fingerprint.exclude is missing or not an array"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *body = answer_with(cases[i].field, cases[i].value), err[512] = "";
        struct whoami_answer a;
        int r = whoami_answer_parse(body, strlen(body), &a, err, sizeof err);
        ok(r == -1, "%s = %.40s is refused", cases[i].field,
           cases[i].value ? cases[i].value : "(missing)");
        has_str(err, cases[i].want, "  and the error names it");
        free(body);
    }
    free(long_checkout);
    free(long_pattern);
    free(many);
}

static void test_bad_documents(void)
{
    const struct {
        const char *body, *want;
    } cases[] = {
        {"", "the answer is empty"},
        {"not json", "the answer is not JSON"},
        {"[]", "the answer is not a JSON object"},
        {"42", "the answer is not"},
        {"{\"pid\": 1, \"pid\": 2}", "the answer is not JSON: duplicate object key"},
        {"{\"wtproxy_whoami\": 1, \"checkout\": \"/x\", \"pid\": 1, \"started_at\": "
         "\"2026-12-02T08:00:00Z\", \"fingerprint\": []}",
         "fingerprint is missing or not an object"},
        {"{\"wtproxy_whoami\": 1, \"checkout\": \"/x\", \"pid\": 1, \"started_at\": "
         "\"2026-12-02T08:00:00Z\"}",
         "fingerprint is missing or not an object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char err[512] = "";
        struct whoami_answer a;
        ok(whoami_answer_parse(cases[i].body, strlen(cases[i].body), &a, err, sizeof err) == -1,
           "refused: %s", cases[i].body);
        has_str(err, cases[i].want, "  with the reason");
    }
    char *big = repeat("{\"pad\": \"", ' ', WHOAMI_ANSWER_MAX, "\"}"), err[512];
    struct whoami_answer a;
    ok(whoami_answer_parse(big, strlen(big), &a, err, sizeof err) == -1,
       "a 64 KiB+ answer is refused");
    has_str(err, "more than 65536", "  by its size");
    free(big);
    char nul[] = "{\"a\": 1}\0garbage";
    ok(whoami_answer_parse(nul, sizeof nul - 1, &a, err, sizeof err) == -1,
       "bytes after a NUL are not ignored");
}

/* Every truncation and many random byte mutations of a valid answer: no
 * crash, no leak, and a success always leaves a consistent answer. */
static void test_never_crashes(void)
{
    char *body = answer_with(NULL, NULL), err[512];
    size_t n = strlen(body);
    int refused = 0, accepted = 0;
    struct whoami_answer a;
    for (size_t len = 0; len < n; len++) {
        char *copy = malloc(len ? len : 1); /* exactly len bytes: ASan sees any overread */
        memcpy(copy, body, len);
        refused += whoami_answer_parse(copy, len, &a, err, sizeof err) == -1;
        free(copy);
    }
    is_int(refused, (long long)n, "every one of the %zu truncations is refused", n);
    srand(5);
    for (int i = 0; i < 20000; i++) {
        char *copy = malloc(n);
        memcpy(copy, body, n);
        for (int k = 0, m = 1 + rand() % 4; k < m; k++)
            copy[rand() % n] = (char)(rand() % 256);
        if (whoami_answer_parse(copy, n, &a, err, sizeof err) == 0) {
            accepted++;
            if (a.checkout[0] != '/' || strlen(a.hash) != 71)
                accepted = -1000000;
            whoami_answer_free(&a);
        }
        free(copy);
    }
    ok(accepted >= 0, "20000 mutations: no crash; the %d accepted are consistent", accepted);
    free(body);
}

int main(void)
{
    test_valid();
    test_bad_fields();
    test_bad_documents();
    test_taking_in();
    test_reloads();
    test_never_crashes();
    return done_testing();
}
