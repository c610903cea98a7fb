/* config.c - settings from the proxy_limits.h defaults, a `key = value`
 * file and `wtproxy serve` flags, in that order.
 *
 * File grammar, one setting per line (a line is at most MAX_LINE bytes):
 *   line     = *WSP [ key *WSP "=" *WSP value *WSP ] [ comment ]
 *   comment  = "#" *CHAR        ; at line start, or after whitespace
 * Values, by kind of key:
 *   size     = 1*DIGIT [ "b" / ("k" / "m" / "g") [ "b" / "ib" ] ]   ; KiB...
 *   duration = 1*DIGIT [ "ms" / "s" / "m" / "h" ]          ; bare = ms
 *   count    = 1*DIGIT
 *   listen   = port / IPv4 ":" port / "localhost:" port / "[" IPv6 "]:" port
 *   backend  = host ":" port / "[" IPv6 "]:" port / ""     ; "" = none
 * Suffixes are case-insensitive. Flags are `--KEY VALUE` or `--KEY=VALUE`,
 * KEY written with '-' for '_'. */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_LINE 4096 /* longest config file line, newline excluded */
#define KIB 1024ULL
#define MIB (1024 * KIB)
#define GIB (1024 * MIB)
#define SECOND 1000ULL
#define MINUTE (60 * SECOND)
#define HOUR (60 * MINUTE)

enum kind { K_SIZE, K_DURATION, K_COUNT, K_LOAD, K_HOSTPORT, K_LISTEN, K_PATH, K_SWITCH };

struct unit {
    const char *suffix;
    unsigned long long mult;
};

/* Printing a value picks the first suffix with the largest multiplier that
 * divides it, so the order decides "1ms" over "1" and "64k" over "64kib". */
static const struct unit size_units[] = {
    {"", 1},      {"b", 1},    {"k", KIB},   {"kb", KIB}, {"kib", KIB}, {"m", MIB},
    {"mb", MIB},  {"mib", MIB}, {"g", GIB},  {"gb", GIB}, {"gib", GIB}, {NULL, 0},
};
static const struct unit duration_units[] = {
    {"ms", 1}, {"", 1}, {"s", SECOND}, {"m", MINUTE}, {"h", HOUR}, {NULL, 0},
};
static const struct unit count_units[] = {{"", 1}, {NULL, 0}};
/* A load per CPU, kept in hundredths: "2" is 2.00, "150%" is 1.50. */
static const struct unit load_units[] = {{"%", 1}, {"", 100}, {NULL, 0}};

/* What each kind of value looks like: its units (NULL for addresses), and
 * the words used in error messages and --help. */
static const struct kind_info {
    const struct unit *units;
    const char *noun;    /* `"VALUE" is not NOUN` */
    const char *example; /* `(use e.g. EXAMPLE)` */
    const char *metavar; /* `--KEY METAVAR` */
} kinds[] = {
    [K_SIZE] = {size_units, "a size", "8192, 64k, 1m", "SIZE"},
    [K_DURATION] = {duration_units, "a duration", "500ms, 10s, 2m", "DURATION"},
    [K_COUNT] = {count_units, "a whole number", "100", "N"},
    [K_LOAD] = {load_units, "a load per CPU", "2 or 150%", "LOAD"},
    [K_HOSTPORT] = {NULL, "HOST:PORT", "127.0.0.1:3000 or [::1]:3000", "HOST:PORT"},
    [K_LISTEN] = {NULL, "a listen address", "8000, 127.0.0.1:8000 or [::1]:8000",
                  "[ADDR:]PORT"},
    [K_PATH] = {NULL, "a file path", "/run/user/1000/wtproxy/control.sock", "PATH"},
    [K_SWITCH] = {NULL, "on or off", "on, off, yes, no, true, false, 1, 0", "on|off"},
};

struct key {
    const char *name;
    enum kind kind;
    size_t off, size;            /* the field in struct proxy_config */
    unsigned long long min, max; /* the value's range; for addresses, the port's */
    const char *help;            /* one line, repeated in conf/wtproxy.conf */
};

#define FIELD(f) offsetof(struct proxy_config, f), sizeof(((struct proxy_config *)0)->f)

static const struct key keys[] = {
    {"listen", K_LISTEN, FIELD(listen), 0, 65535,
     "address to serve; a bare PORT is 127.0.0.1 and ::1"},
    {"backend", K_HOSTPORT, FIELD(backend), 1, 65535,
     "HOST:PORT requests go to; none: 503 no-backend"},
    {"max_head_size", K_SIZE, FIELD(max_head_size), 1, 64 * MIB,
     "largest request head; over: 431 head-too-large"},
    {"max_header_count", K_COUNT, FIELD(max_header_count), 1, WTP_FIELDS_CAP,
     "most request header lines; over: 431 too-many-headers"},
    {"max_request_line", K_SIZE, FIELD(max_request_line), 1, 64 * MIB,
     "longest request line; over: 414 request-line-too-long"},
    {"max_response_head", K_SIZE, FIELD(max_response_head), 1, 64 * MIB,
     "largest backend response head; over: 502"},
    {"head_timeout", K_DURATION, FIELD(head_timeout_ms), 1, 24 * HOUR,
     "first byte to end of request head; over: 408"},
    {"keepalive_timeout", K_DURATION, FIELD(keepalive_timeout_ms), 1, 24 * HOUR,
     "idle client connections are closed after this"},
    {"connect_timeout", K_DURATION, FIELD(connect_timeout_ms), 1, 24 * HOUR,
     "backend connect; over: 502 backend-unreachable"},
    {"response_timeout", K_DURATION, FIELD(response_timeout_ms), 1, 24 * HOUR,
     "request sent to response head; over: 504"},
    {"body_timeout", K_DURATION, FIELD(body_timeout_ms), 1, 24 * HOUR,
     "no body byte either way this long: connection closed"},
    {"shutdown_timeout", K_DURATION, FIELD(shutdown_timeout_ms), 1, 24 * HOUR,
     "on SIGTERM, in-flight requests get this long"},
    {"buffer_size", K_SIZE, FIELD(buffer_size), 1, GIB,
     "unsent bytes per direction before reading pauses"},
    {"pool_size", K_COUNT, FIELD(pool_size), 0, 100000,
     "idle backend connections kept per backend; 0: none"},
    {"pool_idle", K_DURATION, FIELD(pool_idle_ms), 1, 24 * HOUR,
     "pooled idle backend connections close after this"},
    {"max_connections", K_COUNT, FIELD(max_connections), 1, 1000000,
     "client connections at once; more wait to be accepted"},
    {"start_timeout", K_DURATION, FIELD(start_timeout_ms), 1, 24 * HOUR,
     "a request waits this long for a starting backend; over: 503"},
    {"start_max_load", K_LOAD, FIELD(start_max_load_pct), 0, 100000,
     "on-demand starts wait while the load per CPU is above this; 0: off"},
    {"reload_grace", K_DURATION, FIELD(reload_grace_ms), 0, 24 * HOUR,
     "a live backend refusing connections is retried this long; then 502"},
    {"whoami", K_SWITCH, FIELD(whoami), 0, 1,
     "check each backend's /__whoami before it serves a request"},
    {"whoami_timeout", K_DURATION, FIELD(whoami_timeout_ms), 1, 24 * HOUR,
     "one GET /__whoami to a backend; over: 502 whoami-invalid"},
    {"stale_grace", K_DURATION, FIELD(stale_grace_ms), 0, 24 * HOUR,
     "a backend older than the code on disk may reload this long; then 409"},
    {"trust_registry", K_SWITCH, FIELD(trust_registry), 0, 1,
     "a backend without /__whoami is trusted from its registration"},
    {"whoami_inotify", K_SWITCH, FIELD(whoami_inotify), 0, 1,
     "watch worktrees with inotify; off: a stat scan per request"},
    {"control_socket", K_PATH, FIELD(control_socket), 0, 0,
     "control socket; empty: $XDG_RUNTIME_DIR/wtproxy/control.sock"},
    {"state_file", K_PATH, FIELD(state_file), 0, 0,
     "registrations saved here; empty: ~/.local/state/wtproxy/registry.json"},
    {"registry", K_PATH, FIELD(registry), 0, 0,
     "PostgreSQL registry (libpq URI or conninfo); empty: the embedded store"},
};

#define NKEYS (sizeof keys / sizeof keys[0])

void proxy_config_defaults(struct proxy_config *c)
{
    memset(c, 0, sizeof *c);
    c->nlisten = 1;
    c->listen[0].port = WTP_DEFAULT_FRONT_PORT;
    c->max_head_size = WTP_MAX_HEAD_SIZE;
    c->max_header_count = WTP_MAX_HEADER_COUNT;
    c->max_request_line = WTP_MAX_REQUEST_LINE;
    c->max_response_head = WTP_MAX_RESPONSE_HEAD;
    c->head_timeout_ms = WTP_HEAD_TIMEOUT_MS;
    c->keepalive_timeout_ms = WTP_KEEPALIVE_TIMEOUT_MS;
    c->connect_timeout_ms = WTP_CONNECT_TIMEOUT_MS;
    c->response_timeout_ms = WTP_RESPONSE_TIMEOUT_MS;
    c->body_timeout_ms = WTP_BODY_TIMEOUT_MS;
    c->shutdown_timeout_ms = WTP_SHUTDOWN_TIMEOUT_MS;
    c->buffer_size = WTP_BUFFER_SIZE;
    c->pool_size = WTP_POOL_SIZE;
    c->pool_idle_ms = WTP_POOL_IDLE_MS;
    c->max_connections = WTP_MAX_CONNECTIONS;
    c->start_timeout_ms = WTP_START_TIMEOUT_MS;
    c->reload_grace_ms = WTP_RELOAD_GRACE_MS;
    c->whoami = 1;
    c->whoami_timeout_ms = WTP_WHOAMI_TIMEOUT_MS;
    c->stale_grace_ms = WTP_STALE_GRACE_MS;
    c->whoami_inotify = 1;
}

static const struct key *find_key(const char *name)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].name, name) == 0) return &keys[i];
    return NULL;
}

/* Numeric fields are size_t or unsigned; the table's maxima fit both. */
static unsigned long long get_number(const struct proxy_config *c, const struct key *k)
{
    const char *p = (const char *)c + k->off;
    return k->size == sizeof(size_t) ? *(const size_t *)p : *(const unsigned *)p;
}

static void set_number(struct proxy_config *c, const struct key *k, unsigned long long v)
{
    char *p = (char *)c + k->off;
    if (k->size == sizeof(size_t))
        *(size_t *)p = (size_t)v;
    else
        *(unsigned *)p = (unsigned)v;
}

/* Parse DIGITS immediately followed by one of units' suffixes into *out,
 * scaled. Returns 0, -1 when s has another form (sign, space, fraction,
 * unknown suffix), -2 when the value overflows. */
static int parse_scaled(const char *s, const struct unit *units, unsigned long long *out)
{
    char *end;
    unsigned long long v;

    if (!isdigit((unsigned char)s[0])) return -1; /* strtoull takes "-1", " 1" */
    errno = 0;
    v = strtoull(s, &end, 10);
    for (const struct unit *u = units; u->suffix; u++) {
        if (strcasecmp(end, u->suffix) != 0) continue;
        if (errno == ERANGE || v > ~0ULL / u->mult) return -2;
        *out = v * u->mult;
        return 0;
    }
    return -1;
}

/* Print v the way a user would write it for this kind: "10s", "64k". */
static void format_number(enum kind kind, unsigned long long v, char *buf, size_t len)
{
    const struct unit *best = NULL;

    for (const struct unit *u = kinds[kind].units; u && u->suffix; u++)
        if (v != 0 && v % u->mult == 0 && (!best || u->mult > best->mult)) best = u;
    if (best)
        snprintf(buf, len, "%llu%s", v / best->mult, best->suffix);
    else
        snprintf(buf, len, "%llu", v);
}

static int bad_value(const struct key *k, const char *v, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: \"%s\" is not %s (use e.g. %s)", k->name, v,
             kinds[k->kind].noun, kinds[k->kind].example);
    return -1;
}

/* Parse text (the whole value v, or its port) with the key's units into
 * *out and check the key's range. Returns 0, or -1 with err naming the key
 * and v. */
static int parse_in_range(const struct key *k, const char *v, const char *text,
                          unsigned long long *out, char *err, size_t errlen)
{
    const struct unit *units = kinds[k->kind].units ? kinds[k->kind].units : count_units;
    int rc = parse_scaled(text, units, out);
    char lo[32], hi[32];

    if (rc == -1) return bad_value(k, v, err, errlen);
    if (rc == 0 && *out >= k->min && *out <= k->max) return 0;
    format_number(k->kind, k->min, lo, sizeof lo);
    format_number(k->kind, k->max, hi, sizeof hi);
    snprintf(err, errlen, "%s: \"%s\" %s out of range (use %s to %s)", k->name, v,
             kinds[k->kind].units ? "is" : "has a port", lo, hi);
    return -1;
}

/* Split "HOST:PORT" or "[HOST]:PORT" into host (brackets dropped) and a
 * pointer to the port text. Returns 0, or -1 when there is no port, a ':'
 * in an unbracketed host (IPv6 needs brackets), or host would not fit. */
static int split_hostport(const char *v, char *host, size_t hostlen, const char **port)
{
    const char *h = v, *hend, *colon;

    if (v[0] == '[') {
        h = v + 1;
        hend = strchr(h, ']');
        if (!hend || hend[1] != ':') return -1;
        colon = hend + 1;
    } else {
        colon = strrchr(v, ':');
        if (!colon || memchr(v, ':', (size_t)(colon - v))) return -1;
        hend = colon;
    }
    if (hend == h || (size_t)(hend - h) >= hostlen) return -1;
    memcpy(host, h, (size_t)(hend - h));
    host[hend - h] = '\0';
    *port = colon + 1;
    return 0;
}

/* Two listeners that would fight over one socket: the same port (not 0),
 * and the same host or "" beside one of the loopbacks it stands for. */
static int overlaps(const struct proxy_listen *a, const struct proxy_listen *b)
{
    const char *h = a->host[0] ? a->host : b->host;

    if (a->port == 0 || a->port != b->port) return 0;
    if (strcmp(a->host, b->host) == 0) return 1;
    return (!a->host[0] || !b->host[0]) && (!strcmp(h, "127.0.0.1") || !strcmp(h, "::1"));
}

static int set_listen(struct proxy_config *c, const struct key *k, const char *v,
                      char *err, size_t errlen)
{
    struct proxy_listen l = {{0}, 0};
    const char *port = v;
    unsigned char addr[sizeof(struct in6_addr)];
    unsigned long long p;

    if (strchr(v, ':')) {
        int family = v[0] == '[' ? AF_INET6 : AF_INET;
        if (split_hostport(v, l.host, sizeof l.host, &port) < 0)
            return bad_value(k, v, err, errlen);
        if (family == AF_INET && strcmp(l.host, "localhost") == 0)
            l.host[0] = '\0'; /* both loopbacks, as a bare port */
        else if (inet_pton(family, l.host, addr) != 1)
            return bad_value(k, v, err, errlen);
    }
    if (parse_in_range(k, v, port, &p, err, errlen) < 0) return -1;
    l.port = (int)p;
    for (int i = 0; i < c->nlisten; i++) {
        if (!overlaps(&c->listen[i], &l)) continue;
        snprintf(err, errlen, "listen: \"%s\" overlaps an earlier listen on port %d", v, l.port);
        return -1;
    }
    if (c->nlisten >= WTP_MAX_LISTEN) {
        snprintf(err, errlen, "listen: \"%s\" is one too many (at most %d listen addresses)", v,
                 WTP_MAX_LISTEN);
        return -1;
    }
    c->listen[c->nlisten++] = l;
    return 0;
}

/* Hostnames are checked for their characters only: resolving is the
 * backend's business, at connect time. */
static int set_hostport(struct proxy_config *c, const struct key *k, const char *v,
                        char *err, size_t errlen)
{
    char host[256], *field = (char *)c + k->off;
    const char *port;
    unsigned char addr[sizeof(struct in6_addr)];
    unsigned long long p;

    if (v[0] == '\0') { /* lets a flag clear the file's backend */
        field[0] = '\0';
        return 0;
    }
    if (strlen(v) >= k->size || split_hostport(v, host, sizeof host, &port) < 0)
        return bad_value(k, v, err, errlen);
    if (v[0] == '[' ? inet_pton(AF_INET6, host, addr) != 1
                    : strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   "0123456789.-_") != strlen(host))
        return bad_value(k, v, err, errlen);
    if (parse_in_range(k, v, port, &p, err, errlen) < 0) return -1;
    memcpy(field, v, strlen(v) + 1);
    return 0;
}

static int set_switch(struct proxy_config *c, const struct key *k, const char *v, char *err,
                      size_t errlen)
{
    static const char *const words[][2] = {{"on", "off"}, {"yes", "no"}, {"true", "false"},
                                           {"1", "0"}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        for (int off = 0; off < 2; off++) {
            if (strcasecmp(v, words[i][off]) == 0) {
                set_number(c, k, off ? 0 : 1);
                return 0;
            }
        }
    }
    return bad_value(k, v, err, errlen);
}

/* Paths are taken as written; "" means the default location. */
static int set_path(struct proxy_config *c, const struct key *k, const char *v, char *err,
                    size_t errlen)
{
    if (strlen(v) >= k->size) return bad_value(k, v, err, errlen);
    memcpy((char *)c + k->off, v, strlen(v) + 1);
    return 0;
}

int proxy_config_set(struct proxy_config *c, const char *key, const char *value,
                     char *err, size_t errlen)
{
    const struct key *k = find_key(key);
    unsigned long long v;

    if (!k) {
        snprintf(err, errlen, "unknown key \"%s\"", key);
        return -1;
    }
    if (k->kind == K_LISTEN) return set_listen(c, k, value, err, errlen);
    if (k->kind == K_HOSTPORT) return set_hostport(c, k, value, err, errlen);
    if (k->kind == K_PATH) return set_path(c, k, value, err, errlen);
    if (k->kind == K_SWITCH) return set_switch(c, k, value, err, errlen);
    if (parse_in_range(k, value, value, &v, err, errlen) < 0) return -1;
    set_number(c, k, v);
    return 0;
}

/* Cut s to its first and last non-space characters, in place. */
static char *trim(char *s)
{
    size_t n;

    while (isspace((unsigned char)*s)) s++;
    n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) n--;
    s[n] = '\0';
    return s;
}

/* Apply one line of a config file (its newline included or not). The
 * first listen line empties the listener list, so the file's listeners
 * replace the defaults. Returns 0, or -1 with err (no FILE:LINE prefix). */
static int apply_line(struct proxy_config *c, char *line, int *listen_seen, char *err,
                      size_t errlen)
{
    size_t n = strlen(line);
    char *key, *eq;

    if (n > 0 && line[n - 1] == '\n') line[--n] = '\0';
    if (n > MAX_LINE) {
        snprintf(err, errlen, "line is longer than %d bytes", MAX_LINE);
        return -1;
    }
    for (char *p = line; *p; p++) {
        if (*p == '#' && (p == line || isspace((unsigned char)p[-1]))) {
            *p = '\0';
            break;
        }
    }
    key = trim(line);
    if (*key == '\0') return 0;
    eq = strchr(key, '=');
    if (!eq || eq == key) {
        snprintf(err, errlen, "expected \"key = value\", got \"%s\"", key);
        return -1;
    }
    *eq = '\0';
    key = trim(key);
    if (strcmp(key, "listen") == 0 && !(*listen_seen)++) c->nlisten = 0;
    return proxy_config_set(c, key, trim(eq + 1), err, errlen);
}

int proxy_config_load_file(struct proxy_config *c, const char *path, char *err, size_t errlen)
{
    char line[MAX_LINE + 2], msg[512]; /* + 2: the newline, the NUL */
    int lineno = 0, listen_seen = 0, rc = -1;
    FILE *f;

    if (strlen(path) >= sizeof c->config_path) {
        snprintf(err, errlen, "config file path is too long: %.64s...", path);
        return -1;
    }
    f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read config file %s: %s", path, strerror(errno));
        return -1;
    }
    memcpy(c->config_path, path, strlen(path) + 1);
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (apply_line(c, line, &listen_seen, msg, sizeof msg) < 0) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno, msg);
            goto out;
        }
    }
    if (ferror(f)) {
        snprintf(err, errlen, "cannot read config file %s: %s", path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    fclose(f);
    return rc;
}

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
static int next_flag(int argc, char **argv, int *i, char *key, size_t keylen,
                     const char **value, char *err, size_t errlen)
{
    const char *arg = argv[*i], *eq = strchr(arg, '=');
    size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    const struct key *k = NULL;

    key[0] = '\0';
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) return 1;
    if (arg[0] != '-') {
        snprintf(err, errlen,
                 "unexpected argument \"%s\" for wtproxy serve (see wtproxy serve --help)", arg);
        return -1;
    }
    if (strncmp(arg, "--", 2) == 0 && n > 2 && n - 2 < keylen) {
        for (size_t j = 2; j < n; j++) key[j - 2] = arg[j] == '-' ? '_' : arg[j];
        key[n - 2] = '\0';
        resolve_alias(key, keylen);
        k = find_key(key);
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
                 k ? kinds[k->kind].metavar : "FILE");
        return -1;
    }
    return 0;
}

int proxy_config_from_args(struct proxy_config *c, int argc, char **argv, char *err,
                           size_t errlen)
{
    char key[64], msg[1024];
    const char *value = NULL, *config = NULL;
    int i, rc, from_env = 0, listen_seen = 0;

    /* Check every flag first, and find --config wherever it is: the file
     * must apply before any flag, and --help before any complaint. */
    for (i = 0; i < argc;) {
        if ((rc = next_flag(argc, argv, &i, key, sizeof key, &value, err, errlen)) != 0) return rc;
        if (strcmp(key, "config") != 0) continue;
        if (config) {
            snprintf(err, errlen, "--config given twice (\"%s\", \"%s\")", config, value);
            return -1;
        }
        config = value;
    }
    proxy_config_defaults(c);
    if (!config) {
        config = getenv("WTPROXY_CONFIG");
        if (config && *config == '\0') config = NULL;
        from_env = config != NULL;
    }
    if (config && proxy_config_load_file(c, config, msg, sizeof msg) < 0) {
        snprintf(err, errlen, "%s%s", msg, from_env ? " (from $WTPROXY_CONFIG)" : "");
        return -1;
    }
    for (i = 0; i < argc;) {
        next_flag(argc, argv, &i, key, sizeof key, &value, err, errlen);
        if (strcmp(key, "config") == 0) continue;
        if (strcmp(key, "listen") == 0 && !listen_seen++) c->nlisten = 0;
        if (proxy_config_set(c, key, value, err, errlen) < 0) return -1;
    }
    return 0;
}

/* The value of k in c as it would be written in the file; "" for no
 * backend. A listen key shows the first listener. */
static void format_value(const struct key *k, const struct proxy_config *c, char *buf, size_t len)
{
    const struct proxy_listen *l = &c->listen[0];

    if (k->kind == K_HOSTPORT || k->kind == K_PATH)
        snprintf(buf, len, "%s", (const char *)c + k->off);
    else if (k->kind == K_LISTEN && !l->host[0])
        snprintf(buf, len, "%d", l->port);
    else if (k->kind == K_LISTEN)
        snprintf(buf, len, strchr(l->host, ':') ? "[%s]:%d" : "%s:%d", l->host, l->port);
    else if (k->kind == K_SWITCH)
        snprintf(buf, len, "%s", get_number(c, k) ? "on" : "off");
    else
        format_number(k->kind, get_number(c, k), buf, len);
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
                                    kinds[keys[i].kind].metavar);
        for (size_t j = 2; j < n && flag[j] != ' '; j++)
            if (flag[j] == '_') flag[j] = '-';
        format_value(&keys[i], &d, def, sizeof def);
        fprintf(f, "  %-29s %-7s %s\n", flag, def[0] ? def : "none", keys[i].help);
    }
    fprintf(f, "  %-29s %-7s %s\n", "-h, --help", "", "print this help");
}
