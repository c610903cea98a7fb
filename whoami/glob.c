/* glob.c - the patterns of wtproxy-fp-v1 (PROTOCOL.md, "Patterns"):
 *
 *   pattern   = component *( "/" component )
 *   component = "**"              ; zero or more whole path components
 *             | *( "*" | "?" | byte )  ; one path component
 *
 * '*' matches any run of bytes, '?' one byte, every other byte itself;
 * neither crosses '/' because they only ever see one component. Both
 * levels use the same greedy match with one backtrack point (the last star
 * seen), which is exact for stars that match anything and takes time
 * proportional to the product of the lengths, never exponential: patterns
 * come from backends, paths from the disk. */
#include <string.h>

#include "whoami.h"

/* One component: pattern bytes [p, pe) against path bytes [s, se). */
static int match_component(const char *p, const char *pe, const char *s, const char *se)
{
    const char *star_p = NULL, *star_s = NULL;
    while (s < se) {
        if (p < pe && *p == '*') {
            star_p = ++p;
            star_s = s;
        } else if (p < pe && (*p == '?' || *p == *s)) {
            p++;
            s++;
        } else if (star_p) {
            p = star_p;
            s = ++star_s;
        } else {
            return 0;
        }
    }
    while (p < pe && *p == '*')
        p++;
    return p == pe;
}

/* A component starts at c (NULL: no more components) and ends at the next
 * '/' or at end. */
static const char *comp_end(const char *c, const char *end)
{
    const char *slash = memchr(c, '/', (size_t)(end - c));
    return slash ? slash : end;
}

static const char *comp_next(const char *c, const char *end)
{
    const char *e = comp_end(c, end);
    return e < end ? e + 1 : NULL;
}

static int is_dstar(const char *c, const char *end)
{
    return comp_end(c, end) - c == 2 && c[0] == '*' && c[1] == '*';
}

/* Pattern [pattern, pend) against the whole of path [path, send). */
static int match_n(const char *pattern, const char *pend, const char *path, const char *send)
{
    const char *p = pattern < pend ? pattern : NULL, *s = path < send ? path : NULL;
    const char *star_p = NULL, *star_s = NULL;
    int starred = 0;
    while (s) {
        if (p && is_dstar(p, pend)) {
            starred = 1;
            star_p = p = comp_next(p, pend);
            star_s = s;
        } else if (p && match_component(p, comp_end(p, pend), s, comp_end(s, send))) {
            p = comp_next(p, pend);
            s = comp_next(s, send);
        } else if (starred && star_s) {
            p = star_p;
            s = star_s = comp_next(star_s, send);
        } else {
            return 0;
        }
    }
    while (p && is_dstar(p, pend))
        p = comp_next(p, pend);
    return p == NULL;
}

int whoami_glob_match(const char *pattern, const char *path)
{
    return match_n(pattern, pattern + strlen(pattern), path, path + strlen(path));
}

static int any_match(char *const *pats, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (whoami_glob_match(pats[i], path))
            return 1;
    return 0;
}

int whoami_patterns_select(const struct whoami_patterns *p, const char *path)
{
    return any_match(p->include, p->n_include, path) && !any_match(p->exclude, p->n_exclude, path);
}

/* Whether pattern could match a path strictly below the folder dir: its
 * leading components, matched one by one against dir's, do not fail before
 * a "**" (which could take in anything) nor before dir's run out with a
 * component of the pattern left for what is below. Never 0 wrongly, which
 * would leave files out; 1 for a left component no name matches ("a/" ends
 * in an empty one), which only costs a walk. */
static int may_match_below(const char *pattern, const char *dir)
{
    const char *pend = pattern + strlen(pattern), *dend = dir + strlen(dir);
    const char *p = pattern < pend ? pattern : NULL;
    for (const char *d = dir < dend ? dir : NULL; d; d = comp_next(d, dend)) {
        if (!p)
            return 0; /* the pattern ends at dir or above it */
        if (is_dstar(p, pend))
            return 1;
        if (!match_component(p, comp_end(p, pend), d, comp_end(d, dend)))
            return 0;
        p = comp_next(p, pend);
    }
    return p != NULL;
}

/* An exclude that is a pattern P then a last component "**", with P
 * matching dir, excludes everything below it. */
static int excluded_below(const struct whoami_patterns *p, const char *dir)
{
    const char *dend = dir + strlen(dir);
    for (size_t i = 0; i < p->n_exclude; i++) {
        const char *x = p->exclude[i];
        size_t n = strlen(x);
        if (n >= 3 && memcmp(x + n - 3, "/**", 3) == 0 && match_n(x, x + n - 3, dir, dend))
            return 1;
    }
    return 0;
}

int whoami_patterns_prune(const struct whoami_patterns *p, const char *dir)
{
    if (excluded_below(p, dir))
        return 1;
    for (size_t i = 0; i < p->n_include; i++)
        if (may_match_below(p->include[i], dir))
            return 0;
    return 1;
}

static int same_list(char **a, size_t na, char **b, size_t nb)
{
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i]) != 0)
            return 0;
    return 1;
}

/* Compared in place, not through a built key: tree.c runs it per request. */
int whoami_patterns_same(const struct whoami_patterns *a, const struct whoami_patterns *b)
{
    return same_list(a->include, a->n_include, b->include, b->n_include) &&
           same_list(a->exclude, a->n_exclude, b->exclude, b->n_exclude);
}
