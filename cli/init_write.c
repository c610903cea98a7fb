/* init_write.c - `wtproxy init`'s changes shown and written: each as a
 * unified diff (Debian's `diff -u`, from diffutils, which every Debian
 * system has: fewer lines than a diff of our own) and, with --apply,
 * written so that nothing of the user's is lost: a file only if it still
 * holds what the plan was made from, a new file only if none appeared
 * meanwhile. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init.h"

#define INIT_DIFF_MAX (4 * 1024 * 1024) /* the diff we show; the files are capped at 1 MiB */

extern char **environ;

/* Write text to a new temp file; its path in path. -1 with err. */
static int temp_with(const char *text, char *path, size_t len, char *err, size_t errlen)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, len, "%s/wtproxy-init-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    size_t n = strlen(text);
    if (fd < 0 || write(fd, text, n) != (ssize_t)n) {
        snprintf(err, errlen, "cannot write a temp file for diff in %s: %s",
                 tmp && *tmp ? tmp : "/tmp", strerror(errno));
        if (fd >= 0)
            close(fd), unlink(path);
        return -1;
    }
    close(fd);
    return 0;
}

/* Read fd to its end into a malloc'd string: at most max bytes kept, the
 * rest read and dropped (so the writer never dies of SIGPIPE). */
static char *slurp(int fd, size_t max)
{
    size_t len = 0, cap = 4096;
    char *s = malloc(cap), scratch[4096];
    while (s) {
        if (len + 1 == cap && cap <= max) {
            char *s2 = realloc(s, cap * 2);
            if (!s2)
                break;
            s = s2, cap *= 2;
        }
        int full = len + 1 == cap;
        ssize_t r = full ? read(fd, scratch, sizeof scratch) : read(fd, s + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (!full)
            len += (size_t)r;
    }
    if (s)
        s[len] = '\0';
    return s;
}

/* The unified diff of c (`diff -u`, labelled a/PATH and b/PATH, or
 * /dev/null for a new file), malloc'd; NULL with err. */
char *init_diff(const struct init_change *c, char *err, size_t errlen)
{
    char a[PATH_MAX], b[PATH_MAX], la[PATH_MAX + 4], lb[PATH_MAX + 4];
    char *out = NULL;
    int pipefd[2] = {-1, -1};
    if (temp_with(c->old ? c->old : "", a, sizeof a, err, errlen) < 0)
        return NULL;
    if (temp_with(c->new, b, sizeof b, err, errlen) < 0)
        goto out_a;
    snprintf(la, sizeof la, "%s%s", c->old ? "a/" : "", c->old ? c->path : "/dev/null");
    snprintf(lb, sizeof lb, "b/%s", c->path);
    char *argv[] = {"diff", "-u", "--label", la, "--label", lb, a, b, NULL};
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status = 0;
    if (pipe2(pipefd, O_CLOEXEC) < 0 || posix_spawn_file_actions_init(&fa) != 0) {
        snprintf(err, errlen, "cannot run diff: %s", strerror(errno));
        goto out;
    }
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    int r = posix_spawnp(&pid, "diff", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    if (r != 0) {
        snprintf(err, errlen, "cannot run diff (apt-get install diffutils): %s", strerror(r));
        goto out;
    }
    out = slurp(pipefd[0], INIT_DIFF_MAX);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
        snprintf(err, errlen, "diff failed (status %d)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        free(out);
        out = NULL;
    }
out:
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    unlink(b);
out_a:
    unlink(a);
    return out;
}

/* The folder a new file goes in (Next's route folder), when it is not
 * there yet; its own parent must be. */
static int make_parent(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    return mkdir(dir, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

/* Write c into dir: a new file only where none is (O_EXCL), an edited
 * one only if it still holds c->old, through a temp file and rename, with
 * its mode kept. Returns 0, or -1 with err. */
int init_write(const char *dir, const struct init_change *c, char *err, size_t errlen)
{
    char path[PATH_MAX], tmp[PATH_MAX + 16], e2[256];
    struct stat st = {.st_mode = 0644};
    if (cli_join(path, sizeof path, dir, c->path) < 0) {
        snprintf(err, errlen, "%s: the path is too long", c->path);
        return -1;
    }
    if (c->old) {
        char *now = cli_read_text(path, CLI_INIT_FILE_MAX, e2, sizeof e2);
        int same = now && strcmp(now, c->old) == 0;
        free(now);
        if (!same || stat(path, &st) < 0) {
            snprintf(err, errlen,
                     "%s changed while wtproxy init ran; left alone: run "
                     "wtproxy init again",
                     c->path);
            return -1;
        }
    }
    if (!c->old && make_parent(path) < 0) {
        snprintf(err, errlen, "cannot make the folder of %s: %s", c->path, strerror(errno));
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.wtproxy-new", path);
    int fd = open(c->old ? tmp : path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 07777);
    size_t n = strlen(c->new);
    if (fd < 0 || write(fd, c->new, n) != (ssize_t)n || fsync(fd) < 0 || close(fd) < 0 ||
        (c->old && rename(tmp, path) < 0)) {
        snprintf(err, errlen, "cannot write %s: %s%s", c->path, strerror(errno),
                 errno == EEXIST && !c->old ? " (it appeared meanwhile; left alone)" : "");
        if (c->old)
            unlink(tmp);
        return -1;
    }
    return 0;
}
