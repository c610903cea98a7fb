/* log_file.c - a log file with a size cap (host.h): the daemon's
 * daemon.log and each server's log under servers/.
 *
 * Bytes are counted as their owner writes them, so the common case costs
 * an addition; every HOST_LOG_SYNC_BYTES the file's real size is read back
 * (one fstat), because other writers share the file (the daemon's
 * registry lines, a wrapper's own messages) and their bytes are not
 * counted. Past the cap the file is renamed to PATH.1, replacing the
 * previous .1, and a new PATH is opened onto the same fd number (dup3):
 * a thread writing to that number meanwhile writes to one file or the
 * other, never to a closed or reused fd. */
#include "host.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

long long host_log_max_bytes(void)
{
    const char *v = getenv("WTPROXY_LOG_MAX_BYTES");
    char *end;
    long long n = v && *v ? strtoll(v, &end, 10) : 0;
    if (!v || !*v || *end || n <= 0)
        return HOST_LOG_MAX_BYTES;
    return n < HOST_LOG_MIN_BYTES ? HOST_LOG_MIN_BYTES : n;
}

/* Whether fd a and fd b are open on the same file. */
static int same_file(int a, int b)
{
    struct stat sa, sb;
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

int host_log_attach(struct host_log *l, int fd, const int *also, int nalso)
{
    char link[64];
    struct stat st, named;
    *l = (struct host_log){.fd = -1, .also = {-1, -1}};
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, l->path, sizeof l->path - 1);
    if (n <= 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return -1;
    l->path[n] = '\0';
    /* A deleted or moved file has no name to rotate under. */
    if (l->path[0] != '/' || stat(l->path, &named) < 0 || named.st_ino != st.st_ino ||
        named.st_dev != st.st_dev)
        return -1;
    l->fd = fd;
    l->size = st.st_size;
    l->max = host_log_max_bytes();
    for (int i = 0, k = 0; i < nalso && k < 2; i++)
        if (also[i] != fd && same_file(fd, also[i]))
            l->also[k++] = also[i];
    return 0;
}

/* PATH -> PATH.1, a new PATH onto l->fd and the fds that shared the old
 * file. Returns 0, or -1 with err (l->fd still writes to the old file). */
static int rotate(struct host_log *l, char *err, size_t errlen)
{
    char old[PATH_MAX + 8];
    snprintf(old, sizeof old, "%s.1", l->path);
    if (rename(l->path, old) < 0 && errno != ENOENT) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", l->path, old, strerror(errno));
        return -1;
    }
    int fd = open(l->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open a new %s: %s", l->path, strerror(errno));
        return -1;
    }
    int flags = fcntl(l->fd, F_GETFD);
    dup3(fd, l->fd, flags >= 0 && (flags & FD_CLOEXEC) ? O_CLOEXEC : 0);
    for (int i = 0; i < 2; i++)
        if (l->also[i] >= 0)
            dup2(fd, l->also[i]);
    close(fd);
    return 0;
}

int host_log_wrote(struct host_log *l, size_t n, int line_end, char *err, size_t errlen)
{
    struct stat st;
    if (l->fd < 0 || l->max <= 0)
        return 0;
    l->size += (long long)n;
    l->unsynced += (long long)n;
    if (l->size < l->max && l->unsynced < HOST_LOG_SYNC_BYTES)
        return 0;
    l->unsynced = 0;
    if (fstat(l->fd, &st) == 0)
        l->size = st.st_size;
    /* A line is not split between the two files, unless it goes on for
     * HOST_LOG_SYNC_BYTES past the cap (output with no newlines at all). */
    if (l->size < l->max || (!line_end && l->size < l->max + HOST_LOG_SYNC_BYTES))
        return 0;
    /* Whatever happens, the next try is a cap's worth of bytes away: a
     * folder that refuses the rename is not asked again at every line. */
    long long was = l->size;
    l->size = 0;
    if (rotate(l, err, errlen) < 0)
        return -1;
    l->rotated += was;
    return 1;
}
