/* config_value.c - one setting's value, by its key's kind: parsed from the
 * text a file line or a flag gives, checked against the key's range, and
 * printed back the way a user would write it (--help's defaults, range
 * errors). Apart from config.c because it knows the units and addresses,
 * not the keys.
 *
 * Values, by kind of key:
 *   size     = 1*DIGIT [ "b" / ("k" / "m" / "g") [ "b" / "ib" ] ]   ; KiB...
 *   duration = 1*DIGIT [ "ms" / "s" / "m" / "h" ]          ; bare = ms
 *   count    = 1*DIGIT
 *   load     = 1*DIGIT [ "%" ]                              ; bare = per CPU
 *   listen   = port / IPv4 ":" port / "localhost:" port / "[" IPv6 "]:" port
 *   backend  = host ":" port / "[" IPv6 "]:" port / ""     ; "" = none
 *   switch   = on / off / yes / no / true / false / 1 / 0
 *   path     = *CHAR                                        ; "" = default
 * Suffixes are case-insensitive. */
#include "config_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct unit {
    const char *suffix;
    unsigned long long mult;
};

/* Printing a value picks the first suffix with the largest multiplier that
 * divides it, so the order decides "1ms" over "1" and "64k" over "64kib". */
static const struct unit size_units[] = {
    {"", 1},     {"b", 1},     {"k", KIB}, {"kb", KIB}, {"kib", KIB}, {"m", MIB},
    {"mb", MIB}, {"mib", MIB}, {"g", GIB}, {"gb", GIB}, {"gib", GIB}, {NULL, 0},
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
    [K_LISTEN] = {NULL, "a listen address", "8000, 127.0.0.1:8000 or [::1]:8000", "[ADDR:]PORT"},
    [K_PATH] = {NULL, "a file path", "/run/user/1000/wtproxy/control.sock", "PATH"},
    [K_SWITCH] = {NULL, "on or off", "on, off, yes, no, true, false, 1, 0", "on|off"},
    [K_URI] = {NULL, "a libpq URI or conninfo", "postgresql://wt@db.lan/wtproxy_devtools", "URI"},
};

const char *proxy_config_metavar(enum kind kind)
{
    return kinds[kind].metavar;
}

/* Parse DIGITS immediately followed by one of units' suffixes into *out,
 * scaled. Returns 0, -1 when s has another form (sign, space, fraction,
 * unknown suffix), -2 when the value overflows. */
static int parse_scaled(const char *s, const struct unit *units, unsigned long long *out)
{
    char *end;
    unsigned long long v;

    if (!isdigit((unsigned char)s[0]))
        return -1; /* strtoull takes "-1", " 1" */
    errno = 0;
    v = strtoull(s, &end, 10);
    for (const struct unit *u = units; u->suffix; u++) {
        if (strcasecmp(end, u->suffix) != 0)
            continue;
        if (errno == ERANGE || v > ~0ULL / u->mult)
            return -2;
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
        if (v != 0 && v % u->mult == 0 && (!best || u->mult > best->mult))
            best = u;
    if (best)
        snprintf(buf, len, "%llu%s", v / best->mult, best->suffix);
    else
        snprintf(buf, len, "%llu", v);
}

static int bad_value(const struct key *k, const char *v, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: \"%s\" is not %s (use e.g. %s)", k->name, v, kinds[k->kind].noun,
             kinds[k->kind].example);
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

    if (rc == -1)
        return bad_value(k, v, err, errlen);
    if (rc == 0 && *out >= k->min && *out <= k->max)
        return 0;
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
        if (!hend || hend[1] != ':')
            return -1;
        colon = hend + 1;
    } else {
        colon = strrchr(v, ':');
        if (!colon || memchr(v, ':', (size_t)(colon - v)))
            return -1;
        hend = colon;
    }
    if (hend == h || (size_t)(hend - h) >= hostlen)
        return -1;
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

    if (a->port == 0 || a->port != b->port)
        return 0;
    if (strcmp(a->host, b->host) == 0)
        return 1;
    return (!a->host[0] || !b->host[0]) && (!strcmp(h, "127.0.0.1") || !strcmp(h, "::1"));
}

static int set_listen(struct proxy_config *c, const struct key *k, const char *v, char *err,
                      size_t errlen)
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
    if (parse_in_range(k, v, port, &p, err, errlen) < 0)
        return -1;
    l.port = (int)p;
    for (int i = 0; i < c->nlisten; i++) {
        if (!overlaps(&c->listen[i], &l))
            continue;
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
static int set_hostport(struct proxy_config *c, const struct key *k, const char *v, char *err,
                        size_t errlen)
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
    if (parse_in_range(k, v, port, &p, err, errlen) < 0)
        return -1;
    memcpy(field, v, strlen(v) + 1);
    return 0;
}

static int set_switch(struct proxy_config *c, const struct key *k, const char *v, char *err,
                      size_t errlen)
{
    static const char *const words[][2] = {
        {"on", "off"}, {"yes", "no"}, {"true", "false"}, {"1", "0"}};
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
    if (strlen(v) >= k->size)
        return bad_value(k, v, err, errlen);
    memcpy((char *)c + k->off, v, strlen(v) + 1);
    return 0;
}

int proxy_config_set(struct proxy_config *c, const char *key, const char *value, char *err,
                     size_t errlen)
{
    const struct key *k = proxy_config_find_key(key);
    unsigned long long v;

    if (!k) {
        snprintf(err, errlen, "unknown key \"%s\" (wtproxy serve --help lists the keys)", key);
        return -1;
    }
    if (k->kind == K_LISTEN)
        return set_listen(c, k, value, err, errlen);
    if (k->kind == K_HOSTPORT)
        return set_hostport(c, k, value, err, errlen);
    if (k->kind == K_PATH || k->kind == K_URI)
        return set_path(c, k, value, err, errlen);
    if (k->kind == K_SWITCH)
        return set_switch(c, k, value, err, errlen);
    if (parse_in_range(k, value, value, &v, err, errlen) < 0)
        return -1;
    set_number(c, k, v);
    return 0;
}

void proxy_config_format_value(const struct key *k, const struct proxy_config *c, char *buf,
                               size_t len)
{
    const struct proxy_listen *l = &c->listen[0];

    if (k->kind == K_HOSTPORT || k->kind == K_PATH || k->kind == K_URI)
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
