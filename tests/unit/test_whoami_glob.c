/* test_whoami_glob.c - the patterns of wtproxy-fp-v1 (whoami/glob.c):
 * '*' and '?' within one component, "**" components, literal bytes,
 * selection (exclude wins), pruning by excludes and by includes (no path
 * below a pruned folder matches); and that hostile patterns stay fast. */
#include <string.h>
#include <time.h>

#include "../../whoami/glob.c"
#include "tap.h"

static const struct {
    const char *pattern, *path;
    int want;
} cases[] = {
    {"**/*.py", "a.py", 1},
    {"**/*.py", "x/y/a.py", 1},
    {"**/*.py", "a.pyc", 0},
    {"**/*.py", ".py", 1},
    {"*.py", "a.py", 1},
    {"*.py", "x/a.py", 0},
    {"*", "abc", 1},
    {"*", "a/b", 0},
    {"*", "", 0},
    {"?.py", "a.py", 1},
    {"?.py", "ab.py", 0},
    {"?.py", ".py", 0},
    {"a?c", "a/c", 0},
    {"src/*/m.py", "src/x/m.py", 1},
    {"src/*/m.py", "src/x/y/m.py", 0},
    {"src/*/m.py", "src/m.py", 0},
    {"a/**", "a", 1},
    {"a/**", "a/b", 1},
    {"a/**", "a/b/c.py", 1},
    {"a/**", "ab/c", 0},
    {"a/**/b", "a/b", 1},
    {"a/**/b", "a/x/y/b", 1},
    {"a/**/b", "a/x/y/bc", 0},
    {"**", "anything/at/all", 1},
    {"**", "", 1},
    {"**/**", "x", 1},
    {"**/x/**", "a/x/b", 1},
    {"**/x/**", "x", 1},
    {"**/x/**", "ax/b", 0},
    {"**/node_modules/**", "web/node_modules", 1},
    {"**/node_modules/**", "node_modules.py", 0},
    {"a**b", "ab", 1},
    {"a**b", "aXYb", 1},
    {"a**b", "a/b", 0},
    {"[ab].py", "a.py", 0},
    {"[ab].py", "[ab].py", 1},
    {"{x,y}.py", "x.py", 0},
    {"back\\slash", "back\\slash", 1},
    {"a.py", "a.py", 1},
    {"a.py", "sub/a.py", 0},
    {"a/", "a", 0},
    {"a/", "a/", 1},
    {"", "", 1},
    {"", "a", 0},
    {"/a", "a", 0},
    {"*/", "a/", 1},
    {"\xff*", "\xff\xfe.py", 1},
    {"caf\xc3\xa9.py", "cafe\xcc\x81.py", 0},
    {"*a*b*c", "xaxbxc", 1},
    {"*a*b*c", "xaxbxcx", 0},
    {"**/a/**/b/**/c", "x/a/y/b/z/c", 1},
    {"**/a/**/b/**/c", "x/a/y/c/z/b", 0},
};

static void test_table(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        is_int(whoami_glob_match(cases[i].pattern, cases[i].path), cases[i].want,
               "\"%s\" %s \"%s\"", cases[i].pattern, cases[i].want ? "matches" : "does not match",
               cases[i].path);
}

static void test_select_and_prune(void)
{
    char *inc[] = {"**/*.py", "*.txt"}, *exc[] = {"a.py", "gen/**", "**/.git/**", "x/*/**"};
    struct whoami_patterns p = {inc, 2, exc, 4};
    ok(whoami_patterns_select(&p, "b.py"), "included and not excluded: selected");
    ok(!whoami_patterns_select(&p, "a.py"), "matched by an include and an exclude: not selected");
    ok(whoami_patterns_select(&p, "sub/a.py"), "an exclude matches the whole path only");
    ok(!whoami_patterns_select(&p, "gen/deep/y.py"), "gen/** excludes below gen");
    ok(!whoami_patterns_select(&p, "d/n.txt"), "no include matches d/n.txt");
    ok(whoami_patterns_prune(&p, "gen"), "gen is pruned by gen/**");
    ok(!whoami_patterns_prune(&p, "gen2"), "gen2 is not");
    ok(whoami_patterns_prune(&p, "a/b/.git"), "a/b/.git is pruned by **/.git/**");
    ok(!whoami_patterns_prune(&p, "x"), "x is not pruned by x/*/** (x/f.py could match)");
    ok(whoami_patterns_prune(&p, "x/y"), "x/y is");
    ok(!whoami_patterns_prune(&p, "a.py"), "a.py (not of the form P/**) prunes nothing");
    struct whoami_patterns none = {inc, 0, NULL, 0};
    ok(!whoami_patterns_select(&none, "b.py"), "no include: nothing selected");
}

/* Whether a folder is pruned when its one include is pattern: 1 when no
 * path below the folder can match it. */
static const struct {
    const char *pattern, *dir;
    int pruned;
} below[] = {
    {"apps/web/**", "apps", 0},
    {"apps/web/**", "apps/web", 0},
    {"apps/web/**", "apps/web/src/deep", 0},
    {"apps/web/**", "apps/api", 1},
    {"apps/web/**", "apps/webx", 1},
    {"apps/web/**", "vendor", 1},
    {"package.json", "vendor", 1},       /* shorter than the folder */
    {"package.json", "package.json", 1}, /* ends at the folder */
    {"a/b", "a", 0},
    {"a/b", "a/b", 1},
    {"a/b", "a/b/c", 1},
    {"**/*.py", "any/deep/folder", 0},
    {"**", "a", 0},
    {"src/**/*.ts", "src", 0},
    {"src/**/*.ts", "src/a/b", 0},
    {"src/**/*.ts", "lib", 1},
    {"a/**/b", "a/q/r", 0},
    {"x/**/y/*.md", "z/y", 1},
    {"apps/*/src/**", "apps", 0},
    {"apps/*/src/**", "apps/x", 0},
    {"apps/*/src/**", "apps/x/src", 0},
    {"apps/*/src/**", "apps/x/src/y", 0},
    {"apps/*/src/**", "apps/x/lib", 1},
    {"apps/*/src/**", "other/x", 1},
    {"*", "a", 1},
    {"*/*.js", "a", 0},
    {"*/*.js", "a/b", 1},
    {"a*b/**", "aXb", 0},
    {"a*b/**", "ab", 0},
    {"a*b/**", "ac", 1},
    {"?/x", "a", 0},
    {"?/x", "ab", 1},
    {"{x,y}/**", "x", 1}, /* braces are literal */
    {"{x,y}/**", "{x,y}", 0},
    {"/a", "a", 1},
    {"a/", "a", 0}, /* an empty last component matches no name: kept all the same */
};

/* Every path of up to three components of these names below dir. */
static const char *const names[] = {
    "a",   "b",   "x",    "y",    "q",    "ab",   "aXb",          "src",  "lib",
    "web", "api", "f.py", "m.ts", "r.md", "i.js", "package.json", "{x,y}"};
#define N_NAMES (sizeof names / sizeof *names)

/* How many paths below dir match pattern, of those made of names. */
static int matches_below(const char *pattern, const char *dir)
{
    char path[256];
    int n = 0;
    for (size_t i = 0; i < N_NAMES * (N_NAMES + 1) * (N_NAMES + 1); i++) {
        size_t c[3] = {i % N_NAMES, i / N_NAMES % (N_NAMES + 1), i / N_NAMES / (N_NAMES + 1)};
        int len = snprintf(path, sizeof path, "%s/%s", dir, names[c[0]]);
        for (int k = 1; k < 3 && c[k] < N_NAMES; k++)
            len += snprintf(path + len, sizeof path - (size_t)len, "/%s", names[c[k]]);
        n += whoami_glob_match(pattern, path);
    }
    return n;
}

static void test_prune_by_includes(void)
{
    for (size_t i = 0; i < sizeof below / sizeof *below; i++) {
        char *inc[] = {(char *)below[i].pattern};
        struct whoami_patterns p = {inc, 1, NULL, 0};
        is_int(whoami_patterns_prune(&p, below[i].dir), below[i].pruned, "include \"%s\": %s %s",
               below[i].pattern, below[i].dir, below[i].pruned ? "pruned" : "walked");
        size_t plen = strlen(below[i].pattern);
        if (below[i].pattern[plen - 1] != '/') /* "a/" matches no path, yet is kept */
            is_int(matches_below(below[i].pattern, below[i].dir) > 0, !below[i].pruned,
                   "  and %s path below %s matches it", below[i].pruned ? "no" : "some",
                   below[i].dir);
    }
    char *inc[] = {"apps/web/**", "src/**/*.ts", "package.json"};
    struct whoami_patterns p = {inc, 3, NULL, 0};
    ok(whoami_patterns_prune(&p, "vendor") && whoami_patterns_prune(&p, "apps/api") &&
           !whoami_patterns_prune(&p, "apps") && !whoami_patterns_prune(&p, "src/x"),
       "several includes: a folder is walked when one of them may match below it");
    char *exc[] = {"apps/web/gen/**"};
    struct whoami_patterns both = {inc, 3, exc, 1};
    ok(whoami_patterns_prune(&both, "apps/web/gen") && !whoami_patterns_prune(&both, "apps/web"),
       "an include that may match below a folder does not undo an exclude's pruning");
    struct whoami_patterns none = {inc, 0, NULL, 0};
    ok(whoami_patterns_prune(&none, "src"), "no include: every folder is pruned");
}

/* Patterns come from backends: the worst a pattern can do is cost the
 * product of the lengths, never exponential backtracking. */
static void test_hostile_is_fast(void)
{
    char path[20001], pat[257], dpath[8001], dpat[257];
    memset(path, 'a', sizeof path - 1);
    path[sizeof path - 1] = '\0';
    for (int i = 0; i < 256; i += 2)
        pat[i] = '*', pat[i + 1] = 'a';
    pat[255] = 'b';
    pat[256] = '\0';
    for (int i = 0; i < 8000; i += 2)
        dpath[i] = 'a', dpath[i + 1] = '/';
    dpath[7999] = '\0';
    for (int i = 0; i < 255; i += 3)
        memcpy(dpat + i, "**/", 3);
    memcpy(dpat + 252, "b/**", 5);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int m1 = whoami_glob_match(pat, path), m2 = whoami_glob_match(dpat, dpath);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ok(!m1 && !m2, "hostile patterns do not match");
    ok(s < 2.0, "and take %.3f s (under 2 s)", s);
}

int main(void)
{
    test_table();
    test_select_and_prune();
    test_prune_by_includes();
    test_hostile_is_fast();
    return done_testing();
}
