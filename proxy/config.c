/* config.c - the daemon's settings: the one table of keys (name, kind of
 * value, field, default, range, help) that drives the defaults, the file,
 * the flags, their error messages and `wtproxy serve --help`. The values
 * of each kind are config_value.c's, the file config_file.c's, the flags
 * config_args.c's; this file is what reads the table whole. */
#include "config_int.h"

#include <string.h>

#define DAY (24 * HOUR) /* the longest timeout or grace: a typo in a unit, not a wish */
#define FIELD(f) offsetof(struct proxy_config, f), sizeof(((struct proxy_config *)0)->f)

/* Defaults are proxy_limits.h's; the listen, backend and path keys have
 * none here (proxy_config_defaults sets the listener; "" is no backend or
 * the per-user default path). */
static const struct key keys[] = {
    {"listen", K_LISTEN, FIELD(listen), 0, 0, 65535,
     "address to serve; a bare PORT is 127.0.0.1 and ::1"},
    {"backend", K_HOSTPORT, FIELD(backend), 0, 1, 65535,
     "HOST:PORT requests go to; none: 503 no-backend"},
    {"max_head_size", K_SIZE, FIELD(max_head_size), WTP_MAX_HEAD_SIZE, 1, 64 * MIB,
     "largest request head; over: 431 head-too-large"},
    {"max_header_count", K_COUNT, FIELD(max_header_count), WTP_MAX_HEADER_COUNT, 1, WTP_FIELDS_CAP,
     "most request header lines; over: 431 too-many-headers"},
    {"max_request_line", K_SIZE, FIELD(max_request_line), WTP_MAX_REQUEST_LINE, 1, 64 * MIB,
     "longest request line; over: 414 request-line-too-long"},
    {"max_response_head", K_SIZE, FIELD(max_response_head), WTP_MAX_RESPONSE_HEAD, 1, 64 * MIB,
     "largest backend response head; over: 502"},
    {"head_timeout", K_DURATION, FIELD(head_timeout_ms), WTP_HEAD_TIMEOUT_MS, 1, DAY,
     "first byte to end of request head; over: 408"},
    {"keepalive_timeout", K_DURATION, FIELD(keepalive_timeout_ms), WTP_KEEPALIVE_TIMEOUT_MS, 1, DAY,
     "idle client connections are closed after this"},
    {"connect_timeout", K_DURATION, FIELD(connect_timeout_ms), WTP_CONNECT_TIMEOUT_MS, 1, DAY,
     "backend connect; over: 502 backend-unreachable"},
    {"response_timeout", K_DURATION, FIELD(response_timeout_ms), WTP_RESPONSE_TIMEOUT_MS, 1, DAY,
     "request sent to response head; over: 504"},
    {"body_timeout", K_DURATION, FIELD(body_timeout_ms), WTP_BODY_TIMEOUT_MS, 1, DAY,
     "no body byte either way this long: connection closed"},
    {"shutdown_timeout", K_DURATION, FIELD(shutdown_timeout_ms), WTP_SHUTDOWN_TIMEOUT_MS, 1, DAY,
     "on SIGTERM, in-flight requests get this long"},
    {"buffer_size", K_SIZE, FIELD(buffer_size), WTP_BUFFER_SIZE, 1, GIB,
     "unsent bytes per direction before reading pauses"},
    {"pool_size", K_COUNT, FIELD(pool_size), WTP_POOL_SIZE, 0, 100000,
     "idle backend connections kept per backend; 0: none"},
    {"pool_idle", K_DURATION, FIELD(pool_idle_ms), WTP_POOL_IDLE_MS, 1, DAY,
     "pooled idle backend connections close after this"},
    {"max_connections", K_COUNT, FIELD(max_connections), WTP_MAX_CONNECTIONS, 1, 1000000,
     "client connections at once; more wait to be accepted"},
    {"start_timeout", K_DURATION, FIELD(start_timeout_ms), WTP_START_TIMEOUT_MS, 1, DAY,
     "a request waits this long for a starting backend; over: 503"},
    {"start_max_load", K_LOAD, FIELD(start_max_load_pct), 0, 0, 100000,
     "on-demand starts wait while the load per CPU is above this; 0: off"},
    {"reload_grace", K_DURATION, FIELD(reload_grace_ms), WTP_RELOAD_GRACE_MS, 0, DAY,
     "a live backend refusing connections is retried this long; then 502"},
    {"whoami", K_SWITCH, FIELD(whoami), 1, 0, 1,
     "check each backend's /__whoami before it serves a request"},
    {"whoami_timeout", K_DURATION, FIELD(whoami_timeout_ms), WTP_WHOAMI_TIMEOUT_MS, 1, DAY,
     "one GET /__whoami to a backend; over: 502 whoami-invalid"},
    {"stale_grace", K_DURATION, FIELD(stale_grace_ms), WTP_STALE_GRACE_MS, 0, DAY,
     "a backend older than the code on disk may reload this long; then 409"},
    {"trust_registry", K_SWITCH, FIELD(trust_registry), 0, 0, 1,
     "a backend without /__whoami is trusted from its registration"},
    {"whoami_inotify", K_SWITCH, FIELD(whoami_inotify), 1, 0, 1,
     "watch worktrees with inotify; off: a stat scan per request"},
    {"control_socket", K_PATH, FIELD(control_socket), 0, 0, 0,
     "control socket; empty: $XDG_RUNTIME_DIR/wtproxy/control.sock"},
    {"state_file", K_PATH, FIELD(state_file), 0, 0, 0,
     "registrations saved here; empty: ~/.local/state/wtproxy/registry.json"},
    {"registry", K_URI, FIELD(registry), 0, 0, 0,
     "PostgreSQL registry (libpq URI or conninfo); empty: the embedded store"},
};

#define NKEYS (sizeof keys / sizeof keys[0])

void proxy_config_defaults(struct proxy_config *c)
{
    memset(c, 0, sizeof *c);
    c->nlisten = 1;
    c->listen[0].port = WTP_DEFAULT_FRONT_PORT;
    for (size_t i = 0; i < NKEYS; i++)
        if (keys[i].def)
            set_number(c, &keys[i], keys[i].def); /* 0 is memset's */
}

const struct key *proxy_config_find_key(const char *name)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].name, name) == 0)
            return &keys[i];
    return NULL;
}

void proxy_config_usage(FILE *f)
{
    struct proxy_config d;
    char flag[64], def[96];

    proxy_config_defaults(&d);
    fputs("usage: wtproxy serve [--config FILE] [--listen [ADDR:]PORT]... "
          "[--backend HOST:PORT] [--KEY VALUE]...\n\n"
          "Serve HTTP on local ports and relay each request to its backend.\n"
          "Settings: the defaults below, then the config file (--config FILE, else\n"
          "$WTPROXY_CONFIG), then flags. Every flag is a config key with '-' for '_'\n"
          "(--head-timeout 2s is head_timeout = 2s); --listen may be repeated.\n"
          "Durations: 500ms, 10s, 2m, 1h (bare number = ms). Sizes: 8192, 64k, 1m, 1g.\n\n",
          f);
    fprintf(f, "  %-29s %-7s %s\n", "flag", "default", "what it does");
    fprintf(f, "  %-29s %-7s %s\n", "--config FILE", "none", "read settings from FILE");
    fprintf(f, "  %-29s %-7s %s\n", "--control PATH", "", "short for --control-socket PATH");
    fprintf(f, "  %-29s %-7s %s\n", "--state FILE", "", "short for --state-file FILE");
    for (size_t i = 0; i < NKEYS; i++) {
        size_t n = (size_t)snprintf(flag, sizeof flag, "--%s %s", keys[i].name,
                                    proxy_config_metavar(keys[i].kind));
        for (size_t j = 2; j < n && flag[j] != ' '; j++)
            if (flag[j] == '_')
                flag[j] = '-';
        proxy_config_format_value(&keys[i], &d, def, sizeof def);
        fprintf(f, "  %-29s %-7s %s\n", flag, def[0] ? def : "none", keys[i].help);
    }
    fprintf(f, "  %-29s %-7s %s\n", "-h, --help", "", "print this help");
}
