/* reg_db_alike.c - two worktrees that derive one database name. A name
 * keeps REG_DB_WORKTREE_SLUG bytes of the folder's name (registry/CLAIMS.md
 * says why the rule stays), so two folders of one name (two clones, two
 * users) or of names alike in their first 20 characters (an orchestrator's
 * "fix-the-login-redirect-bug" and "...-loop") meet on one database. The
 * second's claim is refused; its refusal said "free it there, or take it:
 * --force", and either drops the first worktree's database from under its
 * tests. The fix that holds is a folder name of its own: this file finds
 * one beside the worktree. */
#include "reg_db.h"
#include "host.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define FULL_SLUG 256 /* a folder name's slug, uncut */
#define TAIL_MAX 12   /* bytes of the distinguishing part a proposal keeps */

static const char *folder_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int reg_db_alike(const char *a, const char *b, char *slug, size_t len)
{
    char sa[REG_DB_WORKTREE_SLUG + 1], sb[REG_DB_WORKTREE_SLUG + 1];
    reg_db_slug(folder_of(a), REG_DB_WORKTREE_SLUG, sa, sizeof sa);
    reg_db_slug(folder_of(b), REG_DB_WORKTREE_SLUG, sb, sizeof sb);
    snprintf(slug, len, "%s", sa);
    return sa[0] && strcmp(a, b) != 0 && strcmp(sa, sb) == 0;
}

/* The slug of what tells the name a[0, alen) from b[0, blen): a's slug
 * past the start both slugs share, else (a's is where b's starts) a's
 * whole slug; cut to TAIL_MAX. "" when the two slugs are equal. */
static void tail_of(const char *a, size_t alen, const char *b, size_t blen, char *out, size_t len)
{
    char part[FULL_SLUG], mine[FULL_SLUG], theirs[FULL_SLUG];
    size_t k = 0;
    snprintf(part, sizeof part, "%.*s", (int)alen, a);
    reg_db_slug(part, sizeof mine - 1, mine, sizeof mine);
    snprintf(part, sizeof part, "%.*s", (int)blen, b);
    reg_db_slug(part, sizeof theirs - 1, theirs, sizeof theirs);
    out[0] = '\0';
    if (strcmp(mine, theirs) == 0)
        return;
    while (mine[k] && mine[k] == theirs[k])
        k++;
    reg_db_slug(mine[k] ? mine + k : mine, TAIL_MAX, out, len);
}

/* What tells worktree from other: the end of its folder's name past the
 * part they share, else (one folder name in two places: two clones, two
 * users) that of the nearest folder above whose name differs there. */
static void telling_part(const char *worktree, const char *other, char *out, size_t len)
{
    const char *a = worktree + strlen(worktree), *b = other + strlen(other);
    out[0] = '\0';
    while (!out[0] && a > worktree && b > other) {
        const char *ea = a, *eb = b;
        while (a > worktree && a[-1] != '/')
            a--;
        while (b > other && b[-1] != '/')
            b--;
        tail_of(a, (size_t)(ea - a), b, (size_t)(eb - b), out, len);
        a -= a > worktree; /* past the '/' */
        b -= b > other;
    }
}

int reg_db_own_folder(const char *worktree, const char *other, char *out, size_t len)
{
    char tail[TAIL_MAX + 1], slug[REG_DB_WORKTREE_SLUG + 1];
    struct stat st;
    const char *folder = folder_of(worktree);
    telling_part(worktree, other, tail, sizeof tail);
    if (!tail[0] || folder == worktree)
        return -1;
    /* the telling part must fall inside the slug's first 20 bytes */
    int keep = REG_DB_WORKTREE_SLUG - 1 - (int)strlen(tail);
    if (keep < (int)strlen(folder)) { /* cut at a word's end, when one is left */
        int at = keep;
        while (at > 0 && !strchr("-_. ", folder[at]))
            at--;
        keep = at > 0 ? at : keep;
    } else {
        keep = (int)strlen(folder);
    }
    while (keep > 0 && strchr("-_. ", folder[keep - 1]))
        keep--;
    int n =
        snprintf(out, len, "%.*s%.*s-%s", (int)(folder - worktree), worktree, keep, folder, tail);
    if (n < 0 || (size_t)n >= len || stat(out, &st) == 0 || strchr(out, '\''))
        return -1;
    return reg_db_alike(out, other, slug, sizeof slug) ? -1 : 0;
}
