/* caller.c - which worktree a process belongs to (DESIGN.md §4): its
 * WTPROXY_WORKTREE or its cwd, else its parent's, up the ppid chain.
 *
 * A worktree is the nearest directory holding a `.git` entry, as git finds
 * it (gitrepository-layout(5)):
 *   main checkout:   ROOT/.git/                 common dir = ROOT/.git
 *   linked worktree: ROOT/.git  "gitdir: G\n"   G relative to ROOT
 *                    G/commondir "C\n"          common dir = C, relative to G
 *                    (no G/commondir: a submodule; its common dir is G)
 * Every worktree of one repository shares the common dir, which is how a
 * repository is named here. Nearest wins, so a worktree nested inside the
 * main checkout (repo/.worktrees/wt-a) is itself, never the main one. */
#include "caller.h"
#include "registry.h"
#include "host.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ENV_NAME "WTPROXY_WORKTREE"

/* Copy src into dst of len bytes. Returns 0, or -1 when it does not fit. */
static int copy_str(char *dst, size_t len, const char *src)
{
    size_t n = strlen(src);

    if (n >= len) return -1;
    memcpy(dst, src, n + 1);
    return 0;
}

/* The first line of file path into buf, without its "\n" or "\r\n".
 * Returns 0, or -1 when missing, empty, or longer than buf. */
static int read_line(const char *path, char *buf, size_t len)
{
    ssize_t n;
    int fd;

    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) return -1;
    n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    n = (ssize_t)strcspn(buf, "\r\n");
    if (n == 0 || (size_t)n == len - 1) return -1; /* a full buffer: cut short */
    buf[n] = '\0';
    return 0;
}

/* rel as a path: itself when absolute, else under dir. Returns 0 or -1. */
static int join(const char *dir, const char *rel, char *out, size_t len)
{
    int n = rel[0] == '/' ? snprintf(out, len, "%s", rel) : snprintf(out, len, "%s/%s", dir, rel);
    return n >= 0 && (size_t)n < len ? 0 : -1;
}

/* The canonical common dir of the linked worktree whose .git file is
 * gitfile, in root. Returns 0, or -1 when the file is not "gitdir: PATH"
 * or PATH (or its commondir) does not exist: a pruned worktree is no
 * worktree, rather than silently the enclosing checkout. */
static int common_of_gitfile(const char *root, const char *gitfile, char *common)
{
    static const char prefix[] = "gitdir: ";
    char line[PATH_MAX + sizeof prefix], gitdir[PATH_MAX], cdir[PATH_MAX], path[PATH_MAX];

    if (read_line(gitfile, line, sizeof line) < 0 ||
        strncmp(line, prefix, sizeof prefix - 1) != 0 ||
        join(root, line + sizeof prefix - 1, gitdir, sizeof gitdir) < 0 ||
        join(gitdir, "commondir", path, sizeof path) < 0)
        return -1;
    if (read_line(path, cdir, sizeof cdir) == 0) {
        if (join(gitdir, cdir, path, sizeof path) < 0) return -1;
    } else if (access(path, F_OK) == 0) {
        return -1; /* there, but empty or unreadable */
    } else if (copy_str(path, sizeof path, gitdir) < 0) {
        return -1;
    }
    return realpath(path, common) ? 0 : -1;
}

/* dir (canonical) holds a `.git` entry: fill root and common. Returns 0,
 * or -1 when the entry is neither a repository nor a valid gitdir file. */
static int worktree_at(const char *dir, char *root, size_t rootlen, char *common,
                       size_t commonlen)
{
    char git[PATH_MAX + sizeof "/.git"], canon[PATH_MAX];
    struct stat st;

    /* stat: a .git symlink counts as its target. */
    if (join(dir, ".git", git, sizeof git) < 0 || stat(git, &st) < 0) return -1;
    if (S_ISDIR(st.st_mode)) {
        if (!realpath(git, canon)) return -1;
    } else if (!S_ISREG(st.st_mode) || common_of_gitfile(dir, git, canon) < 0) {
        return -1;
    }
    return copy_str(root, rootlen, dir) < 0 || copy_str(common, commonlen, canon) < 0 ? -1 : 0;
}

int caller_worktree_of(const char *dir, char *root, size_t rootlen, char *common,
                       size_t commonlen)
{
    char path[PATH_MAX + sizeof "/.git"];
    struct stat st;
    size_t n;

    if (!realpath(dir, path)) return -1;
    /* path[0..n) is the directory tried; n == 0 is "/". */
    n = strcmp(path, "/") == 0 ? 0 : strlen(path);
    for (;;) {
        memcpy(path + n, "/.git", sizeof "/.git");
        if (lstat(path, &st) == 0) {
            path[n ? n : 1] = '\0';
            return worktree_at(path, root, rootlen, common, commonlen);
        }
        if (n == 0) return -1;
        path[n] = '\0';
        n = (size_t)(strrchr(path, '/') - path);
    }
}

/* /proc/PID/cmdline as one printable line in buf: NULs between arguments
 * become spaces, control characters '?' (it ends up in messages), and a
 * long one is cut at len - 1 bytes. "" when unreadable (a kernel thread,
 * a process gone). */
static void read_cmdline(pid_t pid, char *buf, size_t len)
{
    char path[64];
    ssize_t n = 0;
    int fd;

    snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
        n = read(fd, buf, len - 1);
        close(fd);
    }
    if (n < 0) n = 0;
    for (ssize_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if (ch == '\0') buf[i] = ' ';
        else if (ch < 0x20 || ch == 0x7f) buf[i] = '?';
    }
    while (n > 0 && buf[n - 1] == ' ') n--;
    buf[n] = '\0';
}

/* readlink /proc/PID/cwd into buf. Returns 0, or -1 ("" in buf) when
 * unreadable or longer than buf. */
static int read_cwd(pid_t pid, char *buf, size_t len)
{
    char path[64];
    ssize_t n;

    snprintf(path, sizeof path, "/proc/%ld/cwd", (long)pid);
    n = readlink(path, buf, len);
    if (n <= 0 || (size_t)n >= len) {
        buf[0] = '\0';
        return -1;
    }
    buf[n] = '\0';
    return 0;
}

/* The owner of /proc/PID: the process's effective uid (root for a process
 * that made itself non-dumpable). Returns 0, or -1 when it is gone. */
static int proc_uid(pid_t pid, uid_t *uid)
{
    char path[64];
    struct stat st;

    snprintf(path, sizeof path, "/proc/%ld", (long)pid);
    if (stat(path, &st) < 0) return -1;
    *uid = st.st_uid;
    return 0;
}

/* WTPROXY_WORKTREE from the environment pid was started with (a later
 * setenv() is not seen) into buf. Returns 0, or -1 when absent, not an
 * absolute path (relative to what?), too long, or unreadable: Chromium's
 * network service writes its process title over its environment. */
static int env_worktree(pid_t pid, char *buf, size_t len)
{
    static const char name[] = ENV_NAME "=";
    char path[64], *entry = NULL;
    size_t cap = 0;
    int rc = -1;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%ld/environ", (long)pid);
    if (!(f = fopen(path, "re"))) return -1;
    while (getdelim(&entry, &cap, '\0', f) > 0) {
        if (strncmp(entry, name, sizeof name - 1) != 0) continue;
        if (entry[sizeof name - 1] == '/') rc = copy_str(buf, len, entry + sizeof name - 1);
        break; /* the first one, as getenv() reads it */
    }
    free(entry);
    fclose(f);
    return rc;
}

/* Whether pid decides: its WTPROXY_WORKTREE naming a worktree (an explicit
 * override: any repository), else its cwd in a worktree of a repository
 * known() accepts. Fills place's worktree, common_dir and how. */
static int decides(pid_t pid, caller_known_fn known, void *arg, struct caller_place *place)
{
    char dir[PATH_MAX];

    if (env_worktree(pid, dir, sizeof dir) == 0 &&
        caller_worktree_of(dir, place->worktree, sizeof place->worktree, place->common_dir,
                           sizeof place->common_dir) == 0) {
        snprintf(place->how, sizeof place->how, "env");
        return 1;
    }
    if (read_cwd(pid, dir, sizeof dir) == 0 &&
        caller_worktree_of(dir, place->worktree, sizeof place->worktree, place->common_dir,
                           sizeof place->common_dir) == 0 &&
        known(place->common_dir, arg)) {
        snprintf(place->how, sizeof place->how, "cwd");
        return 1;
    }
    place->worktree[0] = place->common_dir[0] = '\0';
    return 0;
}

int caller_place(pid_t pid, uid_t uid, caller_known_fn known, void *arg,
                 struct caller_place *place)
{
    uid_t owner;
    pid_t p = pid;

    memset(place, 0, sizeof *place);
    place->pid = pid;
    read_cmdline(pid, place->comm, sizeof place->comm);
    read_cwd(pid, place->cwd, sizeof place->cwd);
    for (int depth = 0; p > 1 && depth < CALLER_MAX_DEPTH; depth++) {
        if (proc_uid(p, &owner) < 0 || owner != uid) break;
        if (decides(p, known, arg, place)) {
            place->decided_by = p;
            place->depth = depth;
            return 0;
        }
        p = host_pid_parent(p);
    }
    return -1;
}
