/* worktree_id.c - which folder stands at a worktree's path. `git worktree
 * remove W && git worktree add W` puts a new worktree where the old one
 * was: the same path, the same .git text, and on ext4 often the same inode
 * number, which the removal freed and the add takes again at once. A
 * server started in the old one runs on in a deleted folder, and a
 * database claimed by it would pass to a task that never knew it.
 *
 * Two ways to tell: a process that lives through it holds the folder open
 * (host_worktree_pin), which keeps the old inode allocated, so its number
 * cannot be taken again and a deleted folder reads st_nlink 0; a record
 * that outlives every process (a database's stamp) keeps the inode number
 * with the folder's birth time, which a new folder never shares; what was
 * written at the path before that birth (a server's log) was the old
 * one's. */
#include "host.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int host_worktree_pin(const char *root)
{
    return open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int host_worktree_replaced(int pin, const char *root)
{
    struct stat held, now;

    if (pin < 0 || fstat(pin, &held) < 0)
        return 0;
    if (held.st_nlink == 0)
        return 1; /* deleted, whatever stands at its path now */
    if (stat(root, &now) < 0)
        return errno == ENOENT || errno == ENOTDIR;
    return now.st_dev != held.st_dev || now.st_ino != held.st_ino;
}

int host_worktree_moved(int pin, const char *root, char *to, size_t len)
{
    char link[32];
    struct stat held;
    ssize_t n;

    if (pin < 0 || fstat(pin, &held) < 0 || held.st_nlink == 0 || len < 2)
        return 0;
    snprintf(link, sizeof link, "/proc/self/fd/%d", pin);
    if ((n = readlink(link, to, len - 1)) <= 0 || (size_t)n >= len - 1)
        return 0;
    to[n] = '\0';
    return to[0] == '/' && strcmp(to, root) != 0;
}

int host_worktree_identity(const char *root, char *out, size_t outlen)
{
    struct statx sx;

    out[0] = '\0';
    if (statx(AT_FDCWD, root, 0, STATX_INO | STATX_BTIME, &sx) < 0 || !(sx.stx_mask & STATX_BTIME))
        return -1; /* an inode number alone is taken again at once: no identity */
    snprintf(out, outlen, "%llu.%lld.%09u", (unsigned long long)sx.stx_ino,
             (long long)sx.stx_btime.tv_sec, sx.stx_btime.tv_nsec);
    return 0;
}

int host_worktree_born(const char *root, struct timespec *at)
{
    char git[PATH_MAX + sizeof "/.git"];
    struct statx sx;
    struct stat st;

    if (statx(AT_FDCWD, root, 0, STATX_BTIME, &sx) == 0 && (sx.stx_mask & STATX_BTIME)) {
        *at = (struct timespec){sx.stx_btime.tv_sec, sx.stx_btime.tv_nsec};
        return 0;
    }
    if (snprintf(git, sizeof git, "%s/.git", root) >= (int)sizeof git || lstat(git, &st) < 0 ||
        !S_ISREG(st.st_mode))
        return -1;
    *at = st.st_mtim;
    return 0;
}

int host_pid_in_deleted(pid_t pid, const char *root)
{
    static const char mark[] = " (deleted)";
    char cwd[PATH_MAX + sizeof mark];
    size_t n, m = sizeof mark - 1;

    if (host_pid_cwd(pid, cwd, sizeof cwd) < 0 || (n = strlen(cwd)) <= m ||
        strcmp(cwd + n - m, mark) != 0)
        return 0;
    cwd[n - m] = '\0';
    return strcmp(cwd, root) == 0;
}
