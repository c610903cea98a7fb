/* test_whoami_glob.c - the patterns of wtproxy-fp-v1 (whoami/glob.c):
 * '*' and '?' within one component, "**" components, literal bytes,
 * selection (exclude wins), pruning; and that hostile patterns stay fast. */
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
    test_hostile_is_fast();
    return done_testing();
}
