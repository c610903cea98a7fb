/* daemon_env.c - the environment of a daemon the CLI starts (autostart):
 * the names below, never the rest of the starting command's environment.
 *
 * Why: the daemon starts every worktree's .wtproxy servers with its own
 * environment. A daemon that inherited the command that started it (one
 * worktree's Playwright webServer, with its webServer.env, npm's npm_*,
 * an activated virtualenv, direnv's DATABASE_URL) would give worktree B's
 * variables to worktree A's server: B's Python, B's database, a wrong test
 * verdict. With this list, "the daemon's environment" is the same whatever
 * command started it, as a systemd user unit's is (the user manager's:
 * identity, locale, PATH, XDG_RUNTIME_DIR). A `wtproxy serve` the user
 * runs by hand keeps their whole environment: their explicit choice.
 *
 * PG* is dropped: PGDATABASE, PGHOST and PGUSER are an app's database
 * settings as often as the registry's, and direnv sets them per worktree;
 * the registry's URI (WTPROXY_REGISTRY, `registry =`) names its host, user
 * and database itself, and libpq finds its password in ~/.pgpass (HOME is
 * kept). WTPROXY_DB_SERVER, an app's database server, likewise.
 *
 * Go's build configuration is kept: GOFLAGS (build tags), the module
 * sources (GOPROXY, GOPRIVATE, GONOPROXY, GONOSUMDB, GOSUMDB, GOINSECURE),
 * the toolchain (GOTOOLCHAIN, GOROOT) and its caches (GOPATH, GOMODCACHE,
 * GOCACHE). They are the user's, not a worktree's, as the proxy
 * variables are: `go env -w` writes the same settings into the user's go
 * env file, which the daemon reads anyway (HOME, XDG_CONFIG_HOME). Dropped,
 * a .wtproxy's `go build` builds with other tags and module sources than
 * the developer's shell, which no fingerprint sees. Their paths inside the
 * starting command's worktree go, as PATH's do; GOWORK, one checkout's
 * go.work, is not kept. */
#include "cli.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* A kept variable: its name (an fnmatch pattern) and whether its value is
 * a list of paths (':'), each dropped when it lies inside the starting
 * command's worktree or is relative (it would resolve against that
 * command's folder, the daemon's cwd). */
struct kept {
    const char *name;
    int paths;
};

/* clang-format off */
static const struct kept kept[] = {
    /* who the user is, their language and clock: what a login gives every process */
    {"HOME", 0}, {"USER", 0}, {"LOGNAME", 0}, {"SHELL", 0},
    {"LANG", 0}, {"LANGUAGE", 0}, {"LC_*", 0}, {"TZ", 0},
    /* where things live: the state folder and control socket are found from these */
    {"TMPDIR", 0}, {"XDG_RUNTIME_DIR", 0}, {"XDG_*_HOME", 0}, {"XDG_*_DIRS", 0},
    /* the machine's network and certificates: a server behind a proxy needs them */
    {"http_proxy", 0}, {"https_proxy", 0}, {"no_proxy", 0}, {"all_proxy", 0},
    {"HTTP_PROXY", 0}, {"HTTPS_PROXY", 0}, {"NO_PROXY", 0}, {"ALL_PROXY", 0},
    {"SSL_CERT_FILE", 0}, {"SSL_CERT_DIR", 0}, {"NODE_EXTRA_CA_CERTS", 0},
    {"REQUESTS_CA_BUNDLE", 0}, {"CURL_CA_BUNDLE", 0},
    /* the user's tools (nvm's, pyenv's, ~/.local/bin), not a worktree's */
    {"PATH", 1},
    /* Go's build configuration (the header says why) */
    {"GOFLAGS", 0}, {"GOPROXY", 0}, {"GOPRIVATE", 0}, {"GONOPROXY", 0}, {"GONOSUMDB", 0},
    {"GOSUMDB", 0}, {"GOINSECURE", 0}, {"GOTOOLCHAIN", 0},
    {"GOROOT", 1}, {"GOPATH", 1}, {"GOMODCACHE", 1}, {"GOCACHE", 1},
    /* the daemon's own settings (its getenv calls), and which wtproxy the
     * middleware's helpers run (a worktree's own build of it dropped) */
    {"WTPROXY_CONTROL", 0}, {"WTPROXY_CONFIG", 0}, {"WTPROXY_REGISTRY", 0},
    {"WTPROXY_REGISTRY_OPTIONAL", 0}, {"WTPROXY_MACHINE", 0}, {"WTPROXY_LOG_MAX_BYTES", 0},
    {"WTPROXY_BIN", 1},
    /* a sanitizer build's runtime: how wtproxy reports its own bugs */
    {"*SAN_OPTIONS", 0},
};
/* clang-format on */

/* The entry of kept whose pattern the name of var ("NAME=value") matches,
 * or NULL (also for a string without '=', which execve allows). */
static const struct kept *kept_entry(const char *var)
{
    char name[256];
    size_t n = strcspn(var, "=");
    if (n >= sizeof name || var[n] != '=')
        return NULL;
    memcpy(name, var, n);
    name[n] = '\0';
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        if (fnmatch(kept[i].name, name, 0) == 0)
            return &kept[i];
    return NULL;
}

/* Whether path is root or lies under it (root "" is no worktree). */
static int inside(const char *path, const char *root)
{
    size_t n = strlen(root);
    return n > 0 && strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Whether one entry of a path list is dropped: relative, or inside root
 * as written or once resolved (a symlinked folder leading into it). */
static int dropped_entry(const char *entry, const char *root)
{
    char real[PATH_MAX];
    if (entry[0] != '/')
        return 1;
    return inside(entry, root) || (realpath(entry, real) && inside(real, root));
}

/* var ("NAME=a:b:c") without its entries dropped for root: a malloc'd
 * "NAME=..." (NULL when none is left, or out of memory), the count of
 * dropped entries added to *ndropped. */
static char *filter_paths(const char *var, const char *root, int *ndropped)
{
    size_t n = strcspn(var, "=") + 1, len = n;
    char *out = malloc(strlen(var) + 1), *copy = strdup(var + n), *save = NULL;
    if (!out || !copy) {
        free(out);
        free(copy);
        return NULL;
    }
    memcpy(out, var, n);
    /* strtok_r skips empty entries: they mean the current folder, dropped too */
    for (char *e = strtok_r(copy, ":", &save); e; e = strtok_r(NULL, ":", &save)) {
        if (dropped_entry(e, root)) {
            (*ndropped)++;
            continue;
        }
        len += (size_t)sprintf(out + len, "%s%s", len > n ? ":" : "", e);
    }
    out[len] = '\0';
    free(copy);
    if (len > n)
        return out;
    free(out);
    return NULL;
}

/* Append ", NAME" of var to list (or "NAME" first), keeping room for the
 * count of names that did not fit. */
static void add_name(char *list, size_t cap, int *over, const char *var)
{
    size_t used = strlen(list), n = strcspn(var, "=");
    if (used + n + 2 >= cap - 32) {
        (*over)++;
        return;
    }
    snprintf(list + used, cap - used, "%s%.*s", used ? ", " : "", (int)n, var);
}

/* The subcommand this process runs (`wtproxy run`), from its argv: the
 * first word after the program that is not a flag. */
static void own_command(char *out, size_t len)
{
    char args[4096];
    FILE *f = fopen("/proc/self/cmdline", "re");
    size_t n = f ? fread(args, 1, sizeof args - 1, f) : 0;
    if (f)
        fclose(f);
    args[n] = '\0';
    snprintf(out, len, "wtproxy");
    for (size_t at = strlen(args) + 1; at < n; at += strlen(args + at) + 1)
        if (args[at] != '-') {
            snprintf(out, len, "wtproxy %.64s", args + at);
            return;
        }
}

/* The log line: who started the daemon, and what it dropped, by name. */
static void describe(struct cli_daemon_env *d, const char *cwd, const char *root, const char *names,
                     int over, int ndropped)
{
    char cmd[80], more[32] = "", entries[PATH_MAX + 64] = "";
    own_command(cmd, sizeof cmd);
    if (over)
        snprintf(more, sizeof more, " and %d more", over);
    if (ndropped)
        snprintf(entries, sizeof entries,
                 "; %d entries of PATH (or WTPROXY_BIN, GOPATH...) inside %s or relative", ndropped,
                 root[0] ? root : "no worktree");
    snprintf(d->line, sizeof d->line,
             "wtproxy: autostarted by `%s` (pid %ld, cwd %s) with a clean environment, not "
             "that command's: dropped %s%s%s; a .wtproxy server that needs a variable sets it in "
             "its start line (wtproxy help wtproxy-file), or start the daemon yourself with "
             "your environment: setsid -f wtproxy serve\n",
             cmd, (long)getpid(), cwd, names[0] ? names : "nothing", more, entries);
}

int cli_daemon_env(struct cli_daemon_env *d, char *err, size_t errlen)
{
    char cwd[PATH_MAX] = "?", names[1536] = "";
    struct host_worktree wt = {.root = ""};
    if (!getcwd(cwd, sizeof cwd) || host_worktree_of(cwd, &wt, NULL, 0) < 0)
        wt.root[0] = '\0'; /* in no worktree: only relative entries are dropped */
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    d->env = calloc(n + 1, sizeof *d->env);
    d->own = calloc(n + 1, sizeof *d->own);
    if (!d->env || !d->own) {
        snprintf(err, errlen, "cannot start the daemon: out of memory");
        return -1;
    }
    int over = 0, ndropped = 0, nown = 0;
    for (size_t i = 0; i < n; i++) {
        const struct kept *e = kept_entry(environ[i]);
        char *v = e && e->paths ? filter_paths(environ[i], wt.root, &ndropped) : NULL;
        if (v)
            d->env[k++] = d->own[nown++] = v;
        else if (e && !e->paths)
            d->env[k++] = environ[i];
        else if (!e)
            add_name(names, sizeof names, &over, environ[i]);
    }
    describe(d, cwd, wt.root, names, over, ndropped);
    return 0;
}

void cli_daemon_env_free(struct cli_daemon_env *d)
{
    for (size_t i = 0; d->own && d->own[i]; i++)
        free(d->own[i]);
    free(d->own);
    free(d->env);
    d->own = d->env = NULL;
}
