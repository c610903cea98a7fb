/* dashboard.c - `wtproxy dashboard`: print the dashboard's URL, one per
 * front port the running daemon listens on (its ping reply's "listen";
 * PROTOCOL.md), starting a daemon first as `wtproxy run` would. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

#include "registry.h"

/* "127.0.0.1:8000" -> "http://127.0.0.1:8000/__wtproxy/"; a wildcard
 * address becomes its loopback one (the dashboard answers loopback only).
 * Returns the front port, or -1 for a name that is not HOST:PORT. */
static int print_url(const char *name, const int *printed, size_t nprinted)
{
    char host[320];
    int port;
    if (reg_split_hostport(name, host, sizeof host, &port) < 0)
        return -1;
    for (size_t i = 0; i < nprinted; i++)
        if (printed[i] == port)
            return port; /* [::1]:8000 after 127.0.0.1:8000: one URL per port */
    int v6 = strchr(host, ':') != NULL;
    if (strcmp(host, "0.0.0.0") == 0)
        snprintf(host, sizeof host, "127.0.0.1");
    else if (strcmp(host, "::") == 0)
        snprintf(host, sizeof host, "::1");
    printf(v6 ? "http://[%s]:%d/__wtproxy/\n" : "http://%s:%d/__wtproxy/\n", host, port);
    return port;
}

int cli_dashboard_main(int argc, char **argv)
{
    int no_autostart = 0;
    const struct cli_opt opts[] = {{"no-autostart", NULL, &no_autostart}, {NULL, NULL, NULL}};
    char err[1024];
    int r = cli_parse(argc, argv, opts, NULL, err, sizeof err);
    if (r > 0)
        return CLI_HELP;
    if (r < 0) {
        fprintf(stderr, "wtproxy dashboard: %s (see wtproxy dashboard --help)\n", err);
        return 2;
    }
    json_t *req = json_pack("{s:s}", "op", "ping"), *reply = NULL;
    r = req ? cli_call(req, cli_daemon_start_allowed(no_autostart), &reply, err, sizeof err) : -1;
    json_decref(req);
    if (r < 0) {
        fprintf(stderr, "wtproxy: %s\n", req ? err : "out of memory");
        return 1;
    }
    json_t *listen = json_object_get(reply, "listen");
    int printed[64];
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(listen) && n < sizeof printed / sizeof printed[0]; i++) {
        const char *name = json_string_value(json_array_get(listen, i));
        int port = name ? print_url(name, printed, n) : -1;
        if (port > 0)
            printed[n++] = port;
    }
    if (n == 0)
        fprintf(stderr,
                "wtproxy: the daemon (pid %lld) did not say where it listens; it may be "
                "older than this wtproxy: restart it (kill it, then run wtproxy "
                "dashboard again)\n",
                (long long)json_integer_value(json_object_get(reply, "pid")));
    json_decref(reply);
    return n ? 0 : 1;
}
