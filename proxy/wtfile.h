/* wtfile.h - the `.wtproxy` file a repository commits at its root: the dev
 * servers the daemon may start for each of its worktrees (ondemand.h).
 * The grammar is at the top of wtfile.c; conf/wtproxy-file.example shows
 * it whole. A file without sections declares one unnamed service, as
 * before services existed; a file with `[service NAME]` sections declares
 * one per section. */
#ifndef WTP_WTFILE_H
#define WTP_WTFILE_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "registry.h"

#define WTFILE_MAX_SERVICES 16
#define WTFILE_MAX_AFTER 8
#define WTFILE_MAX_BYTES 65536 /* a bigger file is refused: a .wtproxy is a few lines */
#define WTFILE_IDLE_DEFAULT_MS (30ULL * 60 * 1000)

struct wtfile_service {
    char name[REG_SERVICE_MAX]; /* "" for the one service of a file without sections */
    char start[2048];           /* run through /bin/sh -c; {port} is its port */
    int front;                  /* the front port it serves */
    char ready[256];            /* GET path that must answer 2xx/3xx; "" = listening */
    unsigned long long idle_ms; /* stop after this long without requests; 0 never */
    int nafter;
    int after[WTFILE_MAX_AFTER]; /* indexes of the services started (and ready) first */
    int line, front_line, after_line;
};

/* Which version of a file this is, as stat tells it: a file whose key is
 * unchanged need not be read again (ondemand_cache.h). All zero: none. */
struct wtfile_key {
    unsigned long long dev, ino;
    long long size, mtime_s, mtime_ns;
};

struct wtfile {
    char path[PATH_MAX + 16];
    struct wtfile_key key; /* of the file read, by fstat of what was read */
    uid_t owner;           /* its owner: the daemon starts only its own user's (ondemand.c) */
    int n;
    struct wtfile_service svc[WTFILE_MAX_SERVICES];
};

/* Read dir/.wtproxy into f. Returns 0, 1 when there is no such file, or
 * -1 with err naming the file, the line and the fix (a bad line, an
 * unknown key, a duplicate or invalid name, `after` naming an unknown
 * service or making a cycle, two services on one front). */
int wtfile_read(const char *dir, struct wtfile *f, char *err, size_t errlen);

/* dir/.wtproxy's key now (stat: may block on a slow filesystem, as a
 * read does); all zero when there is none or it cannot be looked at. */
void wtfile_key(const char *dir, struct wtfile_key *key);

/* Whether a and b name the same version of a file. */
int wtfile_key_same(const struct wtfile_key *a, const struct wtfile_key *b);

/* The service called name ("" the unnamed one), or the one on front; NULL
 * when none. */
const struct wtfile_service *wtfile_by_name(const struct wtfile *f, const char *name);
const struct wtfile_service *wtfile_by_front(const struct wtfile *f, int front);

/* The services to start for svc, in start order: every service it is
 * started after, transitively, each before those that need it, then svc
 * itself. Writes at most WTFILE_MAX_SERVICES indexes; returns how many. */
int wtfile_start_order(const struct wtfile *f, int svc, int *order);

/* The variable name that carries name's front port: WTPROXY_FRONT_<NAME>,
 * upper-cased, '-' as '_'. */
void wtfile_front_var(const char *name, char *out, size_t outlen);

#endif
