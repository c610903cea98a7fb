/* reg_db.c - the pure part of `wtproxy db`: slugs, names and their guards,
 * the owner stamp and the kind it tells, the migrations hash. */
#include "reg_db.h"
#include "host.h"

#include <dirent.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HASH_MAX_FILES 10000 /* a migrations folder past this is not one */

void reg_db_slug(const char *s, size_t max, char *out, size_t outlen)
{
    size_t n = 0;
    if (max > outlen - 1)
        max = outlen - 1;
    for (const unsigned char *p = (const unsigned char *)s; *p && n < max; p++) {
        unsigned char ch = (unsigned char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
        if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'))
            out[n++] = (char)ch;
        else if (n > 0 && out[n - 1] != '_')
            out[n++] = '_';
    }
    while (n > 0 && out[n - 1] == '_')
        n--;
    out[n] = '\0';
}

/* The charset rule, shared by every kind. Returns 0, or -1 with err. */
static int check_charset(const char *name, char *err, size_t errlen)
{
    size_t len = strlen(name);
    if (len == 0 || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != len) {
        snprintf(err, errlen,
                 "refused \"%s\": a name must match ^[a-z0-9_]+$ (rule: plain "
                 "names), so that it needs no quoting in settings, shells or SQL and means "
                 "the same to every tool",
                 name);
        return -1;
    }
    return 0;
}

int reg_db_check_name(const char *name, char *err, size_t errlen)
{
    size_t len = strlen(name), max = REG_DB_NAME_MAX - REG_DB_WORKER_SUFFIX;
    if (check_charset(name, err, errlen) < 0)
        return -1;
    if (!strstr(name, "test")) {
        snprintf(err, errlen,
                 "refused \"%s\": a test database's name must contain \"test\" "
                 "(rule: no \"test\", no claim), so that a claim, a drop or a recreate can "
                 "never hit a dev or production database; use a base like test_shop",
                 name);
        return -1;
    }
    if (len > max) {
        snprintf(err, errlen,
                 "refused \"%s\": %zu bytes; at most %zu (rule: 63-byte "
                 "names), because PostgreSQL cuts names at %d bytes and parallel test "
                 "workers add \"_NN\" (Django --parallel: %s_1 ...): two cut names would be "
                 "one database; use a shorter --base",
                 name, len, max, REG_DB_NAME_MAX, name);
        return -1;
    }
    return 0;
}

int reg_db_check_dev_name(const char *name, const char *base, const char *from, char *err,
                          size_t errlen)
{
    size_t len = strlen(name);
    if (check_charset(name, err, errlen) < 0)
        return -1;
    if (len > REG_DB_NAME_MAX) {
        snprintf(err, errlen,
                 "refused \"%s\": %zu bytes; at most %d (rule: 63-byte names), "
                 "because PostgreSQL cuts longer names and two cut names would be one "
                 "database; use a shorter --dev",
                 name, len, REG_DB_NAME_MAX);
        return -1;
    }
    if ((base && strcmp(name, base) == 0) || (from && strcmp(name, from) == 0)) {
        snprintf(err, errlen,
                 "refused \"%s\": that is the shared database itself (rule: a "
                 "worktree's dev database is never its base or its source), so that a reset "
                 "or a release can never drop it; use --dev %s (named per worktree)",
                 name, base ? base : name);
        return -1;
    }
    return 0;
}

int reg_db_check_template_name(const char *name, char *err, size_t errlen)
{
    if (reg_db_check_name(name, err, errlen) < 0)
        return -1;
    if (strlen(name) > REG_DB_TEMPLATE_MAX) {
        snprintf(err, errlen,
                 "refused \"%s\": %zu bytes; a template's name is at most %d "
                 "(rule: 63-byte names), leaving room for the copies' \"_<suffix>\" of up to "
                 "%d bytes; use a shorter --base",
                 name, strlen(name), REG_DB_TEMPLATE_MAX, REG_DB_SUFFIX_MAX);
        return -1;
    }
    return 0;
}

int reg_db_check_suffix(const char *suffix, char *err, size_t errlen)
{
    size_t len = strlen(suffix);
    if (len == 0 || len > REG_DB_SUFFIX_MAX ||
        strspn(suffix, "abcdefghijklmnopqrstuvwxyz0123456789") != len) {
        snprintf(err, errlen,
                 "refused copy suffix \"%s\": it must match ^[a-z0-9]{1,%d}$ "
                 "(e.g. w1, f12), so that <template>_<suffix> stays a plain name within 63 "
                 "bytes",
                 suffix, REG_DB_SUFFIX_MAX);
        return -1;
    }
    return 0;
}

int reg_db_derive(const char *base, const char *machine, const char *worktree, char *out,
                  size_t outlen, char *err, size_t errlen)
{
    char m[REG_DB_MACHINE_SLUG + 1], w[REG_DB_WORKTREE_SLUG + 1];
    const char *folder = strrchr(worktree, '/');
    reg_db_slug(machine, REG_DB_MACHINE_SLUG, m, sizeof m);
    reg_db_slug(folder ? folder + 1 : worktree, REG_DB_WORKTREE_SLUG, w, sizeof w);
    if (!m[0] || !w[0]) {
        snprintf(err, errlen,
                 "the machine id \"%s\" or the worktree folder \"%s\" has no "
                 "letter or digit to name a database after",
                 machine, worktree);
        return -1;
    }
    if ((size_t)snprintf(out, outlen, "%s_%s_%s", base, m, w) >= outlen) {
        snprintf(err, errlen, "refused: --base \"%s\" is far too long", base);
        return -1;
    }
    return 0;
}

int reg_db_missing_dev(const char *lines, const char *machine, const char *worktree, char *db,
                       size_t dblen, char *base, size_t baselen)
{
    static const char pre[] = "database \"", post[] = "\" does not exist";
    const char *at = strstr(lines, pre), *end;
    char tail[REG_DB_NAME_MAX + 1], err[PATH_MAX + 128];
    if (!at || !(end = strchr(at + sizeof pre - 1, '"')) ||
        strncmp(end, post, sizeof post - 1) != 0)
        return 0;
    at += sizeof pre - 1;
    if (end - at > REG_DB_NAME_MAX) /* not a name wtproxy gives */
        return 0;
    snprintf(db, dblen, "%.*s", (int)(end - at), at);
    size_t n = strlen(db), k;
    if (reg_db_derive("", machine, worktree, tail, sizeof tail, err, sizeof err) < 0 ||
        (k = strlen(tail)) >= n || strcmp(db + n - k, tail) != 0)
        return 0;
    snprintf(base, baselen, "%.*s", (int)(n - k), db);
    return 1;
}

/* The text after the first "key" of [from, to) up to one of stop, into
 * out; 0 when absent or empty. */
static int after(const char *from, const char *to, const char *key, const char *stop, char *out,
                 size_t len)
{
    const char *p = from;
    size_t k = strlen(key);
    while (p + k <= to && strncmp(p, key, k) != 0)
        p++;
    if (p + k > to)
        return 0;
    p += k;
    size_t n = strcspn(p, stop);
    if (n == 0 || n >= len || p + n > to)
        return 0;
    snprintf(out, len, "%.*s", (int)n, p);
    return 1;
}

/* libpq's refusal: its host and port, from the line that says it (new
 * libpq) or the lines after it (libpq before 14: "Is the server running
 * on host "H" and accepting\n\tTCP/IP connections on port P?"). */
static int libpq_refused(const char *lines, char *host, size_t hlen, char *port, size_t plen)
{
    const char *r = strstr(lines, "Connection refused");
    if (!r)
        return 0;
    const char *line = r;
    while (line > lines && line[-1] != '\n')
        line--;
    if (after(line, r, "connection to server at \"", "\"", host, hlen) &&
        after(line, r, "\", port ", " ", port, plen))
        return 1;
    const char *end = r + strnlen(r, 300); /* its "Is the server running" lines */
    return after(r, end, "on host \"", "\"", host, hlen) &&
           after(r, end, "on port ", "?\n", port, plen);
}

/* node-postgres' refusal: "ECONNREFUSED H:P", and pg in its stack (or
 * PostgreSQL's port: a pool's error may print no stack). */
static int node_pg_refused(const char *lines, char *host, size_t hlen, char *port, size_t plen)
{
    const char *r = strstr(lines, "ECONNREFUSED ");
    char hp[256];
    if (!r || !after(r, r + strlen(r), "ECONNREFUSED ", " \t\r\n'\",", hp, sizeof hp))
        return 0;
    char *colon = strrchr(hp, ':');
    if (!colon || !colon[1])
        return 0;
    *colon = '\0';
    snprintf(host, hlen, "%s", hp[0] == '[' ? hp + 1 : hp);
    if (host[0] && host[strlen(host) - 1] == ']')
        host[strlen(host) - 1] = '\0';
    snprintf(port, plen, "%s", colon + 1);
    return strcmp(port, "5432") == 0 || strstr(lines, "node_modules/pg") ||
           strstr(lines, "postgres");
}

int reg_db_refused(const char *lines, char *out, size_t len)
{
    char host[256], port[16];
    if (!lines || (!libpq_refused(lines, host, sizeof host, port, sizeof port) &&
                   !node_pg_refused(lines, host, sizeof host, port, sizeof port)))
        return 0;
    if (port[strspn(port, "0123456789")] != '\0')
        return 0;
    snprintf(out, len,
             "its database server at %s:%s does not answer: start it (pg_isready -h %s -p %s "
             "says when it answers)",
             host, port, host, port);
    return 1;
}

int reg_db_name(const char *base, const char *machine, const char *worktree, char *out,
                size_t outlen, char *err, size_t errlen)
{
    if (reg_db_derive(base, machine, worktree, out, outlen, err, errlen) < 0)
        return -1;
    return reg_db_check_name(out, err, errlen);
}

void reg_db_stamp(const char *machine, const char *worktree, const char *id, const char *hash,
                  char *out, size_t outlen)
{
    snprintf(out, outlen, REG_DB_STAMP_PREFIX "%s:%s%s%s|%s", machine, id, id[0] ? ":" : "",
             worktree, hash);
}

/* The identity field at s (up to its ':') into o->id, when s holds one: a
 * worktree is an absolute path, so one starts with '/'. Returns where
 * the worktree starts. */
static const char *parse_id(const char *s, const char *bar, struct reg_db_owner *o)
{
    const char *colon = strchr(s, ':');
    if (s[0] == '/' || !colon || colon > bar || colon[1] != '/' ||
        (size_t)(colon - s) >= sizeof o->id)
        return s;
    memcpy(o->id, s, (size_t)(colon - s));
    return colon + 1;
}

int reg_db_owner_gone(const struct reg_db_owner *o, const char *machine)
{
    struct stat st;
    char id[64];
    if (strcmp(o->machine, machine) != 0)
        return 0;
    if (stat(o->worktree, &st) < 0)
        return errno == ENOENT || errno == ENOTDIR;
    return o->id[0] && host_worktree_identity(o->worktree, id, sizeof id) == 0 &&
           strcmp(id, o->id) != 0;
}

int reg_db_parse_stamp(const char *comment, struct reg_db_owner *o)
{
    size_t pre = strlen(REG_DB_STAMP_PREFIX);
    memset(o, 0, sizeof *o);
    if (!comment || strncmp(comment, REG_DB_STAMP_PREFIX, pre) != 0)
        return -1;
    const char *m = comment + pre, *colon = strchr(m, ':'), *bar = strrchr(m, '|');
    if (!colon || !bar || bar < colon || (size_t)(colon - m) >= sizeof o->machine)
        return -1;
    const char *wt = parse_id(colon + 1, bar, o);
    if ((size_t)(bar - wt) >= sizeof o->worktree || strlen(bar + 1) >= sizeof o->hash)
        return -1;
    memcpy(o->machine, m, (size_t)(colon - m));
    memcpy(o->worktree, wt, (size_t)(bar - wt));
    snprintf(o->hash, sizeof o->hash, "%s", bar + 1);
    o->kind = reg_db_kind_of(o->hash);
    return 0;
}

enum reg_db_kind reg_db_kind_of(const char *hash)
{
    if (strcmp(hash, REG_DB_DEV_MARK) == 0)
        return REG_DB_DEV;
    if (strncmp(hash, REG_DB_TEMPLATE_MARK, strlen(REG_DB_TEMPLATE_MARK)) == 0 ||
        strncmp(hash, REG_DB_PENDING_MARK, strlen(REG_DB_PENDING_MARK)) == 0)
        return REG_DB_TEMPLATE;
    if (strncmp(hash, REG_DB_COPY_MARK, strlen(REG_DB_COPY_MARK)) == 0)
        return REG_DB_COPY;
    return REG_DB_TEST;
}

const char *reg_db_kind_name(enum reg_db_kind k)
{
    static const char *const names[] = {"test", "dev", "template", "copy"};
    return names[k];
}

struct files {
    char **v;
    size_t n, cap;
};

static int by_path(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Collect the files under root/rel (rel "" at the top). Returns 0 or -1. */
static int collect(const char *root, const char *rel, struct files *f, int depth)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s%s%s", root, rel[0] ? "/" : "", rel);
    DIR *d = opendir(path);
    struct dirent *e;
    int rc = d && depth < 32 ? 0 : -1;
    while (rc == 0 && (e = readdir(d))) {
        char sub[PATH_MAX], full[PATH_MAX * 2];
        struct stat st;
        size_t len = strlen(e->d_name);
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            strcmp(e->d_name, "__pycache__") == 0 ||
            (len > 4 && strcmp(e->d_name + len - 4, ".pyc") == 0))
            continue;
        snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", root, sub);
        if (stat(full, &st) < 0)
            rc = -1;
        else if (S_ISDIR(st.st_mode))
            rc = collect(root, sub, f, depth + 1);
        else if (S_ISREG(st.st_mode) && f->n < HASH_MAX_FILES) {
            if (f->n == f->cap) {
                f->cap = f->cap ? f->cap * 2 : 64;
                char **v = realloc(f->v, f->cap * sizeof *v);
                if (!v)
                    return closedir(d), -1;
                f->v = v;
            }
            rc = (f->v[f->n] = strdup(sub)) ? (f->n++, 0) : -1;
        }
    }
    if (d)
        closedir(d);
    return rc;
}

/* Feed "path\0content\0" of root/rel into ctx. Returns 0 or -1. */
static int feed(EVP_MD_CTX *ctx, const char *root, const char *rel)
{
    char full[PATH_MAX * 2], buf[65536];
    size_t n;
    snprintf(full, sizeof full, "%s/%s", root, rel);
    FILE *fp = fopen(full, "rb");
    if (!fp || !EVP_DigestUpdate(ctx, rel, strlen(rel) + 1)) {
        if (fp)
            fclose(fp);
        return -1;
    }
    while ((n = fread(buf, 1, sizeof buf, fp)) > 0)
        EVP_DigestUpdate(ctx, buf, n);
    int bad = ferror(fp);
    fclose(fp);
    return bad || !EVP_DigestUpdate(ctx, "", 1) ? -1 : 0;
}

int reg_db_hash_dir(const char *dir, char *out, size_t outlen, char *err, size_t errlen)
{
    struct files f = {0};
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int rc = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) ? collect(dir, "", &f, 0) : -1;
    if (rc == 0)
        qsort(f.v, f.n, sizeof *f.v, by_path);
    for (size_t i = 0; rc == 0 && i < f.n; i++)
        rc = feed(ctx, dir, f.v[i]);
    if (rc == 0 && EVP_DigestFinal_ex(ctx, md, &mdlen) && outlen > 7 + 2 * mdlen) {
        int used = snprintf(out, outlen, "sha256:");
        for (unsigned i = 0; i < mdlen; i++)
            used += snprintf(out + used, outlen - (size_t)used, "%02x", md[i]);
    } else {
        snprintf(err, errlen, "cannot hash the migrations in %s: %s", dir,
                 errno ? strerror(errno) : "unreadable");
        rc = -1;
    }
    for (size_t i = 0; i < f.n; i++)
        free(f.v[i]);
    free(f.v);
    EVP_MD_CTX_free(ctx);
    return rc;
}
