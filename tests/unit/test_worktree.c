/* test_worktree.c - host/worktree.c against every git layout host.h
 * documents, each built by the real git command in a fresh temp dir: a
 * main checkout, linked worktrees (absolute and relative gitdir, nested in
 * the main checkout or in another worktree, detached), a separate gitdir,
 * a pruned worktree, a moved one (before and after `git worktree repair`),
 * a repository that moved away from its worktrees, garbage and empty .git
 * files, a .git folder that is no repository, submodules (in the main
 * checkout and in a linked worktree), a symlink, and folders in no
 * repository. Each row is asserted for its folder and for a subfolder. */
#include "../../host/proc.c"
#include "../../host/worktree.c"

#include "tap.h"

/* Every commit is made with these, so its hash is always the same. */
#define GIT_SETUP                                                                                  \
    "export GIT_AUTHOR_DATE=2020-01-01T00:00:00Z GIT_COMMITTER_DATE=2020-01-01T00:00:00Z "         \
    "GIT_CONFIG_NOSYSTEM=1 HOME=\"$PWD\"; "                                                        \
    "g() { git -c init.defaultBranch=main -c user.name=t -c user.email=t@t "                       \
    "-c protocol.file.allow=always \"$@\"; }; "                                                    \
    "g init -q repo && g -C repo commit -q --allow-empty -m init; "
#define DETACHED "(detached 8067236)" /* that commit, as git-log --oneline shows it */

struct row {
    const char *name;
    const char *setup; /* shell commands run in the row's temp dir after GIT_SETUP */
    const char *dir;   /* the folder asked about, relative to the temp dir */
    /* expected, relative to the temp dir; root NULL: refused */
    const char *root, *common, *gitdir, *branch;
    const char *says; /* a phrase of the refusal, or of the note ("" none) */
};

static const struct row rows[] = {
    {"main checkout", "", "repo", "repo", "repo/.git", "repo/.git", "main", ""},
    {"linked worktree beside the main checkout", "g -C repo worktree add -q -b feat ../wt-b",
     "wt-b", "wt-b", "repo/.git", "repo/.git/worktrees/wt-b", "feat", ""},
    {"linked worktree with a gitdir relative to it",
     "g -C repo worktree add -q ../wt-b && echo 'gitdir: ../repo/.git/worktrees/wt-b' > wt-b/.git",
     "wt-b", "wt-b", "repo/.git", "repo/.git/worktrees/wt-b", "wt-b", ""},
    {"worktree nested in the main checkout: the nearest wins",
     "g -C repo worktree add -q .worktrees/wt-a", "repo/.worktrees/wt-a", "repo/.worktrees/wt-a",
     "repo/.git", "repo/.git/worktrees/wt-a", "wt-a", ""},
    {"worktree nested in another worktree's folder",
     "g -C repo worktree add -q ../wt-b && g -C repo worktree add -q ../wt-b/inner", "wt-b/inner",
     "wt-b/inner", "repo/.git", "repo/.git/worktrees/inner", "inner", ""},
    {"detached worktree", "g -C repo worktree add -q --detach ../wt-d", "wt-d", "wt-d", "repo/.git",
     "repo/.git/worktrees/wt-d", DETACHED, ""},
    {"separate gitdir (git init --separate-git-dir)",
     "g init -q --separate-git-dir=sep.git plain && g -C plain commit -q --allow-empty -m init",
     "plain", "plain", "sep.git", "sep.git", "main", ""},
    {"pruned worktree: refused, not the enclosing folder",
     "g -C repo worktree add -q .worktrees/wt-p && mv repo/.worktrees/wt-p away && "
     "g -C repo worktree prune && mv away repo/.worktrees/wt-p",
     "repo/.worktrees/wt-p", NULL, NULL, NULL, NULL, "is gone (pruned by `git worktree prune`"},
    {"repository moved away from its worktree: refused, says repair",
     "g -C repo worktree add -q ../wt-b && mv repo repo2", "wt-b", NULL, NULL, NULL, NULL,
     "run `git worktree repair"},
    {"moved worktree: accepted, with a note to repair",
     "g -C repo worktree add -q ../wt-b && mv wt-b wt-moved", "wt-moved", "wt-moved", "repo/.git",
     "repo/.git/worktrees/wt-b", "wt-b", "run `git worktree repair` in it"},
    {"moved worktree after git worktree repair: no note",
     "g -C repo worktree add -q ../wt-b && mv wt-b wt-moved && g -C wt-moved worktree repair "
     "2>/dev/null",
     "wt-moved", "wt-moved", "repo/.git", "repo/.git/worktrees/wt-b", "wt-b", ""},
    {"garbage .git file: refused",
     "g -C repo worktree add -q ../wt-b && echo 'not a gitfile' > wt-b/.git", "wt-b", NULL, NULL,
     NULL, NULL, "is no valid .git file"},
    {"empty .git file: refused", "mkdir wt-e && : > wt-e/.git", "wt-e", NULL, NULL, NULL, NULL,
     "is no valid .git file"},
    {".git folder that is no repository: refused", "mkdir -p x/.git", "x", NULL, NULL, NULL, NULL,
     "no git repository"},
    {"submodule: the superproject's worktree",
     "g init -q lib && g -C lib commit -q --allow-empty -m lib && "
     "g -C repo submodule add -q \"$PWD/lib\" libs/lib && g -C repo commit -q -m sub",
     "repo/libs/lib", "repo", "repo/.git", "repo/.git", "main", ""},
    {"submodule in a linked worktree: that worktree",
     "g init -q lib && g -C lib commit -q --allow-empty -m lib && "
     "g -C repo submodule add -q \"$PWD/lib\" libs/lib && g -C repo commit -q -m sub && "
     "g -C repo worktree add -q ../wt-s && g -C wt-s submodule update -q --init",
     "wt-s/libs/lib", "wt-s", "repo/.git", "repo/.git/worktrees/wt-s", "wt-s", ""},
    {"submodule moved out of its superproject: refused",
     "g init -q lib && g -C lib commit -q --allow-empty -m lib && "
     "g -C repo submodule add -q \"$PWD/lib\" libs/lib && "
     "echo \"gitdir: $PWD/repo/.git/modules/libs/lib\" > repo/libs/lib/.git && "
     "mv repo/libs/lib lib-out",
     "lib-out", NULL, NULL, NULL, NULL, "is a checkout of a submodule"},
    {"symlink into a worktree: made canonical",
     "g -C repo worktree add -q ../wt-b && ln -s wt-b link", "link", "wt-b", "repo/.git",
     "repo/.git/worktrees/wt-b", "wt-b", ""},
    {"folder in no repository: refused", "mkdir outside", "outside", NULL, NULL, NULL, NULL,
     "is not inside a git worktree"},
    {"missing folder: refused", "", "no-such-dir", NULL, NULL, NULL, NULL, "No such file"},
};

static char tmp[PATH_MAX]; /* the current row's temp dir, canonical */

/* tmp/rel, in one of a few rotating buffers. */
static const char *at(const char *rel)
{
    static char buf[4][2 * PATH_MAX];
    static int i;

    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", tmp, rel);
    return buf[i];
}

/* Run the row's layout in a fresh tmp. Returns 0, or -1 (git failed). */
static int build(const struct row *r)
{
    char cmd[2 * PATH_MAX], templ[] = "/tmp/test_worktree.XXXXXX";

    if (!mkdtemp(templ) || !realpath(templ, tmp))
        return -1;
    snprintf(cmd, sizeof cmd, "set -e; cd '%s'; " GIT_SETUP "%s", tmp, r->setup);
    return system(cmd) == 0 ? 0 : -1;
}

static void remove_tmp(void)
{
    char cmd[PATH_MAX + 16];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        ok(0, "remove %s", tmp);
}

static void check(const struct row *r, const char *dir, const char *what)
{
    struct host_worktree w;
    char err[3 * PATH_MAX] = "";
    int rc = host_worktree_of(dir, &w, err, sizeof err);

    if (!r->root) {
        is_int(rc, -1, "%s: %s is refused", r->name, what);
        has_str(err, r->says, "  saying why");
        has_str(err, r->dir, "  naming the folder");
        return;
    }
    is_int(rc, 0, "%s: %s", r->name, what);
    if (rc < 0)
        printf("# %s\n", err);
    is_str(w.root, at(r->root), "  root");
    is_str(w.common, at(r->common), "  common dir");
    is_str(w.gitdir, at(r->gitdir), "  gitdir");
    is_str(w.branch, r->branch, "  branch");
    if (r->says[0])
        has_str(w.note, r->says, "  with a note");
    else
        is_str(w.note, "", "  and no note");
}

static void run_row(const struct row *r)
{
    char cmd[3 * PATH_MAX], sub[2 * PATH_MAX + 16];
    struct stat st;

    if (build(r) < 0) {
        ok(0, "%s: git builds the layout", r->name);
    } else {
        check(r, at(r->dir), "the folder");
        snprintf(sub, sizeof sub, "%s/src/deeper", at(r->dir));
        if (stat(at(r->dir), &st) == 0) {
            snprintf(cmd, sizeof cmd, "mkdir -p '%s'", sub);
            if (system(cmd) != 0)
                ok(0, "mkdir %s", sub);
            check(r, sub, "a subfolder");
        }
    }
    remove_tmp();
}

/* The branch helper the tables (ls, the dashboard) use. */
static void test_branch(void)
{
    char b[64];

    if (build(&rows[0]) < 0) {
        ok(0, "git builds a repository");
        return;
    }
    host_worktree_branch(at("repo"), b, sizeof b);
    is_str(b, "main", "host_worktree_branch: the checked out branch");
    host_worktree_branch(tmp, b, sizeof b);
    is_str(b, "-", "host_worktree_branch: - outside any worktree");
    remove_tmp();
}

int main(void)
{
    if (system("git --version >/dev/null 2>&1") != 0) {
        printf("1..0 # SKIP git is not installed\n");
        return 0;
    }
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        run_row(&rows[i]);
    test_branch();
    return done_testing();
}
