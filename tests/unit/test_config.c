/* test_config.c - the values (proxy/config.c's key table, config_value.c):
 * defaults, every key, every kind of bad value, listen and backend
 * addresses. Includes the .c files to reach their statics. The file and the
 * flags are test_config_file.c's. */
#include "../../proxy/config.c"
#include "../../proxy/config_args.c"
#include "../../proxy/config_file.c"
#include "../../proxy/config_value.c"

#include <stdint.h>

#include "tap.h"

static char err[1024];

static void test_defaults(void)
{
    struct proxy_config c;

    proxy_config_defaults(&c);
    is_int(c.nlisten, 1, "one default listener");
    is_str(c.listen[0].host, "", "default listener is both loopbacks");
    is_int(c.listen[0].port, WTP_DEFAULT_FRONT_PORT, "default port");
    is_str(c.backend, "", "no default backend");
    is_str(c.config_path, "", "no config file");
    is_int((long long)c.max_head_size, WTP_MAX_HEAD_SIZE, "max_head_size default");
    is_int((long long)c.max_header_count, WTP_MAX_HEADER_COUNT, "max_header_count default");
    is_int((long long)c.max_request_line, WTP_MAX_REQUEST_LINE, "max_request_line default");
    is_int((long long)c.max_response_head, WTP_MAX_RESPONSE_HEAD, "max_response_head default");
    is_int(c.head_timeout_ms, WTP_HEAD_TIMEOUT_MS, "head_timeout default");
    is_int(c.keepalive_timeout_ms, WTP_KEEPALIVE_TIMEOUT_MS, "keepalive_timeout default");
    is_int(c.connect_timeout_ms, WTP_CONNECT_TIMEOUT_MS, "connect_timeout default");
    is_int(c.response_timeout_ms, WTP_RESPONSE_TIMEOUT_MS, "response_timeout default");
    is_int(c.body_timeout_ms, WTP_BODY_TIMEOUT_MS, "body_timeout default");
    is_int(c.shutdown_timeout_ms, WTP_SHUTDOWN_TIMEOUT_MS, "shutdown_timeout default");
    is_int((long long)c.buffer_size, WTP_BUFFER_SIZE, "buffer_size default");
    is_int(c.pool_size, WTP_POOL_SIZE, "pool_size default");
    is_int(c.pool_idle_ms, WTP_POOL_IDLE_MS, "pool_idle default");
    is_int(c.max_connections, WTP_MAX_CONNECTIONS, "max_connections default");
    is_int(NKEYS, 27, "twenty-seven keys in the table");
    is_int(c.start_max_load_pct, 0, "start_max_load is off by default");
    is_int(c.whoami, 1, "the /__whoami gate is on by default");
    is_int(c.whoami_timeout_ms, WTP_WHOAMI_TIMEOUT_MS, "whoami_timeout default");
    is_int(c.stale_grace_ms, WTP_STALE_GRACE_MS, "stale_grace default");
    is_int(c.trust_registry, 0, "trust_registry is off by default");
    is_int(c.whoami_inotify, 1, "whoami_inotify is on by default");
    is_int(c.start_timeout_ms, WTP_START_TIMEOUT_MS, "start_timeout default");
    is_int(c.reload_grace_ms, WTP_RELOAD_GRACE_MS, "reload_grace default");
    is_str(c.control_socket, "", "control_socket default: the per-user place");
    is_str(c.state_file, "", "state_file default: the per-user place");
    for (size_t i = 0; i < NKEYS; i++) {
        const struct key *k = &keys[i];
        if (k->kind == K_LISTEN || k->kind == K_HOSTPORT || k->kind == K_PATH || k->kind == K_URI)
            continue;
        ok(k->max <= (k->size == sizeof(size_t) ? SIZE_MAX : UINT_MAX), "%s: max fits its field",
           k->name);
        ok(get_number(&c, k) >= k->min && get_number(&c, k) <= k->max, "%s: default in range",
           k->name);
    }
}

static void test_good_values(void)
{
    static const struct {
        const char *key, *value;
        unsigned long long want;
    } cases[] = {
        {"head_timeout", "500ms", 500},    {"head_timeout", "10s", 10000},
        {"head_timeout", "2m", 120000},    {"head_timeout", "1h", 3600000},
        {"head_timeout", "750", 750},      {"head_timeout", "3S", 3000},
        {"head_timeout", "24h", 86400000}, {"max_head_size", "8192", 8192},
        {"max_head_size", "64k", 65536},   {"max_head_size", "2M", 2 * MIB},
        {"max_head_size", "4KiB", 4096},   {"max_head_size", "4kb", 4096},
        {"max_head_size", "100b", 100},    {"buffer_size", "1g", GIB},
        {"buffer_size", "1GiB", GIB},      {"pool_size", "0", 0},
        {"max_header_count", "1", 1},      {"max_connections", "1000000", 1000000},
        {"start_max_load", "150%", 150},   {"start_max_load", "2", 200},
    };
    struct proxy_config c;

    proxy_config_defaults(&c);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = proxy_config_set(&c, cases[i].key, cases[i].value, err, sizeof err);
        is_int(rc, 0, "%s = %s is accepted", cases[i].key, cases[i].value);
        is_int(get_number(&c, proxy_config_find_key(cases[i].key)), cases[i].want,
               "%s = %s is %llu", cases[i].key, cases[i].value, cases[i].want);
    }
    for (size_t i = 0; i < NKEYS; i++) { /* every numeric key, its own field */
        const struct key *k = &keys[i];
        const char *v = k->kind == K_DURATION ? "3s" : k->kind == K_SIZE ? "3k" : "3";
        if (k->kind == K_LISTEN || k->kind == K_HOSTPORT || k->kind == K_PATH || k->kind == K_URI)
            continue;
        proxy_config_defaults(&c);
        unsigned long long def = get_number(&c, k);
        if (k->kind == K_SWITCH) /* the other way from its default */
            v = def ? "off" : "on";
        is_int(proxy_config_set(&c, k->name, v, err, sizeof err), 0, "%s = %s", k->name, v);
        is_int(get_number(&c, k),
               k->kind == K_SWITCH     ? !def
               : k->kind == K_DURATION ? 3000
               : k->kind == K_SIZE     ? 3072
               : k->kind == K_LOAD     ? 300
                                       : 3,
               "%s = %s lands in its own field", k->name, v);
    }
}

static void test_switches(void)
{
    static const struct {
        const char *value;
        unsigned long long want;
    } cases[] = {
        {"on", 1},    {"off", 0}, {"yes", 1}, {"no", 0}, {"true", 1},
        {"false", 0}, {"1", 1},   {"0", 0},   {"ON", 1}, {"Off", 0},
    };
    struct proxy_config c;

    proxy_config_defaults(&c);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        is_int(proxy_config_set(&c, "trust_registry", cases[i].value, err, sizeof err), 0,
               "trust_registry = %s is accepted", cases[i].value);
        is_int(c.trust_registry, cases[i].want, "trust_registry = %s is %llu", cases[i].value,
               cases[i].want);
    }
    is_int(proxy_config_set(&c, "whoami", "maybe", err, sizeof err), -1, "whoami = maybe: refused");
    ok(strstr(err, "whoami") && strstr(err, "on or off"),
       "the message names the key and the words: %s", err);
}

static void test_paths(void)
{
    struct proxy_config c;
    char longpath[PATH_MAX + 8];

    proxy_config_defaults(&c);
    is_int(proxy_config_set(&c, "control_socket", "/tmp/t/control.sock", err, sizeof err), 0,
           "a control socket path is taken");
    is_str(c.control_socket, "/tmp/t/control.sock", "as written");
    is_int(proxy_config_set(&c, "state_file", "state.json", err, sizeof err), 0,
           "a relative state file is taken");
    is_str(c.state_file, "state.json", "as written");
    is_int(proxy_config_set(&c, "state_file", "", err, sizeof err), 0, "empty: the default");
    is_str(c.state_file, "", "cleared");
    memset(longpath, 'a', sizeof longpath - 1);
    longpath[sizeof longpath - 1] = '\0';
    is_int(proxy_config_set(&c, "control_socket", longpath, err, sizeof err), -1,
           "a path longer than PATH_MAX is rejected");
    has_str(err, "control_socket: ", "naming the key");
    is_str(c.control_socket, "/tmp/t/control.sock", "and changes nothing");
}

static void test_bad_values(void)
{
    static const char *bad[] = {"",
                                "-1",
                                "+1",
                                " 5",
                                "5 ",
                                "abc",
                                "10x",
                                "1.5",
                                "0x10",
                                "99999999999999999999999",
                                "18014398509481985k",
                                "4294967296"};
    struct proxy_config c, d;
    char want[256];

    proxy_config_defaults(&d);
    for (size_t i = 0; i < NKEYS; i++) {
        const struct key *k = &keys[i];
        if (k->kind == K_LISTEN || k->kind == K_HOSTPORT || k->kind == K_PATH || k->kind == K_URI)
            continue;
        for (size_t j = 0; j < sizeof bad / sizeof bad[0]; j++) {
            c = d;
            snprintf(want, sizeof want, "%s: \"%s\" ", k->name, bad[j]);
            is_int(proxy_config_set(&c, k->name, bad[j], err, sizeof err), -1,
                   "%s = \"%s\" is rejected", k->name, bad[j]);
            ok(strncmp(err, want, strlen(want)) == 0, "  naming key and value: %s", err);
            ok(get_number(&c, k) == get_number(&d, k), "  and changes nothing");
        }
        c = d;
        is_int(proxy_config_set(&c, k->name, "0", err, sizeof err), k->min == 0 ? 0 : -1,
               "%s = 0 %s", k->name, k->min == 0 ? "means none" : "is rejected");
    }
    is_int(proxy_config_set(&c, "head_timeout", "10x", err, sizeof err), -1, "10x rejected");
    is_str(err, "head_timeout: \"10x\" is not a duration (use e.g. 500ms, 10s, 2m)",
           "a bad duration says what a duration looks like");
    proxy_config_set(&c, "max_head_size", "12q", err, sizeof err);
    is_str(err, "max_head_size: \"12q\" is not a size (use e.g. 8192, 64k, 1m)", "bad size");
    proxy_config_set(&c, "pool_size", "lots", err, sizeof err);
    is_str(err, "pool_size: \"lots\" is not a whole number (use e.g. 100)", "bad count");
    proxy_config_set(&c, "head_timeout", "25h", err, sizeof err);
    is_str(err, "head_timeout: \"25h\" is out of range (use 1ms to 24h)", "range in units");
    proxy_config_set(&c, "max_head_size", "0", err, sizeof err);
    is_str(err, "max_head_size: \"0\" is out of range (use 1 to 64m)", "zero size");
    is_int(proxy_config_set(&c, "frobnicate", "1", err, sizeof err), -1, "unknown key");
    is_str(err, "unknown key \"frobnicate\" (wtproxy serve --help lists the keys)",
           "unknown key named, with where the keys are");
}

static void test_addresses(void)
{
    static const struct {
        const char *v, *host;
        int port;
    } good[] = {
        {"8000", "", 8000},
        {"127.0.0.1:8001", "127.0.0.1", 8001},
        {"[::1]:8002", "::1", 8002},
        {"localhost:8003", "", 8003},
        {"0", "", 0},
        {"0", "", 0},
        {"0.0.0.0:80", "0.0.0.0", 80},
        {"[::]:65535", "::", 65535},
    };
    static const char *bad_listen[] = {"65536",
                                       "-1",
                                       "abc",
                                       "",
                                       "::1:80",
                                       "[::1]",
                                       "[::1]:",
                                       "[127.0.0.1]:80",
                                       "example.com:80",
                                       ":80",
                                       "127.0.0.1:",
                                       "[::1]:x",
                                       "1.2.3:80",
                                       "[localhost]:80",
                                       "8000 "};
    static const char *good_backend[] = {"127.0.0.1:3000", "localhost:3000", "[::1]:3000",
                                         "my-app.test:8080", "a_b:1"};
    static const char *bad_backend[] = {
        "localhost",   "localhost:0", "localhost:65536", "http://x:3000", "[::1:3000",
        "[nothex]:80", "::1:3000",    "a b:80",          ":80",           "x:"};
    struct proxy_config c;
    char port[16], longhost[400];
    size_t i;

    proxy_config_defaults(&c);
    c.nlisten = 0;
    for (i = 0; i < sizeof good / sizeof good[0]; i++) {
        is_int(proxy_config_set(&c, "listen", good[i].v, err, sizeof err), 0, "listen %s",
               good[i].v);
        is_str(c.listen[i].host, good[i].host, "  host \"%s\"", good[i].host);
        is_int(c.listen[i].port, good[i].port, "  port %d", good[i].port);
    }
    is_int(c.nlisten, (int)i, "each listen appends");
    for (i = 0; i < sizeof bad_listen / sizeof bad_listen[0]; i++) {
        is_int(proxy_config_set(&c, "listen", bad_listen[i], err, sizeof err), -1,
               "listen \"%s\" rejected", bad_listen[i]);
        has_str(err, "listen: \"", "  message names the key: %s", err);
    }
    proxy_config_set(&c, "listen", "example.com:80", err, sizeof err);
    has_str(err, "is not a listen address (use e.g. 8000", "hostnames are not listen addresses");
    proxy_config_set(&c, "listen", "65536", err, sizeof err);
    is_str(err, "listen: \"65536\" has a port out of range (use 0 to 65535)", "listen port range");
    is_int(proxy_config_set(&c, "listen", "127.0.0.1:8000", err, sizeof err), -1,
           "127.0.0.1:8000 overlaps 8000 (both loopbacks)");
    is_int(proxy_config_set(&c, "listen", "[::1]:8001", err, sizeof err), 0, "::1:8001 does not");
    is_int(proxy_config_set(&c, "listen", "8002", err, sizeof err), -1, "8002 overlaps [::1]:8002");
    has_str(err, "overlaps an earlier listen on port 8002", "  and says so");

    proxy_config_defaults(&c);
    c.nlisten = 0;
    for (i = 0; i < WTP_MAX_LISTEN; i++) {
        snprintf(port, sizeof port, "%zu", 9000 + i);
        if (proxy_config_set(&c, "listen", port, err, sizeof err) < 0)
            break;
    }
    is_int(c.nlisten, WTP_MAX_LISTEN, "%d listeners fit", WTP_MAX_LISTEN);
    is_int(proxy_config_set(&c, "listen", "9999", err, sizeof err), -1, "one more does not");
    has_str(err, "at most 16", "  and says the limit");

    for (i = 0; i < sizeof good_backend / sizeof good_backend[0]; i++) {
        is_int(proxy_config_set(&c, "backend", good_backend[i], err, sizeof err), 0, "backend %s",
               good_backend[i]);
        is_str(c.backend, good_backend[i], "  stored as given");
    }
    for (i = 0; i < sizeof bad_backend / sizeof bad_backend[0]; i++) {
        is_int(proxy_config_set(&c, "backend", bad_backend[i], err, sizeof err), -1,
               "backend \"%s\" rejected", bad_backend[i]);
        has_str(err, "backend: \"", "  message names the key: %s", err);
        is_str(c.backend, good_backend[4], "  the previous backend stays");
    }
    proxy_config_set(&c, "backend", "localhost:0", err, sizeof err);
    is_str(err, "backend: \"localhost:0\" has a port out of range (use 1 to 65535)", "port 0");
    memset(longhost, 'a', sizeof longhost);
    memcpy(longhost + sizeof longhost - 6, ":8080", 6);
    is_int(proxy_config_set(&c, "backend", longhost, err, sizeof err), -1, "backend too long");
    is_int(proxy_config_set(&c, "backend", "", err, sizeof err), 0, "empty backend accepted");
    is_str(c.backend, "", "  and means none");
}

int main(void)
{
    test_defaults();
    test_good_values();
    test_switches();
    test_bad_values();
    test_paths();
    test_addresses();
    return done_testing();
}
