/* config_int.h - what the four parts of the settings share: the kinds of
 * value, a key's row (config.c holds the table), and the calls one part
 * makes into another. config.c is the key table and what reads it whole
 * (defaults, --help); config_value.c parses and prints one value of each
 * kind; config_file.c reads a file; config_args.c reads `wtproxy serve`
 * flags. Internal to proxy/. */
#ifndef WTP_CONFIG_INT_H
#define WTP_CONFIG_INT_H

#include <stddef.h>

#include "config.h"

#define KIB 1024ULL
#define MIB (1024 * KIB)
#define GIB (1024 * MIB)
#define SECOND 1000ULL
#define MINUTE (60 * SECOND)
#define HOUR (60 * MINUTE)

/* K_URI is kept as K_PATH is (a string); it is told apart for --help's
 * `--registry URI`, which said PATH of a value that is a libpq URI. */
enum kind { K_SIZE, K_DURATION, K_COUNT, K_LOAD, K_HOSTPORT, K_LISTEN, K_PATH, K_SWITCH, K_URI };

struct key {
    const char *name;
    enum kind kind;
    size_t off, size;            /* the field in struct proxy_config */
    unsigned long long def;      /* the default of a numeric or switch key */
    unsigned long long min, max; /* the value's range; for addresses, the port's */
    const char *help;            /* one line, repeated in conf/wtproxy.conf */
};

/* Numeric fields are size_t or unsigned; the table's maxima fit both. */
static inline unsigned long long get_number(const struct proxy_config *c, const struct key *k)
{
    const char *p = (const char *)c + k->off;
    return k->size == sizeof(size_t) ? *(const size_t *)p : *(const unsigned *)p;
}

static inline void set_number(struct proxy_config *c, const struct key *k, unsigned long long v)
{
    char *p = (char *)c + k->off;
    if (k->size == sizeof(size_t))
        *(size_t *)p = (size_t)v;
    else
        *(unsigned *)p = (unsigned)v;
}

/* The row of the key named name, or NULL. */
const struct key *proxy_config_find_key(const char *name);

/* The `--KEY METAVAR` word of a kind: "DURATION", "HOST:PORT". */
const char *proxy_config_metavar(enum kind kind);

/* The value of k in c as it would be written in the file; "" for no
 * backend. A listen key shows the first listener. */
void proxy_config_format_value(const struct key *k, const struct proxy_config *c, char *buf,
                               size_t len);

#endif
