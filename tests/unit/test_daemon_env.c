/* test_daemon_env.c - cli/daemon_env.c, the environment of a daemon the
 * CLI starts: which names the allow-list keeps, and a path list without
 * its entries inside the starting command's worktree (as written or
 * through a symlink), relative or empty. Test 129 runs the whole start. */
#include "../../cli/daemon_env.c"

#include <stdlib.h>
#include <sys/stat.h>

#include "tap.h"

static void test_names(void)
{
    const char *kept_ones[] = {"HOME=/h",
                               "LC_ALL=C",
                               "XDG_CACHE_HOME=/c",
                               "XDG_DATA_DIRS=/d",
                               "https_proxy=x",
                               "NO_PROXY=y",
                               "WTPROXY_CONFIG=/f",
                               "UBSAN_OPTIONS=halt_on_error=1",
                               "PATH=/bin",
                               "GOFLAGS=-tags=devtag",
                               "GOPROXY=https://goproxy.corp.example",
                               "GOPRIVATE=corp.example",
                               "GONOPROXY=x",
                               "GONOSUMDB=x",
                               "GOSUMDB=off",
                               "GOINSECURE=x",
                               "GOTOOLCHAIN=local",
                               "GOROOT=/usr/lib/go",
                               "GOMODCACHE=/m",
                               "GOCACHE=/c"};
    for (size_t i = 0; i < sizeof kept_ones / sizeof kept_ones[0]; i++)
        ok(kept_entry(kept_ones[i]) != NULL, "%s is kept", kept_ones[i]);
    const char *dropped[] = {"FOO=b",
                             "VIRTUAL_ENV=/v",
                             "npm_config_local_prefix=/p",
                             "PGDATABASE=shop_b",
                             "WTPROXY_DB_SERVER=x",
                             "WTPROXY_TEST_DB=t",
                             "WTPROXY_WORKTREE=/w",
                             "XDG_SESSION_ID=3",
                             "NODE_OPTIONS=-r x",
                             "PATHX=/bin",
                             "GOWORK=/w/go.work",
                             "GOOS=windows",
                             "CGO_ENABLED=0",
                             "HOME"};
    for (size_t i = 0; i < sizeof dropped / sizeof dropped[0]; i++)
        ok(kept_entry(dropped[i]) == NULL, "%s is dropped", dropped[i]);
    const char *paths[] = {"GOPATH=/g", "GOMODCACHE=/m", "GOCACHE=/c", "GOROOT=/r"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        ok(kept_entry(paths[i])->paths, "%s is a path: one inside the worktree goes", paths[i]);
}

static void test_paths(void)
{
    char tmpl[] = "/tmp/wtproxy-daemon-env-XXXXXX", root[64], link[80], bin[80], var[1024],
         want[256];
    char *dir = mkdtemp(tmpl);
    ok(dir != NULL, "a temp folder");
    snprintf(root, sizeof root, "%s/wt", dir);
    snprintf(link, sizeof link, "%s/into", dir);
    mkdir(root, 0700);
    snprintf(bin, sizeof bin, "%s/.venv", root);
    mkdir(bin, 0700);
    ok(symlink(bin, link) == 0, "a symlink into the worktree");
    snprintf(var, sizeof var, "PATH=%s/.venv/bin:/usr/bin::rel/bin:%s:%s:%s-other:/bin:.", root,
             link, root, root);
    int n = 0;
    char *out = filter_paths(var, root, &n);
    snprintf(want, sizeof want, "PATH=/usr/bin:%s-other:/bin", root);
    is_str(out, want, "inside the worktree (as written or through a symlink), relative: dropped");
    is_int(n, 5, "each dropped entry counted (the empty one is not an entry)");
    free(out);
    n = 0;
    snprintf(var, sizeof var, "WTPROXY_BIN=%s/build/wtproxy", root);
    ok(filter_paths(var, root, &n) == NULL && n == 1, "a variable with no entry left is dropped");
    n = 0;
    snprintf(var, sizeof var, "GOPATH=%s/go", root);
    ok(filter_paths(var, root, &n) == NULL && n == 1, "a GOPATH inside the worktree is dropped");
    n = 0;
    out = filter_paths("PATH=/usr/bin:node_modules/.bin", "", &n);
    is_str(out, "PATH=/usr/bin", "in no worktree: only relative entries go");
    free(out);
    unlink(link);
    rmdir(bin);
    rmdir(root);
    rmdir(dir);
}

static void test_line(void)
{
    static char *env[] = {"HOME=/home/u", "FOO=secret-value", "PATH=/usr/bin:rel", "BAR=1", NULL};
    char **saved = environ, err[256];
    environ = env;
    struct cli_daemon_env d = {0};
    is_int(cli_daemon_env(&d, err, sizeof err), 0, "built");
    environ = saved;
    is_str(d.env[0], "HOME=/home/u", "HOME kept as it is");
    is_str(d.env[1], "PATH=/usr/bin", "PATH filtered");
    ok(d.env[2] == NULL, "nothing else");
    ok(strstr(d.line, "dropped FOO, BAR; 1 entries of PATH") != NULL,
       "the line names what went: %s", d.line);
    ok(strstr(d.line, "secret-value") == NULL, "never a value");
    cli_daemon_env_free(&d);
}

int main(void)
{
    test_names();
    test_paths();
    test_line();
    return done_testing();
}
