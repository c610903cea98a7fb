/* daemon_flags.c - the flags a running daemon was started with, kept in
 * the command that starts it again (`wtproxy stop --daemon`, doctor's
 * fixes that restart it on more ports). A Rails user's `serve
 * --trust-registry` was stopped, and the command said to start it again
 * was `serve --listen 8461` alone: pasted, every server without
 * /__whoami got 502 no-whoami. Read from the daemon's /proc cmdline: its
 * arguments after `serve`, except where it listens (the caller writes
 * those). Its --control and --state are kept with the rest: a daemon
 * started on another state file adopts none of the servers registered in
 * its own, and they wait unrouted. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "host.h"

/* Flags dropped with their value (`--listen N` or `--listen=N`); the
 * second only when the caller names a config of its own (WTPROXY_CONFIG:
 * the store of the shell it is pasted in, which doctor's fix moves a
 * daemon on another one to). */
static const char *const dropped[] = {"--listen", "--config"};

/* How many arguments of args (n left) the flag at args drops: 2, 1 for
 * its `=` form, 0 when it is kept. */
static int drops(const char *arg, int n, int config)
{
    for (size_t i = 0; i < (config ? 2u : 1u); i++) {
        size_t k = strlen(dropped[i]);
        if (strncmp(arg, dropped[i], k) == 0 && arg[k] == '=')
            return 1;
        if (strcmp(arg, dropped[i]) == 0)
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

void cli_daemon_flags(json_t *ping, int drop_config, char *out, size_t len)
{
    char path[PATH_MAX], args[8192];
    const char *argv[128];
    int n = 0;
    out[0] = '\0';
    json_int_t pid = json_integer_value(json_object_get(ping, "pid"));
    snprintf(path, sizeof path, "%s/%lld/cmdline", host_proc_dir, (long long)pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    if (!f)
        return;
    size_t got = fread(args, 1, sizeof args - 1, f);
    fclose(f);
    args[got] = '\0';
    for (size_t i = 0; i < got && n < 128; i += strlen(args + i) + 1)
        argv[n++] = args + i;
    int at = 1;
    while (at < n && strcmp(argv[at], "serve") != 0)
        at++;
    size_t used = 0;
    for (at++; at < n && used < len;) {
        int d = drops(argv[at], n - at, drop_config);
        if (d) {
            at += d;
            continue;
        }
        put_word(out, len, &used, argv[at++]);
    }
    if (used >= len) /* a cut flag would be another one */
        out[0] = '\0';
}
