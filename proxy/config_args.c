/* config_args.c - `wtproxy serve` flags: `--KEY VALUE` or `--KEY=VALUE`,
 * KEY written with '-' for '_', --config FILE read first wherever it
 * stands, then $WTPROXY_CONFIG when it is absent. Apart from the file
 * (config_file.c) because the order of the three sources is decided here. */
#include "config_int.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --control and --state: the short flags for the two paths every script
 * and test passes. */
static void resolve_alias(char *key, size_t keylen)
{
    static const char *const aliases[][2] = {{"control", "control_socket"},
                                             {"state", "state_file"}};
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(key, aliases[i][0]) == 0) {
            snprintf(key, keylen, "%s", aliases[i][1]);
            return;
        }
}

/* Read the flag at argv[*i] and its value, and move *i past both. key gets
 * the flag's name with '_' for '-'; "config" is a flag but not a key.
 * Returns 0, 1 for -h/--help, or -1 with err (unknown flag, no value). */
static int next_flag(int argc, char **argv, int *i, char *key, size_t keylen, const char **value,
                     char *err, size_t errlen)
{
    const char *arg = argv[*i], *eq = strchr(arg, '=');
    size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    const struct key *k = NULL;

    key[0] = '\0';
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
        return 1;
    if (arg[0] != '-') {
        snprintf(err, errlen,
                 "unexpected argument \"%s\" for wtproxy serve (see wtproxy serve --help)", arg);
        return -1;
    }
    if (strncmp(arg, "--", 2) == 0 && n > 2 && n - 2 < keylen) {
        for (size_t j = 2; j < n; j++)
            key[j - 2] = arg[j] == '-' ? '_' : arg[j];
        key[n - 2] = '\0';
        resolve_alias(key, keylen);
        k = proxy_config_find_key(key);
    }
    if (!k && strcmp(key, "config") != 0) {
        snprintf(err, errlen,
                 "unknown option \"%.*s\" for wtproxy serve (see wtproxy serve --help)", (int)n,
                 arg);
        return -1;
    }
    if (eq) {
        *value = eq + 1;
        *i += 1;
    } else if (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2) != 0) {
        *value = argv[*i + 1];
        *i += 2;
    } else if (k && k->kind == K_SWITCH) { /* --trust-registry alone means on */
        *value = "on";
        *i += 1;
    } else {
        snprintf(err, errlen, "option %s needs a value (%s)", arg,
                 k ? proxy_config_metavar(k->kind) : "FILE");
        return -1;
    }
    return 0;
}

int proxy_config_from_args(struct proxy_config *c, int argc, char **argv, char *err, size_t errlen)
{
    char key[64], msg[1024];
    const char *value = NULL, *config = NULL;
    int i, rc, from_env = 0, listen_seen = 0;

    /* Check every flag first, and find --config wherever it is: the file
     * must apply before any flag, and --help before any complaint. */
    for (i = 0; i < argc;) {
        if ((rc = next_flag(argc, argv, &i, key, sizeof key, &value, err, errlen)) != 0)
            return rc;
        if (strcmp(key, "config") != 0)
            continue;
        if (config) {
            snprintf(err, errlen, "--config given twice (\"%s\", \"%s\")", config, value);
            return -1;
        }
        config = value;
    }
    proxy_config_defaults(c);
    if (!config) {
        config = getenv("WTPROXY_CONFIG");
        if (config && *config == '\0')
            config = NULL;
        from_env = config != NULL;
    }
    if (config && proxy_config_load_file(c, config, msg, sizeof msg) < 0) {
        /* Where the fix goes: the variable, or the flag (a bad line names its own). */
        const char *fix = from_env ? "; $WTPROXY_CONFIG names it: fix or unset WTPROXY_CONFIG"
                          : access(config, R_OK) < 0
                              ? "; give --config a readable file (wtproxy help config "
                                "shows every key)"
                              : "";
        snprintf(err, errlen, "%s%s", msg, fix);
        return -1;
    }
    for (i = 0; i < argc;) {
        next_flag(argc, argv, &i, key, sizeof key, &value, err, errlen);
        if (strcmp(key, "config") == 0)
            continue;
        if (strcmp(key, "listen") == 0 && !listen_seen++)
            c->nlisten = 0;
        if (proxy_config_set(c, key, value, err, errlen) < 0)
            return -1;
    }
    return 0;
}
