/* daemon_flags.c - the flags a running daemon was started with, kept in
 * the command that starts it again (`wtproxy stop --daemon`, doctor's
 * fixes that restart it on more ports). A Rails user's `serve
 * --trust-registry` was stopped, and the command said to start it again
 * was `serve --listen 8461` alone: pasted, every server without
 * /__whoami got 502 no-whoami. Read from the daemon's /proc cmdline: its
 * arguments after `serve`, except where it listens (the caller writes
 * those). Its --control and --state are kept with the rest: a daemon
 * started on another state file adopts none of the servers registered in
 * its own, and they wait unrouted.
 *
 * A daemon that died has no cmdline: its state file keeps its arguments
 * and registry (registry/reg_store.c's "daemon"), and the start printed
 * after its death repeats them. A daemon started with --registry was
 * killed, and the start `wtproxy ls` printed had no --registry: pasted, it
 * ran on the embedded store, and two machines held one emulator. The
 * registry is repeated also when it came from the environment or a config
 * file that the pasting shell lacks, and a password is never printed. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "host.h"
#include "reg_pg.h"

/* Flags dropped with their value (`--listen N` or `--listen=N`): where it
 * listens always (the caller writes those); its config when the caller
 * names a config of its own (WTPROXY_CONFIG: the store of the shell it is
 * pasted in, which doctor's fix moves a daemon on another one to); its
 * control socket when the caller names it. */
static const struct {
    const char *flag;
    int when; /* 0 always, else the bit of cli_daemon_flags's drop */
} dropped[] = {{"--listen", 0},
               {"--config", CLI_DROP_CONFIG},
               {"--control", CLI_DROP_CONTROL},
               {"--control-socket", CLI_DROP_CONTROL}};

/* How many arguments of args (n left) the flag at args drops: 2, 1 for
 * its `=` form, 0 when it is kept. */
static int drops(const char *arg, int n, int drop)
{
    for (size_t i = 0; i < sizeof dropped / sizeof dropped[0]; i++) {
        size_t k = strlen(dropped[i].flag);
        if (dropped[i].when && !(drop & dropped[i].when))
            continue;
        if (strncmp(arg, dropped[i].flag, k) == 0 && arg[k] == '=')
            return 1;
        if (strcmp(arg, dropped[i].flag) == 0)
            return n > 1 ? 2 : 1;
    }
    return 0;
}

/* arg for /bin/sh, single-quoted when it holds anything but plain
 * characters, appended to out at *used. */
static void put_word(char *out, size_t len, size_t *used, const char *arg)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                "_-./:=,@%+";
    int quote = !arg[0] || strspn(arg, plain) != strlen(arg);
    if (*used >= len)
        return;
    *used += (size_t)snprintf(out + *used, len - *used, " %s", quote ? "'" : "");
    for (const char *p = arg; *p && *used < len; p++) {
        if (*p == '\'' && quote) /* ' ends the quote, \' is one, ' opens it again */
            *used += (size_t)snprintf(out + *used, len - *used, "'\\''");
        else {
            out[(*used)++] = *p; /* kept terminated; a full out is cleared (used == len) */
            out[*used < len ? *used : len - 1] = '\0';
        }
    }
    if (quote && *used < len)
        *used += (size_t)snprintf(out + *used, len - *used, "'");
}

/* argv[i] as a message may show it: a --registry value (after the flag,
 * or in its `=` form) with its password masked into buf. */
static const char *shown(const char *const *argv, int i, char *buf, size_t len)
{
    if (i > 0 && strcmp(argv[i - 1], "--registry") == 0) {
        reg_pg_mask(argv[i], buf, len);
        return buf;
    }
    if (strncmp(argv[i], "--registry=", 11) != 0)
        return argv[i];
    snprintf(buf, len, "--registry=");
    reg_pg_mask(argv[i] + 11, buf + 11, len - 11);
    return buf;
}

/* The running daemon's arguments after its program, from /proc, into
 * argv (up to max, pointing into args). Returns their count, 0 when its
 * cmdline cannot be read. */
static int proc_args(json_t *ping, char *args, size_t alen, const char **argv, int max)
{
    char path[PATH_MAX];
    int n = 0;
    json_int_t pid = json_integer_value(json_object_get(ping, "pid"));
    snprintf(path, sizeof path, "%s/%lld/cmdline", host_proc_dir, (long long)pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    if (!f)
        return 0;
    size_t got = fread(args, 1, alen - 1, f);
    fclose(f);
    args[got] = '\0';
    for (size_t i = 0; i < got && n < max; i += strlen(args + i) + 1)
        argv[n++] = args + i;
    int at = 1;
    while (at < n && strcmp(argv[at], "serve") != 0)
        at++;
    at = at < n ? at + 1 : n;
    memmove(argv, argv + at, (size_t)(n - at) * sizeof *argv);
    return n - at;
}

/* The state file's daemon's arguments into argv (pointing into rec). */
static int record_args(json_t *rec, const char **argv, int max)
{
    int n = 0;
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(rec, "flags"), i, a) {
        if (json_is_string(a) && n < max)
            argv[n++] = json_string_value(a);
    }
    return n;
}

/* The registry to repeat: the daemon's (masked), else the one before it
 * ran on; none when this shell configures one (its own is then meant, as
 * doctor's store check says) or it cannot be read. */
static const char *registry_to_repeat(json_t *ping, json_t *rec)
{
    char uri[REG_PG_URI_MAX], err[512];
    if (reg_pg_configured(uri, sizeof uri, err, sizeof err) != 0)
        return NULL;
    json_t *from = ping ? ping : rec;
    const char *r = json_string_value(json_object_get(from, "registry"));
    return r ? r : json_string_value(json_object_get(from, "registry_before"));
}

void cli_daemon_flags(json_t *ping, int drop, char *out, size_t len)
{
    char args[8192], masked[REG_PG_URI_MAX + 64];
    const char *argv[128];
    json_t *rec = ping ? NULL : cli_state_daemon();
    int n = ping ? proc_args(ping, args, sizeof args, argv, 128) : record_args(rec, argv, 128);
    int named = 0;
    size_t used = 0;
    out[0] = '\0';
    for (int at = 0; at < n && used < len;) {
        int d = drops(argv[at], n - at, drop);
        if (d) {
            at += d;
            continue;
        }
        named |= strcmp(argv[at], "--registry") == 0 || strncmp(argv[at], "--registry=", 11) == 0;
        put_word(out, len, &used, shown(argv, at, masked, sizeof masked));
        at++;
    }
    const char *registry = named ? NULL : registry_to_repeat(ping, rec);
    if (registry && used < len) {
        put_word(out, len, &used, "--registry");
        put_word(out, len, &used, registry);
    }
    json_decref(rec);
    if (used >= len) /* a cut flag would be another one */
        out[0] = '\0';
}
