/* test_reg_paths.c - registry/reg_paths.c with XDG_RUNTIME_DIR, HOME and
 * XDG_STATE_HOME pointed at temporary folders: folders created 0700 (new
 * parents too), and refused, with the command that fixes it, when open to
 * others, owned by another uid, a symlink or a file. */
#include "../../registry/reg_paths.c"

#include <dirent.h>
#include <fcntl.h>

#include "tap.h"

static char tmp[] = "/tmp/wtp-paths-XXXXXX";

static int mode_of(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

static void test_control_dir(void)
{
    char runtime[256], want[320], out[PATH_MAX], err[1024], hint[512];
    mode_t old;

    snprintf(runtime, sizeof runtime, "%s/run", tmp);
    mkdir(runtime, 0700);
    setenv("XDG_RUNTIME_DIR", runtime, 1);
    snprintf(want, sizeof want, "%s/wtproxy", runtime);
    old = umask(0777);
    is_int(reg_control_dir(out, sizeof out, err, sizeof err), 0,
           "control dir under XDG_RUNTIME_DIR");
    umask(old);
    is_str(out, want, "  $XDG_RUNTIME_DIR/wtproxy");
    is_int(mode_of(want), 0700, "  created 0700 whatever the umask");
    is_int(reg_control_dir(out, sizeof out, err, sizeof err), 0, "  an existing one is fine");

    chmod(want, 0755);
    is_int(reg_control_dir(out, sizeof out, err, sizeof err), -1, "open to others: refused");
    has_str(err, "is open to other users (mode 0755)", "  says why");
    snprintf(hint, sizeof hint, "chmod 700 %s", want);
    has_str(err, hint, "  and how to fix it");
    chmod(want, 0710);
    is_int(reg_control_dir(out, sizeof out, err, sizeof err), -1, "group-searchable: refused");
    chmod(want, 0700);

    if (geteuid() == 0) {
        chown(want, 65534, 65534);
        is_int(reg_control_dir(out, sizeof out, err, sizeof err), -1, "owned by nobody: refused");
        has_str(err, "belongs to uid 65534, not to you (uid 0)", "  says whose it is");
        snprintf(hint, sizeof hint, "remove it: sudo rm -r %s", want);
        has_str(err, hint, "  and how to fix it");
        chown(want, 0, 0);
    } else {
        tap_skip("chown to another uid needs root");
    }

    rmdir(want);
    symlink(runtime, want);
    is_int(reg_control_dir(out, sizeof out, err, sizeof err), -1, "a symlink: refused");
    has_str(err, "is a symlink, not a folder", "  says why");
    unlink(want);
    close(open(want, O_CREAT | O_WRONLY, 0600));
    is_int(reg_control_dir(out, sizeof out, err, sizeof err), -1, "a file: refused");
    snprintf(hint, sizeof hint, "is a file, not a folder; remove it: rm %s", want);
    has_str(err, hint, "  says why and how to fix it");
    unlink(want);

    snprintf(want, sizeof want, "%s/missing", tmp);
    setenv("XDG_RUNTIME_DIR", want, 1);
    is_int(reg_control_dir(out, sizeof out, err, sizeof err), -1,
           "XDG_RUNTIME_DIR that does not exist: refused");
    has_str(err, "No such file or directory", "  says why");

    setenv("XDG_RUNTIME_DIR", "relative/run", 1);
    snprintf(want, sizeof want, "/tmp/wtproxy-%ld", (long)geteuid());
    if (reg_control_dir(out, sizeof out, err, sizeof err) < 0)
        printf("# %s\n", err);
    is_str(out, want, "a relative XDG_RUNTIME_DIR is ignored: /tmp/wtproxy-<uid>");
    unsetenv("XDG_RUNTIME_DIR");
    if (reg_control_dir(out, sizeof out, err, sizeof err) < 0)
        printf("# %s\n", err);
    is_str(out, want, "no XDG_RUNTIME_DIR: /tmp/wtproxy-<uid>");
}

static void test_control_path(void)
{
    char runtime[256], want[320], out[PATH_MAX], err[1024];

    snprintf(runtime, sizeof runtime, "%s/run", tmp);
    setenv("XDG_RUNTIME_DIR", runtime, 1);
    setenv("WTPROXY_CONTROL", "/somewhere/else.sock", 1);
    is_int(reg_control_path(out, sizeof out, err, sizeof err), 0, "WTPROXY_CONTROL");
    is_str(out, "/somewhere/else.sock", "  is used as it is");
    unsetenv("WTPROXY_CONTROL");
    is_int(reg_control_path(out, sizeof out, err, sizeof err), 0, "no WTPROXY_CONTROL");
    snprintf(want, sizeof want, "%s/wtproxy/control.sock", runtime);
    is_str(out, want, "  <control dir>/control.sock");

    /* Over the 107 bytes a Unix socket path may have. */
    snprintf(runtime, sizeof runtime, "%s/%0100d", tmp, 0);
    mkdir(runtime, 0700);
    setenv("XDG_RUNTIME_DIR", runtime, 1);
    is_int(reg_control_path(out, sizeof out, err, sizeof err), -1, "a socket path too long");
    has_str(err, "set WTPROXY_CONTROL to a shorter one", "  says what to do");
    unsetenv("XDG_RUNTIME_DIR");
}

static void test_state_dir(void)
{
    char base[256], want[320], out[PATH_MAX], err[1024], part[512];
    struct passwd *pw;

    snprintf(base, sizeof base, "%s/state/deep", tmp);
    setenv("XDG_STATE_HOME", base, 1);
    is_int(reg_state_dir(out, sizeof out, err, sizeof err), 0, "state dir under XDG_STATE_HOME");
    snprintf(want, sizeof want, "%s/wtproxy", base);
    is_str(out, want, "  $XDG_STATE_HOME/wtproxy");
    snprintf(part, sizeof part, "%s/state", tmp);
    ok(mode_of(part) == 0700 && mode_of(base) == 0700 && mode_of(want) == 0700,
       "  created with its missing parents, all 0700");
    chmod(want, 0750);
    is_int(reg_state_dir(out, sizeof out, err, sizeof err), -1, "open to others: refused");
    snprintf(part, sizeof part, "chmod 700 %s", want);
    has_str(err, part, "  with the chmod that fixes it");

    setenv("XDG_STATE_HOME", "relative", 1);
    snprintf(base, sizeof base, "%s/home", tmp);
    mkdir(base, 0755);
    setenv("HOME", base, 1);
    is_int(reg_state_dir(out, sizeof out, err, sizeof err), 0,
           "a relative XDG_STATE_HOME is ignored: under HOME");
    snprintf(want, sizeof want, "%s/.local/state/wtproxy", base);
    is_str(out, want, "  ~/.local/state/wtproxy");
    snprintf(part, sizeof part, "%s/.local", base);
    ok(mode_of(part) == 0700 && mode_of(base) == 0755, "  new parts 0700, HOME as it was");

    unsetenv("HOME");
    pw = getpwuid(geteuid());
    is_str(home_dir(), pw ? pw->pw_dir : NULL, "no HOME: the password database's home");
    unsetenv("XDG_STATE_HOME");
}

/* Remove path and everything under it (no symlinks are followed). */
static void remove_tree(const char *path)
{
    char sub[PATH_MAX];
    struct dirent *e;
    DIR *d = opendir(path);

    if (!d) {
        unlink(path);
        return;
    }
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        if (e->d_type == DT_DIR)
            remove_tree(sub);
        else
            unlink(sub);
    }
    closedir(d);
    rmdir(path);
}

int main(void)
{
    if (!mkdtemp(tmp)) {
        printf("Bail out! mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    unsetenv("WTPROXY_CONTROL");
    test_control_dir();
    test_control_path();
    test_state_dir();
    remove_tree(tmp);
    return done_testing();
}
