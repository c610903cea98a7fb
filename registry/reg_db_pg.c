/* reg_db_pg.c - a worktree's test database, claimed on the database server
 * where it lives. Creators of one name serialise on a session advisory
 * lock on that server (it dies with the claimer's connection, so a killed
 * claim never leaves it held); the owner is the database's own stamp
 * (COMMENT ON DATABASE, reg_db.h), so the truth is on the server, not in
 * any local file. Drops are by exact name, only of databases we stamped. */
#include "reg_db.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reg_pg.h"

#define STAMP_MAX (PATH_MAX + 256)

/* The stamp of name into comment (may be ""). Returns 1 exists, 0 not, -1. */
static int stamp_of(PGconn *c, const char *name, char *comment, size_t len, char *err,
                    size_t errlen)
{
    const char *p[] = {name};
    PGresult *r = reg_pg_exec(c, "SELECT coalesce(shobj_description(oid, 'pg_database'), '')"
                              " FROM pg_database WHERE datname = $1", 1, p, err, errlen);
    if (!r)
        return -1;
    int exists = PQntuples(r) == 1;
    snprintf(comment, len, "%s", exists ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return exists;
}

/* Run one utility statement on the identifier name (quoted by libpq).
 * fmt has one %s for it and, with lit, a second for the literal. */
static int utility(PGconn *c, const char *fmt, const char *name, const char *lit, char *err,
                   size_t errlen)
{
    char *id = PQescapeIdentifier(c, name, strlen(name));
    char *l = lit ? PQescapeLiteral(c, lit, strlen(lit)) : NULL;
    char sql[STAMP_MAX * 2 + 256];
    int rc = -1;
    if (id && (!lit || l)) {
        snprintf(sql, sizeof sql, fmt, id, l ? l : "");
        PGresult *r = reg_pg_exec(c, sql, 0, NULL, err, errlen);
        rc = r ? 0 : -1;
        PQclear(r);
    }
    PQfreemem(id);
    PQfreemem(l);
    return rc;
}

/* Create name stamped with stamp. A concurrent creator's 42P04
 * (duplicate_database) counts only if the database then carries our
 * stamp. Returns 0, 1 refused, -1. */
static int create(PGconn *c, const char *name, const char *stamp, char *err, size_t errlen)
{
    char now[STAMP_MAX];
    if (utility(c, "CREATE DATABASE %s", name, NULL, err, errlen) < 0) {
        if (strcmp(reg_pg_last_state(), "42P04") != 0)
            return -1;
        if (stamp_of(c, name, now, sizeof now, err, errlen) < 0)
            return -1;
        if (strcmp(now, stamp) == 0)
            return 0;
        snprintf(err, errlen, "database %s was created by someone else at the same moment "
                 "(its stamp: \"%s\"); refused, it is not ours", name, now);
        return 1;
    }
    return utility(c, "COMMENT ON DATABASE %s IS %s", name, stamp, err, errlen);
}

static int recreate(PGconn *c, const char *name, const char *stamp, char *err, size_t errlen)
{
    if (utility(c, "DROP DATABASE IF EXISTS %s WITH (FORCE)", name, NULL, err, errlen) < 0)
        return -1;
    return create(c, name, stamp, err, errlen);
}

/* Whether a worktree folder of this machine is gone for sure. */
static int folder_gone(const char *path)
{
    struct stat st;
    return stat(path, &st) < 0 && (errno == ENOENT || errno == ENOTDIR);
}

/* Decide what to do with an existing database stamped now. Returns the
 * action ("kept", "recreated", ...) or NULL with err (refused). */
static const char *decide(const struct reg_db_claim *c, const char *now, char *err,
                          size_t errlen)
{
    struct reg_db_owner o;
    if (reg_db_parse_stamp(now, &o) < 0) {
        snprintf(err, errlen, "database %s exists and was not made by wtproxy (its comment: "
                 "\"%s\"); it is not ours to drop: use another --base, or take it: --force",
                 c->name, now);
        return c->force ? "taken over" : NULL;
    }
    int same_machine = strcmp(o.machine, c->machine) == 0;
    if (same_machine && strcmp(o.worktree, c->worktree) == 0)
        return c->hash[0] && strcmp(c->hash, o.hash) != 0 ? "recreated" : "kept";
    if (same_machine && folder_gone(o.worktree))
        return "reclaimed";
    snprintf(err, errlen, "database %s belongs to worktree %s on %s%s; refused. Free it "
             "there: cd %s && wtproxy db release; or take it: --force", c->name, o.worktree,
             same_machine ? "this machine" : "machine ", same_machine ? "" : o.machine,
             o.worktree);
    return c->force ? "taken over" : NULL;
}

/* The claim, with the lock held. */
static int claim_locked(PGconn *pg, const struct reg_db_claim *c, const char **done, char *err,
                        size_t errlen)
{
    char stamp[STAMP_MAX], now[STAMP_MAX];
    reg_db_stamp(c->machine, c->worktree, c->hash, stamp, sizeof stamp);
    int exists = stamp_of(pg, c->name, now, sizeof now, err, errlen);
    if (exists < 0)
        return -1;
    if (!exists) {
        *done = "created";
        return create(pg, c->name, stamp, err, errlen);
    }
    if (!(*done = decide(c, now, err, errlen)))
        return 1;
    if (strcmp(*done, "kept") == 0)
        return 0;
    return recreate(pg, c->name, stamp, err, errlen);
}

int reg_db_claim_on_server(const struct reg_db_claim *c, const char **done, char *err,
                           size_t errlen)
{
    PGconn *pg = reg_pg_dial(c->server, "the database server", err, errlen);
    if (!pg)
        return -1;
    const char *p[] = {c->name};
    PGresult *r = reg_pg_exec(pg, "SELECT pg_advisory_lock(hashtext('wtproxy-db:' || $1))", 1,
                              p, err, errlen);
    int rc = r ? claim_locked(pg, c, done, err, errlen) : -1;
    PQclear(r);
    PQfinish(pg); /* ends the session: the lock goes with it */
    return rc;
}

int reg_db_release_on_server(const char *server, const char *name, const char *machine,
                             const char *worktree, char *err, size_t errlen)
{
    PGconn *pg = reg_pg_dial(server, "the database server", err, errlen);
    if (!pg)
        return -1;
    const char *p[] = {name ? name : ""};
    PGresult *r = reg_pg_exec(pg, "SELECT datname, coalesce(shobj_description(oid, "
                              "'pg_database'), '') FROM pg_database WHERE $1 = '' OR "
                              "datname = $1 ORDER BY datname", 1, p, err, errlen);
    int count = r ? 0 : -1;
    for (int i = 0; r && i < PQntuples(r) && count >= 0; i++) {
        struct reg_db_owner o;
        const char *db = PQgetvalue(r, i, 0);
        if (reg_db_parse_stamp(PQgetvalue(r, i, 1), &o) < 0 || strcmp(o.machine, machine) != 0 ||
            strcmp(o.worktree, worktree) != 0)
            continue; /* not ours: never dropped */
        if (utility(pg, "DROP DATABASE IF EXISTS %s WITH (FORCE)", db, NULL, err, errlen) < 0)
            count = -1;
        else {
            fprintf(stderr, "wtproxy: dropped database %s\n", db);
            count++;
        }
    }
    PQclear(r);
    PQfinish(pg);
    return count;
}
