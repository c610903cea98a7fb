/* wtfile.c - see wtfile.h. The grammar:
 *
 *   file     = *( line "\n" )
 *   line     = blank / comment / section / key "=" value
 *   comment  = "#" ...        (also after a blank: `front = 8001  # API`)
 *   section  = "[service " NAME "]"      NAME: reg_service_name_ok
 *   key      = start | front | idle_stop | ready | after
 *     start = CMD      run through /bin/sh -c in the worktree; {port} is the port
 *     front = PORT     the front port it serves (default 8000)
 *     idle_stop = DUR  stop after this long without requests in flight: 500ms,
 *                      10s, 30m, 1h (default 30m; 0 = never; a bare number is
 *                      refused, its unit would be a guess)
 *     ready = /PATH    ready when GET /PATH answers 2xx or 3xx (default: when
 *                      it listens)
 *     after = A, B     services started, and ready, before this one
 *
 * Keys before any section belong to the unnamed service; a file has either
 * that one or sections, not both. */
#include "wtfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proxy_limits.h"

struct parse {
    struct wtfile *f;
    int cur;      /* the service keys go to; -1 before the first line of one */
    int top_line; /* the first key outside a section, 0 none */
    char after[WTFILE_MAX_SERVICES][512];
    char *err;
    size_t errlen;
};

/* Write "PATH:LINE: " and the message into p's err; returns -1. */
__attribute__((format(printf, 3, 4))) static int fail(struct parse *p, int line, const char *fmt,
                                                      ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "%s:%d: %s", p->f->path, line, what);
    return -1;
}

/* A duration with its unit (500ms, 10s, 30m, 1h); a bare number only as 0,
 * since people write "idle_stop = 30" meaning seconds or minutes. */
static int parse_duration(const char *v, unsigned long long *ms)
{
    static const struct {
        const char *unit;
        unsigned long long mult;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v || *v == '-')
        return -1;
    if (!*end && n == 0) {
        *ms = 0;
        return 0;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].unit) == 0) {
            *ms = n * units[i].mult;
            return 0;
        }
    return -1;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

static int new_service(struct parse *p, const char *name, int line)
{
    struct wtfile *f = p->f;
    if (f->n == WTFILE_MAX_SERVICES)
        return fail(p, line, "more than %d services; merge some", WTFILE_MAX_SERVICES);
    struct wtfile_service *s = &f->svc[f->n];
    *s = (struct wtfile_service){
        .front = WTP_DEFAULT_FRONT_PORT, .idle_ms = WTFILE_IDLE_DEFAULT_MS, .line = line};
    snprintf(s->name, sizeof s->name, "%s", name);
    p->cur = f->n++;
    return 0;
}

/* `[service NAME]`: a new service, its name valid and not taken. */
static int section(struct parse *p, char *l, int line)
{
    char why[256];
    size_t n = strlen(l);
    if (strncmp(l, "[service ", 9) != 0 || l[n - 1] != ']')
        return fail(p, line, "a section is written `[service NAME]`, not `%.64s`", l);
    l[n - 1] = '\0';
    const char *name = trim(l + 9);
    if (!reg_service_name_ok(name, why, sizeof why))
        return fail(p, line, "%s; rename the section", why);
    if (p->top_line)
        return fail(p, p->top_line,
                    "this key belongs to no service, but the file has "
                    "`[service NAME]` sections (line %d): move it into one",
                    line);
    const struct wtfile_service *dup = wtfile_by_name(p->f, name);
    if (dup)
        return fail(p, line,
                    "service `%s` is declared twice (first at line %d): rename or "
                    "merge one",
                    name, dup->line);
    return new_service(p, name, line);
}

static int key(struct parse *p, char *l, int line)
{
    char *eq = strchr(l, '=');
    if (!eq)
        return fail(p, line, "not `key = value` nor `[service NAME]`: fix or remove it");
    *eq = '\0';
    char *k = trim(l), *v = trim(eq + 1), *end = v;
    if (p->cur < 0) { /* the first key of a file without sections (so far) */
        p->top_line = line;
        if (new_service(p, "", line) < 0)
            return -1;
    }
    struct wtfile_service *s = &p->f->svc[p->cur];
    long front = strcmp(k, "front") == 0 ? strtol(v, &end, 10) : 0;
    size_t len = strlen(v);
    if (strcmp(k, "start") == 0 && len < sizeof s->start) {
        memcpy(s->start, v, len + 1);
    } else if (front > 0 && front < 65536 && !*end) {
        s->front = (int)front;
        s->front_line = line;
    } else if (strcmp(k, "idle_stop") == 0 && parse_duration(v, &s->idle_ms) == 0) {
        /* parsed into s */
    } else if (strcmp(k, "ready") == 0 && v[0] == '/' && !strpbrk(v, " \t") &&
               len < sizeof s->ready) {
        memcpy(s->ready, v, len + 1);
    } else if (strcmp(k, "after") == 0 && len < sizeof p->after[0]) {
        memcpy(p->after[p->cur], v, len + 1);
        s->after_line = line;
    } else {
        return fail(p, line,
                    "bad or unknown `%.64s` (keys: start, front, idle_stop, ready, "
                    "after; wtproxy help wtproxy-file shows each)",
                    k);
    }
    return 0;
}

static int parse_text(struct parse *p, char *text)
{
    int no = 1;
    for (char *line = text, *next; line; line = next, no++) {
        if ((next = strchr(line, '\n')))
            *next++ = '\0';
        char *hash = strchr(line, '#');
        if (hash && (hash == line || hash[-1] == ' ' || hash[-1] == '\t'))
            *hash = '\0';
        char *l = trim(line);
        if (!*l)
            continue;
        if ((*l == '[' ? section(p, l, no) : key(p, l, no)) < 0)
            return -1;
    }
    return 0;
}

/* Resolve each `after` list into indexes. */
static int resolve_after(struct parse *p)
{
    struct wtfile *f = p->f;
    for (int i = 0; i < f->n; i++) {
        struct wtfile_service *s = &f->svc[i];
        for (char *tok = strtok(p->after[i], ","); tok; tok = strtok(NULL, ",")) {
            const char *name = trim(tok);
            const struct wtfile_service *d = *name ? wtfile_by_name(f, name) : NULL;
            if (!d)
                return fail(p, s->after_line,
                            "`after` names `%s`, which this file does not "
                            "declare: fix the name or add a [service %s] section",
                            name, name);
            if (s->nafter == WTFILE_MAX_AFTER)
                return fail(p, s->after_line, "`after` names more than %d services",
                            WTFILE_MAX_AFTER);
            s->after[s->nafter++] = (int)(d - f->svc);
        }
    }
    return 0;
}

/* Depth-first search for a cycle through i; path holds the names seen. */
static int cyclic(const struct wtfile *f, int i, int *mark, char *path, size_t len)
{
    size_t used = strlen(path);
    snprintf(path + used, len - used, "%s%s", used ? " -> " : "", f->svc[i].name);
    if (mark[i] == 1)
        return 1;
    if (mark[i] == 2) {
        path[used] = '\0';
        return 0;
    }
    mark[i] = 1;
    for (int k = 0; k < f->svc[i].nafter; k++)
        if (cyclic(f, f->svc[i].after[k], mark, path, len))
            return 1;
    mark[i] = 2;
    path[used] = '\0';
    return 0;
}

static int check(struct parse *p)
{
    struct wtfile *f = p->f;
    int mark[WTFILE_MAX_SERVICES] = {0};
    char path[WTFILE_MAX_SERVICES * (REG_SERVICE_MAX + 4) + 8];
    for (int i = 0; i < f->n; i++) {
        const struct wtfile_service *s = &f->svc[i];
        if (!s->start[0])
            return fail(p, s->line, "service `%s` has no `start = CMD {port}`: add one",
                        s->name[0] ? s->name : "(unnamed)");
        const struct wtfile_service *o = wtfile_by_front(f, s->front);
        if (o != s)
            return fail(p, s->front_line ? s->front_line : s->line,
                        "services `%s` and `%s` "
                        "both serve front %d; a front port routes to one service: give each "
                        "its own `front`",
                        o->name, s->name, s->front);
    }
    for (int i = 0; i < f->n; i++) {
        path[0] = '\0';
        if (cyclic(f, i, mark, path, sizeof path))
            return fail(p, f->svc[i].after_line,
                        "`after` makes a cycle: %s; remove one of "
                        "these `after`s",
                        path);
    }
    return 0;
}

static void key_of(const struct stat *st, struct wtfile_key *key)
{
    *key = (struct wtfile_key){st->st_dev, st->st_ino, st->st_size, st->st_mtim.tv_sec,
                               st->st_mtim.tv_nsec};
}

void wtfile_key(const char *dir, struct wtfile_key *key)
{
    char path[PATH_MAX + 16];
    struct stat st;
    snprintf(path, sizeof path, "%s/.wtproxy", dir);
    if (stat(path, &st) == 0)
        key_of(&st, key);
    else
        *key = (struct wtfile_key){0};
}

int wtfile_key_same(const struct wtfile_key *a, const struct wtfile_key *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime_s == b->mtime_s &&
           a->mtime_ns == b->mtime_ns;
}

int wtfile_read(const char *dir, struct wtfile *f, char *err, size_t errlen)
{
    struct parse p = {.f = f, .cur = -1, .err = err, .errlen = errlen};
    struct stat st;
    f->n = 0;
    f->key = (struct wtfile_key){0};
    f->owner = (uid_t)-1;
    snprintf(f->path, sizeof f->path, "%s/.wtproxy", dir);
    int fd = open(f->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return 1;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size > WTFILE_MAX_BYTES) {
        snprintf(err, errlen, "%s: %s", f->path,
                 fd < 0 || st.st_size <= WTFILE_MAX_BYTES ? strerror(errno)
                                                          : "larger than 64 KiB: trim it");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    key_of(&st, &f->key);
    f->owner = st.st_uid;
    char *text = malloc((size_t)st.st_size + 1);
    ssize_t got = text ? read(fd, text, (size_t)st.st_size) : -1;
    close(fd);
    if (got < 0) {
        snprintf(err, errlen, "%s: %s", f->path, text ? strerror(errno) : "out of memory");
        free(text);
        return -1;
    }
    text[got] = '\0';
    int rc = parse_text(&p, text);
    free(text);
    if (rc == 0 && f->n == 0)
        rc = fail(&p, 1, "declares no server: add `start = CMD {port}`");
    return rc < 0 || resolve_after(&p) < 0 || check(&p) < 0 ? -1 : 0;
}

const struct wtfile_service *wtfile_by_name(const struct wtfile *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->svc[i].name, name) == 0)
            return &f->svc[i];
    return NULL;
}

const struct wtfile_service *wtfile_by_front(const struct wtfile *f, int front)
{
    for (int i = 0; i < f->n; i++)
        if (f->svc[i].front == front)
            return &f->svc[i];
    return NULL;
}

/* Post-order walk: dependencies first; seen keeps each service once. */
static void visit(const struct wtfile *f, int i, int *seen, int *order, int *n)
{
    if (seen[i])
        return;
    seen[i] = 1;
    for (int k = 0; k < f->svc[i].nafter; k++)
        visit(f, f->svc[i].after[k], seen, order, n);
    order[(*n)++] = i;
}

int wtfile_start_order(const struct wtfile *f, int svc, int *order)
{
    int seen[WTFILE_MAX_SERVICES] = {0}, n = 0;
    visit(f, svc, seen, order, &n);
    return n;
}

void wtfile_front_var(const char *name, char *out, size_t outlen)
{
    size_t used = (size_t)snprintf(out, outlen, "WTPROXY_FRONT_");
    for (const char *c = name; *c && used + 1 < outlen; c++)
        out[used++] = *c == '-' ? '_' : (*c >= 'a' && *c <= 'z') ? (char)(*c - 'a' + 'A') : *c;
    if (used < outlen)
        out[used] = '\0';
}
