/* reload_keys.c - the config keys a reload (SIGHUP) cannot change: the
 * registry, the control socket, the state file are opened once, at the
 * daemon's start. A reload that found `registry =` changed logged only
 * "reloaded configuration" while the daemon kept its old store and the
 * CLI (claim, leases, db) read the new one: two registries, unsaid. Now
 * each such key is named in the log with the command that restarts the
 * daemon as it was started, and the running value is kept. */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "host.h"
#include "reg_pg.h"
#include "server.h"

/* argv[i] as the daemon's log may show it: a --registry value with its
 * password masked. */
static const char *shown_arg(char **argv, int i, char *buf, size_t len)
{
    const char *a = argv[i];
    if (i > 0 && strcmp(argv[i - 1], "--registry") == 0) {
        reg_pg_mask(a, buf, len);
        return buf;
    }
    if (strncmp(a, "--registry=", 11) != 0)
        return a;
    memcpy(buf, a, 11);
    reg_pg_mask(a + 11, buf + 11, len - 11);
    return buf;
}

/* The command that starts this daemon again as it was started (its own
 * arguments, the config file named even when $WTPROXY_CONFIG gave it,
 * which the pasting shell may lack), in the background into the log it
 * writes now; under socket activation, its unit's restart. */
static void restart_cmd(const struct proxy_server *s, char *out, size_t len)
{
    char prog[PATH_MAX], log[PATH_MAX];
    host_self_program(prog, sizeof prog, NULL, 0);
    if (s->ninherited > 0) {
        snprintf(out, len, "systemctl --user restart wtproxy.service");
        return;
    }
    size_t used = (size_t)snprintf(out, len, "%s stop --daemon && setsid -f %s serve", prog, prog);
    int named = 0;
    char masked[REG_PG_URI_MAX + 64];
    for (int i = 0; i < s->argc && used < len; i++) {
        const char *a = shown_arg(s->argv, i, masked, sizeof masked);
        named |= strncmp(a, "--config", 8) == 0;
        int plain = a[0] && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789-_=./:,@+") == strlen(a);
        used += (size_t)snprintf(out + used, len - used, plain ? " %s" : " '%s'", a);
    }
    if (!named && s->cfg.config_path[0] && used < len)
        used += (size_t)snprintf(out + used, len - used, " --config %s", s->cfg.config_path);
    ssize_t n = readlink("/proc/self/fd/2", log, sizeof log - 1);
    if (n > 0 && log[0] == '/' && strncmp(log, "/dev/", 5) != 0 && used < len) {
        log[n] = '\0';
        snprintf(out + used, len - used, " >>%s 2>&1", log);
    }
}

json_t *proxy_start_flags(const struct proxy_server *s)
{
    json_t *arr = json_array();
    char masked[REG_PG_URI_MAX + 64];
    int named = 0;
    for (int i = 0; arr && i < s->argc; i++) {
        const char *a = shown_arg(s->argv, i, masked, sizeof masked);
        named |= strncmp(a, "--config", 8) == 0;
        json_array_append_new(arr, json_string(a));
    }
    if (arr && !named && s->cfg.config_path[0]) { /* $WTPROXY_CONFIG gave it */
        json_array_append_new(arr, json_string("--config"));
        json_array_append_new(arr, json_string(s->cfg.config_path));
    }
    return arr;
}

/* The keys read only at the daemon's start: a reload that finds one
 * changed says so, with the restart, and keeps the running value. The
 * registry above all: the CLI reads the new one at once (claims, leases,
 * db), while the daemon's leases and mirror stay on the old store. */
void proxy_keep_start_only(struct proxy_server *s, struct proxy_config *cfg)
{
    static const struct {
        const char *key;
        size_t off;
    } keys[] = {{"registry", offsetof(struct proxy_config, registry)},
                {"control_socket", offsetof(struct proxy_config, control_socket)},
                {"state_file", offsetof(struct proxy_config, state_file)}};
    char cmd[2 * PATH_MAX + 1024];
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char *now = (char *)&s->cfg + keys[i].off, *read = (char *)cfg + keys[i].off;
        if (strcmp(now, read) == 0)
            continue;
        restart_cmd(s, cmd, sizeof cmd);
        proxy_log("%s changed in %s: takes effect only when the daemon restarts: %s; until then "
                  "it keeps the %s it started with%s",
                  keys[i].key, cfg->config_path[0] ? cfg->config_path : "the flags", cmd,
                  keys[i].key,
                  i == 0 ? ", while commands whose WTPROXY_CONFIG is this file (claim, leases, "
                           "doctor) use the new one"
                         : "");
        strcpy(read, now); /* same field, same size */
    }
}
