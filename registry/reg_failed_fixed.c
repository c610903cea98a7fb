/* reg_failed_fixed.c - see registry.h. A server that failed and waits for
 * a change to its files is told to be fixed and saved; a fix saved before
 * its reloader took its first look at the files (Django's, started again
 * by `wtproxy restart` right after the failure was said) is never seen by
 * it: the server stays down, and the 503 kept asking for the edit already
 * made. The files its traceback names say whether one was. */
#include "registry.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "host.h"

/* When st's file last changed, in ms: ctime too, as a copy may keep an
 * old mtime. */
static long long changed_ms(const struct stat *st)
{
    long long m = (long long)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
    long long c = (long long)st->st_ctim.tv_sec * 1000 + st->st_ctim.tv_nsec / 1000000;
    return m > c ? m : c;
}

int reg_failed_fixed(const char *lines, const char *worktree, long long told_ms, char *file,
                     size_t filelen)
{
    size_t n = strlen(worktree);
    long long now = host_wall_ms();
    if (!n || told_ms <= 0)
        return 0;
    for (const char *p = strstr(lines, worktree); p; p = strstr(p + 1, worktree)) {
        char path[PATH_MAX];
        size_t len = strcspn(p, "\"' \t\n:,()");
        struct stat st;
        if (p[n] != '/' || len >= sizeof path)
            continue;
        memcpy(path, p, len), path[len] = '\0';
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && changed_ms(&st) > told_ms &&
            now - changed_ms(&st) > REG_RELOADER_GRACE_MS) {
            snprintf(file, filelen, "%s", path);
            return 1;
        }
    }
    return 0;
}
