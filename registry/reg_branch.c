/* reg_branch.c - the branch checked out in a registered worktree, read
 * from its .git: `wtproxy ls` shows it, and so does the dashboard. */
#include "registry.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Read the first line of path (without its newline) into out. Returns 0
 * or -1. */
static int read_line(const char *path, char *out, size_t outlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, out, outlen - 1);
    close(fd);
    if (n <= 0)
        return -1;
    out[n] = '\0';
    out[strcspn(out, "\r\n")] = '\0';
    return 0;
}

/* A linked worktree's .git file says "gitdir: <repo>/.git/worktrees/X"
 * (absolute, or relative to the worktree), whose HEAD names the branch; a
 * main worktree's .git is the folder holding HEAD. */
void reg_worktree_branch(const char *worktree, char *out, size_t outlen)
{
    char git[PATH_MAX], line[PATH_MAX], head[PATH_MAX];
    int n = snprintf(git, sizeof git, "%s/.git", worktree);
    snprintf(out, outlen, "-");
    if (n < 0 || (size_t)n >= sizeof git)
        return;
    if (read_line(git, line, sizeof line) == 0 && strncmp(line, "gitdir: ", 8) == 0)
        n = line[8] == '/' ? snprintf(head, sizeof head, "%s/HEAD", line + 8)
                           : snprintf(head, sizeof head, "%s/%s/HEAD", worktree, line + 8);
    else
        n = snprintf(head, sizeof head, "%s/HEAD", git);
    if (n < 0 || (size_t)n >= sizeof head || read_line(head, line, sizeof line) < 0)
        return;
    const char *ref = line + 5;
    if (strncmp(line, "ref: refs/heads/", 16) == 0)
        ref = line + 16;
    else if (strncmp(line, "ref: ", 5) != 0)
        ref = NULL; /* a detached HEAD: a commit hash */
    if (ref && strlen(ref) < outlen)
        memcpy(out, ref, strlen(ref) + 1);
    else if (!ref && strlen(line) >= 7)
        snprintf(out, outlen, "(detached %.7s)", line);
}
