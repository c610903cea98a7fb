/* builds.c - which build the daemon and the `wtproxy run` wrappers run,
 * against this command's. An install over a running wtproxy leaves the
 * daemon and the wrappers on the old binary (its deleted inode), with the
 * old version's behaviour, while the new CLI talks to them as if nothing
 * changed: doctor said "ok daemon" and ls nothing, and the version (0.1.0
 * for hundreds of commits) told no one apart. The build (host_build) does;
 * a binary deleted under its process (/proc/PID/exe "(deleted)") is one
 * another build replaced. */
#include "cli.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "host.h"

int cli_daemon_other_build(json_t *ping, char *said, size_t len)
{
    const char *build = json_string_value(json_object_get(ping, "build"));
    const char *version = json_string_value(json_object_get(ping, "version"));
    long long pid = json_integer_value(json_object_get(ping, "pid"));
    char exe[PATH_MAX], gone[PATH_MAX + 64] = "";
    int replaced = pid > 0 && host_exe_replaced((long)pid, exe, sizeof exe) == 1;
    if (replaced)
        snprintf(gone, sizeof gone, " (its binary, %s, was replaced on disk since it started)",
                 exe);
    if (build && strcmp(build, host_build()) == 0) {
        if (!replaced)
            return 0;
        /* one build said, but a tarball's or a package's builds all say
         * their plain version: the binary it runs is not the one on disk */
        snprintf(said, len,
                 "the daemon (pid %lld) runs %s as it was before that file was replaced on disk "
                 "(an install or a rebuild since it started), so it may be another wtproxy than "
                 "this command, both saying build %s: it behaves as the binary it started from "
                 "until it is restarted",
                 pid, exe, build);
    } else if (build) {
        snprintf(said, len,
                 "the daemon (pid %lld) is wtproxy %s, another build than this command's %s%s: it "
                 "behaves as that build until it is restarted",
                 pid, build, host_build(), gone);
    } else { /* from before builds were said */
        snprintf(said, len,
                 "the daemon (pid %lld) is wtproxy %s, an older build than this command's %s, one "
                 "that does not say its build%s: it behaves as that build until it is restarted",
                 pid, version ? version : "?", host_build(), gone);
    }
    return 1;
}

int cli_wrapper_replaced(json_t *e, char *exe, size_t len)
{
    long long pid = json_integer_value(json_object_get(e, "pid"));
    if (pid <= 0 || json_is_true(json_object_get(e, "remote")) ||
        host_exe_replaced((long)pid, exe, len) != 1)
        return 0;
    const char *base = strrchr(exe, '/');
    return strcmp(base ? base + 1 : exe, "wtproxy") == 0; /* not a server registered by pid */
}
