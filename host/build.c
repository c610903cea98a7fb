/* build.c - which build of wtproxy this binary is, and whether another
 * process's binary is still on disk. After an upgrade the daemon and the
 * `wtproxy run` wrappers started before it run on the old binary (its
 * deleted inode), with the old version's behaviour, while the new CLI
 * talks to them: the version alone (0.1.0 for hundreds of commits) does
 * not tell them apart, the build does. */
#include "host.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wtp_build_id.h"

const char *host_build(void)
{
    return WTP_BUILD;
}

int host_exe_replaced(long pid, char *exe, size_t len)
{
    static const char deleted[] = " (deleted)";
    char path[64];
    snprintf(path, sizeof path, "%s/%ld/exe", host_proc_dir, pid);
    ssize_t n = len ? readlink(path, exe, len - 1) : -1;
    if (n < 0)
        return -1;
    exe[n] = '\0';
    size_t d = sizeof deleted - 1;
    if ((size_t)n <= d || strcmp(exe + n - d, deleted) != 0)
        return 0;
    exe[n - d] = '\0';
    return 1;
}

int host_pid_runs_self(pid_t pid)
{
    char path[64], self[64];
    struct stat theirs, mine;
    snprintf(path, sizeof path, "%s/%ld/exe", host_proc_dir, (long)pid);
    snprintf(self, sizeof self, "%s/self/exe", host_proc_dir);
    if (stat(path, &theirs) < 0 || stat(self, &mine) < 0)
        return -1;
    return theirs.st_dev == mine.st_dev && theirs.st_ino == mine.st_ino;
}
