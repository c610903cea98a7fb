/* worktree.c - the worktree of a folder: the one reader of .git layouts
 * (gitrepository-layout(5), git-worktree(1)); host.h says what each
 * layout gives and why.
 *
 *   main checkout:   ROOT/.git/                  gitdir = common = ROOT/.git
 *   linked worktree: ROOT/.git  "gitdir: G\n"    G absolute, or relative to ROOT
 *                    G/commondir "C\n"           common = C, relative to G
 *                    G/gitdir "ROOT/.git\n"      git's back-pointer to ROOT
 *   separate gitdir: ROOT/.git  "gitdir: G\n"    no G/commondir: common = G
 *   submodule:       like a separate gitdir, with G inside a git dir's
 *                    modules/ folder (SUPER/.git/modules/NAME, or
 *                    SUPER/.git/worktrees/W/modules/NAME in a linked one)
 *   HEAD:            G/HEAD "ref: refs/heads/BRANCH\n" or a commit hash
 *
 * The walk goes up from the folder and stops at the first .git entry,
 * except that a submodule's is passed over (host.h says why). */
#include "host.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A sentence into err (which may be NULL). Returns -1. */
__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt,
                                                      ...)
{
    va_list ap;

    if (err && errlen) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* The first line of file path into buf, without its "\n" or "\r\n".
 * Returns 0, or -1 when missing, empty, or longer than buf. One read: the
 * files read here are one short line (the daemon places callers with
 * this, so each system call counts). */
static int read_line(const char *path, char *buf, size_t len)
{
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    while ((n = read(fd, buf, len - 1)) < 0 && errno == EINTR)
        ;
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    n = (ssize_t)strcspn(buf, "\r\n");
    if (n == 0 || (size_t)n == len - 1)
        return -1; /* a full buffer: cut short */
    buf[n] = '\0';
    return 0;
}

/* rel as a path: itself when absolute, else under dir. Returns 0 or -1. */
static int join(const char *dir, const char *rel, char *out, size_t len)
{
    int n = rel[0] == '/' ? snprintf(out, len, "%s", rel)
                          : snprintf(out, len, "%s/%s", strcmp(dir, "/") ? dir : "", rel);
    return n >= 0 && (size_t)n < len ? 0 : -1;
}

/* When rel is only ".." steps ("../..", what git writes in commondir),
 * the folder that many levels above the canonical dir into out: no
 * symlink can be on the way, so no realpath (an lstat per component) is
 * needed. Returns 0, or -1 for any other rel. */
static int up_from(const char *dir, const char *rel, char *out, size_t len)
{
    size_t n = strlen(dir);

    if (n >= len)
        return -1;
    memcpy(out, dir, n + 1);
    while (*rel) {
        if (strncmp(rel, "..", 2) != 0 || (rel[2] != '/' && rel[2] != '\0') || n <= 1)
            return -1;
        rel += rel[2] ? 3 : 2;
        while (n > 0 && out[n - 1] != '/')
            n--;
        n = n > 1 ? n - 1 : 1; /* drop the slash, but keep "/" */
        out[n] = '\0';
    }
    return 0;
}

/* The branch HEAD in gitdir names: "main", another ref as written,
 * "(detached abc1234)" for a commit; "" when HEAD is unreadable or names
 * a ref longer than out. */
static void read_branch(const char *gitdir, char *out, size_t len)
{
    char path[PATH_MAX + sizeof "/HEAD"], line[PATH_MAX];
    const char *ref = NULL;

    out[0] = '\0';
    if (join(gitdir, "HEAD", path, sizeof path) < 0 || read_line(path, line, sizeof line) < 0)
        return;
    if (strncmp(line, "ref: refs/heads/", 16) == 0)
        ref = line + 16;
    else if (strncmp(line, "ref: ", 5) == 0)
        ref = line + 5;
    else if (strlen(line) >= 7)
        snprintf(out, len, "(detached %.7s)", line);
    if (ref && strlen(ref) < len)
        memcpy(out, ref, strlen(ref) + 1);
}

/* Whether the canonical git dir common is a submodule's: it lies inside
 * a folder named modules whose parent is a git dir (holds HEAD). Costs no
 * system call unless a "/modules/" is in the path. */
static int is_submodule(const char *common)
{
    char path[PATH_MAX + sizeof "/HEAD"];
    const char *p = common;
    struct stat st;

    while ((p = strstr(p, "/modules/"))) {
        int n = snprintf(path, sizeof path, "%.*s/HEAD", (int)(p - common), common);
        if (n > 0 && (size_t)n < sizeof path && stat(path, &st) == 0 && S_ISREG(st.st_mode))
            return 1;
        p++;
    }
    return 0;
}

/* A linked worktree's back-pointer (G/gitdir) naming another folder than
 * root: git keeps working in root, but `git worktree prune` will drop the
 * worktree (moved) or two folders share one HEAD and index (copied).
 * Accepted, with a note saying how to make git agree. */
static void check_back_pointer(const char *root, struct host_worktree *w)
{
    char path[PATH_MAX + sizeof "/gitdir"], line[PATH_MAX], named[PATH_MAX], canon[PATH_MAX];
    char *slash;

    if (join(w->gitdir, "gitdir", path, sizeof path) < 0 ||
        read_line(path, line, sizeof line) < 0 || join(w->gitdir, line, named, sizeof named) < 0 ||
        !(slash = strrchr(named, '/')))
        return;    /* no back-pointer: not a linked worktree (a separate gitdir) */
    *slash = '\0'; /* the folder that holds the .git file it names */
    /* git writes the canonical path: realpath (an lstat per component)
     * only when the text differs. */
    if (strcmp(named, root) == 0 ||
        (named[0] && realpath(named, canon) && strcmp(canon, root) == 0))
        return;
    struct stat a, b;
    if (named[0] && stat(named, &a) == 0 && stat(root, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino) {
        /* One folder at two paths: a sandbox or a container bind-mounts the
         * worktree at another (bwrap --bind WT /workspace). `git worktree
         * repair` run here pointed git at this path, which the machine
         * outside has not: the worktree became prunable there. */
        snprintf(w->note, sizeof w->note,
                 "%s is the worktree git records as %s, seen here at another path (a bind "
                 "mount: a sandbox or a container); do not run `git worktree repair` here: it "
                 "would record this path, which the machine outside does not have",
                 root, named);
        return;
    }
    snprintf(w->note, sizeof w->note,
             "git records the gitdir %s as the worktree %s, not %s: if %s was moved, run "
             "`git worktree repair` in it (else `git worktree prune` will drop it); if it is a "
             "copy, make it a worktree of its own with `git worktree add`; if %s is that "
             "worktree bind-mounted at another path (a sandbox, a container), change nothing",
             w->gitdir, named[0] ? named : "/", root, root, root);
}

/* ROOT/.git is a file: a linked worktree, a separate gitdir or a
 * submodule. Returns 0 with w filled, 1 for a submodule (w->root names
 * it; the caller walks on), -1 with err. */
static int from_gitfile(const char *root, const char *gitfile, struct host_worktree *w, char *err,
                        size_t errlen)
{
    static const char prefix[] = "gitdir: ";
    char line[PATH_MAX + sizeof prefix], path[PATH_MAX], cdir[PATH_MAX];

    if (read_line(gitfile, line, sizeof line) < 0 || strncmp(line, prefix, sizeof prefix - 1) ||
        !line[sizeof prefix - 1])
        return fail(err, errlen,
                    "%s is no valid .git file (git wants one line `gitdir: <path>`), so git "
                    "refuses the folder %s; if it is a worktree, run `git worktree repair %s` "
                    "in its repository",
                    gitfile, root, root);
    if (join(root, line + sizeof prefix - 1, path, sizeof path) < 0 || !realpath(path, w->gitdir))
        return fail(err, errlen,
                    "%s is a worktree git no longer knows: its .git names the gitdir %s, which "
                    "is gone (pruned by `git worktree prune`, or the repository moved); if the "
                    "repository moved, run `git worktree repair %s` in it, else save the "
                    "folder's changes, remove it and `git worktree add %s BRANCH` again",
                    root, line + sizeof prefix - 1, root, root);
    if (join(w->gitdir, "commondir", path, sizeof path) < 0)
        return fail(err, errlen, "the gitdir %s of %s: path too long", w->gitdir, root);
    if (read_line(path, cdir, sizeof cdir) == 0) {
        if (up_from(w->gitdir, cdir, w->common, sizeof w->common) == 0)
            ; /* "../..", as git writes it */
        else if (join(w->gitdir, cdir, path, sizeof path) < 0 || !realpath(path, w->common))
            return fail(err, errlen,
                        "the worktree %s belongs to the repository %s (%s/commondir), which is "
                        "gone; run `git worktree repair %s` in the repository, wherever it is now",
                        root, cdir, w->gitdir, root);
    } else if (access(path, F_OK) == 0) {
        return fail(err, errlen, "%s is empty or unreadable, so git refuses the worktree %s", path,
                    root);
    } else {
        memcpy(w->common, w->gitdir, sizeof w->common);
    }
    snprintf(w->root, sizeof w->root, "%s", root);
    if (is_submodule(w->common))
        return 1;
    read_branch(w->gitdir, w->branch, sizeof w->branch);
    check_back_pointer(root, w);
    return 0;
}

int host_worktree_removed(const char *root)
{
    static const char prefix[] = "gitdir: ";
    char git[PATH_MAX + sizeof "/.git"], line[PATH_MAX + sizeof prefix], gitdir[PATH_MAX];
    struct stat st;

    if (join(root, ".git", git, sizeof git) < 0)
        return 0;
    if (lstat(git, &st) < 0)
        return errno == ENOENT || errno == ENOTDIR;
    if (!S_ISREG(st.st_mode) || read_line(git, line, sizeof line) < 0 ||
        strncmp(line, prefix, sizeof prefix - 1) != 0 ||
        join(root, line + sizeof prefix - 1, gitdir, sizeof gitdir) < 0)
        return 0;
    return stat(gitdir, &st) < 0 && (errno == ENOENT || errno == ENOTDIR);
}

/* The .git entry at dir/.git (dir canonical): fill w. Returns as
 * from_gitfile. A .git symlink counts as its target. */
static int worktree_at(const char *dir, struct host_worktree *w, char *err, size_t errlen)
{
    char git[PATH_MAX + sizeof "/.git"], head[PATH_MAX + sizeof "/.git/HEAD"];
    struct stat st;

    if (join(dir, ".git", git, sizeof git) < 0)
        return fail(err, errlen, "%s: path too long", dir);
    if (stat(git, &st) < 0)
        return fail(err, errlen, "%s: %s, so git refuses the folder %s", git, strerror(errno), dir);
    if (S_ISREG(st.st_mode))
        return from_gitfile(dir, git, w, err, errlen);
    if (!S_ISDIR(st.st_mode))
        return fail(err, errlen, "%s is neither a folder nor a file, so git refuses %s", git, dir);
    if (join(git, "HEAD", head, sizeof head) < 0 || access(head, F_OK) < 0)
        return fail(err, errlen,
                    "%s is a folder but no git repository (it has no HEAD); remove it, or "
                    "run `git init` in %s",
                    git, dir);
    if (!realpath(git, w->gitdir))
        return fail(err, errlen, "%s: %s", git, strerror(errno));
    memcpy(w->common, w->gitdir, sizeof w->common);
    snprintf(w->root, sizeof w->root, "%s", dir);
    read_branch(w->gitdir, w->branch, sizeof w->branch);
    return 0;
}

int host_worktree_of(const char *dir, struct host_worktree *out, char *err, size_t errlen)
{
    char path[PATH_MAX + sizeof "/.git"], submodule[PATH_MAX] = "";
    struct stat st;
    size_t n;
    int rc;

    memset(out, 0, sizeof *out);
    if (!realpath(dir, path))
        return fail(err, errlen, "%s: %s", dir, strerror(errno));
    /* path[0..n) is the folder tried; n == 0 is "/". */
    n = strcmp(path, "/") == 0 ? 0 : strlen(path);
    for (;;) {
        memcpy(path + n, "/.git", sizeof "/.git");
        if (lstat(path, &st) == 0) {
            path[n ? n : 1] = '\0';
            if ((rc = worktree_at(path, out, err, errlen)) <= 0)
                return rc;
            /* A submodule's checkout is part of the superproject's. */
            if (!submodule[0])
                snprintf(submodule, sizeof submodule, "%s", out->root);
            memset(out, 0, sizeof *out);
            path[n] = '\0';
        }
        if (n == 0)
            break;
        path[n] = '\0';
        n = (size_t)(strrchr(path, '/') - path);
    }
    if (submodule[0])
        return fail(err, errlen,
                    "%s is a checkout of a submodule, outside the worktree of its superproject; "
                    "run this in the superproject's worktree",
                    submodule);
    if (!realpath(dir, path))
        path[0] = '\0';
    return fail(err, errlen,
                "%s is not inside a git worktree (no .git in it or in any folder above it)",
                path[0] ? path : dir);
}

void host_worktree_branch(const char *dir, char *out, size_t outlen)
{
    struct host_worktree w;

    if (host_worktree_of(dir, &w, NULL, 0) == 0 && w.branch[0])
        snprintf(out, outlen, "%s", w.branch);
    else
        snprintf(out, outlen, "-");
}
