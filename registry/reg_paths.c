/* reg_paths.c - where the control socket and the state file live, and the
 * checks that keep other users out of them.
 *
 * Whoever can write the control socket's folder can put their own socket
 * there and answer for the daemon (and /tmp is everybody's), and the state
 * file lists the commands people run. So each folder must be a real
 * directory (not a symlink someone planted), owned by us, closed to
 * others; a folder that is not is refused with the command that fixes it,
 * never repaired silently, since it may not be ours to repair. */
#include "registry.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONTROL_SOCKET_NAME "control.sock"
#define SUN_PATH_MAX 107 /* sizeof sockaddr_un.sun_path less the NUL */

/* $name when it is set to an absolute path, else NULL. The XDG base
 * directory spec says to ignore relative ones. */
static const char *abs_env(const char *name)
{
    const char *v = getenv(name);

    return v && v[0] == '/' ? v : NULL;
}

/* Check that path is a directory we alone own. Returns 0, or -1 with err
 * saying what is wrong and how to fix it. */
static int check_private_dir(const char *path, char *err, size_t errlen)
{
    struct stat st;

    if (lstat(path, &st) < 0) {
        snprintf(err, errlen, "cannot use %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) { /* lstat: a symlink to a folder lands here too */
        snprintf(err, errlen, "%s is %s, not a folder; remove it: rm %s", path,
                 S_ISLNK(st.st_mode) ? "a symlink" : "a file", path);
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen,
                 "%s belongs to uid %ld, not to you (uid %ld); another user may be "
                 "impersonating wtproxy; remove it: sudo rm -r %s",
                 path, (long)st.st_uid, (long)geteuid(), path);
        return -1;
    }
    if ((st.st_mode & 077) != 0) {
        snprintf(err, errlen, "%s is open to other users (mode %04o); chmod 700 %s", path,
                 (unsigned)(st.st_mode & 07777), path);
        return -1;
    }
    return 0;
}

/* mkdir path with mode 0700, and with parents when parents is set (new
 * ones 0700 too). An existing folder is fine. Returns 0, or -1 with err. */
static int make_dir(const char *path, int parents, char *err, size_t errlen)
{
    char buf[PATH_MAX];

    if ((size_t)snprintf(buf, sizeof buf, "%s", path) >= sizeof buf) {
        snprintf(err, errlen, "cannot create %s: the path is too long", path);
        return -1;
    }
    for (char *p = parents ? strchr(buf + 1, '/') : NULL; p; p = strchr(p + 1, '/')) {
        *p = '\0';
        if (mkdir(buf, 0700) < 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot create %s: %s", buf, strerror(errno));
            return -1;
        }
        *p = '/';
    }
    if (mkdir(buf, 0700) == 0) {
        /* The umask may have taken bits off; 0700 is what was asked for. */
        if (chmod(buf, 0700) == 0)
            return 0;
    } else if (errno == EEXIST) {
        return 0;
    }
    snprintf(err, errlen, "cannot create %s: %s", buf, strerror(errno));
    return -1;
}

/* The folder base + sub into out, created (see make_dir) and checked. */
static int private_dir(char *out, size_t outlen, int parents, char *err, size_t errlen,
                       const char *base, const char *sub)
{
    if ((size_t)snprintf(out, outlen, "%s%s", base, sub) >= outlen) {
        snprintf(err, errlen, "the path %s%s is too long", base, sub);
        return -1;
    }
    if (make_dir(out, parents, err, errlen) < 0)
        return -1;
    return check_private_dir(out, err, errlen);
}

/* The control socket's folder's name into out, and where it comes from.
 * Returns its length, cut short in out when outlen or more. */
static size_t control_dir_name(char *out, size_t outlen, const char **from)
{
    const char *runtime = abs_env("XDG_RUNTIME_DIR");

    *from = runtime ? "under XDG_RUNTIME_DIR" : "the default without XDG_RUNTIME_DIR";
    if (runtime)
        return (size_t)snprintf(out, outlen, "%s/wtproxy", runtime);
    return (size_t)snprintf(out, outlen, "/tmp/wtproxy-%ld", (long)geteuid());
}

int reg_control_dir(char *out, size_t outlen, char *err, size_t errlen)
{
    char name[PATH_MAX];
    const char *from;

    if (control_dir_name(name, sizeof name, &from) >= sizeof name) {
        snprintf(err, errlen, "the path %s is too long", name);
        return -1;
    }
    return private_dir(out, outlen, 0, err, errlen, name, "");
}

void reg_control_where(char *out, size_t outlen, const char **from)
{
    const char *env = getenv("WTPROXY_CONTROL");
    char dir[PATH_MAX];

    if (env && env[0]) {
        snprintf(out, outlen, "%s", env);
        *from = "WTPROXY_CONTROL";
        return;
    }
    control_dir_name(dir, sizeof dir, from);
    snprintf(out, outlen, "%s/" CONTROL_SOCKET_NAME, dir);
}

int reg_control_path(char *out, size_t outlen, char *err, size_t errlen)
{
    const char *env = getenv("WTPROXY_CONTROL");
    char dir[PATH_MAX];
    size_t n;

    if (env && env[0]) {
        n = (size_t)snprintf(out, outlen, "%s", env);
    } else {
        if (reg_control_dir(dir, sizeof dir, err, errlen) < 0)
            return -1;
        n = (size_t)snprintf(out, outlen, "%s/" CONTROL_SOCKET_NAME, dir);
    }
    /* Said here rather than as a bare ENAMETOOLONG from bind or connect. */
    if (n >= outlen || n > SUN_PATH_MAX) {
        snprintf(err, errlen,
                 "the control socket path %s is longer than the %d bytes a Unix socket "
                 "path may have; set WTPROXY_CONTROL to a shorter one",
                 out, SUN_PATH_MAX);
        return -1;
    }
    return 0;
}

/* The user's home folder: $HOME, else the password database's, else NULL. */
static const char *home_dir(void)
{
    const char *home = abs_env("HOME");
    struct passwd *pw;

    if (home)
        return home;
    pw = getpwuid(geteuid());
    return pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
}

int reg_state_dir(char *out, size_t outlen, char *err, size_t errlen)
{
    const char *state = abs_env("XDG_STATE_HOME"), *home;

    if (state)
        return private_dir(out, outlen, 1, err, errlen, state, "/wtproxy");
    if (!(home = home_dir())) {
        snprintf(err, errlen,
                 "cannot find your home folder for the state file; set HOME "
                 "or XDG_STATE_HOME");
        return -1;
    }
    return private_dir(out, outlen, 1, err, errlen, home, "/.local/state/wtproxy");
}
