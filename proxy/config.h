/* config.h - the daemon's settings: defaults (proxy_limits.h), then the config
 * file, then command-line flags, in that order. SIGHUP redoes all three. */
#ifndef WTP_CONFIG_H
#define WTP_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#include "proxy_limits.h"

struct proxy_listen {
    char host[64]; /* "" = both 127.0.0.1 and ::1; else an address literal */
    int port;      /* 0 = any free port (tests use it) */
};

struct proxy_config {
    char config_path[PATH_MAX]; /* "" = no file: embedded defaults */
    struct proxy_listen listen[WTP_MAX_LISTEN];
    int nlisten;
    char backend[320]; /* "HOST:PORT" of the default backend, "" = none */

    size_t max_head_size;
    size_t max_header_count;
    size_t max_request_line;
    size_t max_response_head;
    unsigned head_timeout_ms;
    unsigned keepalive_timeout_ms;
    unsigned connect_timeout_ms;
    unsigned response_timeout_ms;
    unsigned body_timeout_ms;
    unsigned shutdown_timeout_ms;
    size_t buffer_size;
    unsigned pool_size;
    unsigned pool_idle_ms;
    unsigned max_connections;
    unsigned start_timeout_ms;
    unsigned start_max_load_pct; /* the 1-minute load per CPU, in hundredths; 0 = no limit */
    unsigned reload_grace_ms;
    unsigned whoami; /* the /__whoami gate is on */
    unsigned whoami_timeout_ms;
    unsigned stale_grace_ms;
    unsigned trust_registry;
    unsigned whoami_inotify;
    char control_socket[PATH_MAX]; /* "" = the per-user default */
    char state_file[PATH_MAX];     /* "" = the per-user default */
    char registry[1024];           /* PostgreSQL store (libpq URI/conninfo); "" = embedded */
};

/* Fill every field with its default from proxy_limits.h; one listener on
 * WTP_DEFAULT_FRONT_PORT (both loopbacks), no backend, no file. */
void proxy_config_defaults(struct proxy_config *c);

/* Set one key ("head_timeout", "listen", ...) from its text value. Durations
 * take ms/s/m/h suffixes (bare number = ms); sizes take k/m/g (KiB, MiB, GiB;
 * bare number = bytes). "listen" appends a listener: "PORT", "ADDR:PORT",
 * "[V6ADDR]:PORT". Returns 0, or -1 with a one-line message in err naming
 * the key and the value expected. */
int proxy_config_set(struct proxy_config *c, const char *key, const char *value, char *err,
                     size_t errlen);

/* Read a `key = value` file ('#' comments, blank lines). Listen lines in the
 * file replace the default listener. Returns 0, or -1 with "FILE:LINE: ..."
 * in err. */
int proxy_config_load_file(struct proxy_config *c, const char *path, char *err, size_t errlen);

/* Parse `wtproxy serve` arguments: --config FILE is read first, whatever its
 * position; then each --KEY VALUE or --KEY=VALUE (KEY with dashes for the
 * underscores of the file's key) applies in order; --listen given on the
 * command line replaces the file's listeners. If no --config is given and
 * $WTPROXY_CONFIG is set, that file is read. Returns 0, 1 when --help was
 * asked, or -1 with a one-line message in err (unknown flag, bad value). */
int proxy_config_from_args(struct proxy_config *c, int argc, char **argv, char *err, size_t errlen);

/* Print `wtproxy serve --help` (every flag with its default) to f. */
void proxy_config_usage(FILE *f);

#endif
