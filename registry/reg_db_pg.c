/* reg_db_pg.c - a worktree's test, dev or template database, claimed on
 * the database server where it lives. Creators of one name serialise on a session advisory
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

#include "host.h"
#include "reg_db_pg.h"
#include "reg_pg.h"

#define STAMP_MAX REG_DB_STAMP_MAX

int reg_db_stamp_of(PGconn *c, const char *name, char *comment, size_t len, char *err,
                    size_t errlen)
{
    const char *p[] = {name};
    PGresult *r = reg_pg_exec(c,
                              "SELECT coalesce(shobj_description(oid, 'pg_database'), '')"
                              " FROM pg_database WHERE datname = $1",
                              1, p, err, errlen);
    if (!r)
        return -1;
    int exists = PQntuples(r) == 1;
    snprintf(comment, len, "%s", exists ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return exists;
}

int reg_db_utility(PGconn *c, const char *fmt, const char *name, const char *lit, char *err,
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

int reg_db_lock(PGconn *c, const char *name, char *err, size_t errlen)
{
    const char *p[] = {name};
    PGresult *r =
        reg_pg_exec(c, "SELECT pg_advisory_lock(hashtext('wtproxy-db:' || $1))", 1, p, err, errlen);
    PQclear(r);
    return r ? 0 : -1;
}

/* The CREATE DATABASE failed because from has sessions: say whose.
 * Returns 1 (refused) or -1. */
static int source_in_use(PGconn *c, const char *name, const char *from, char *err, size_t errlen)
{
    char who[2048], e2[256];
    int n = reg_db_holders(c, from, who, sizeof who, e2, sizeof e2);
    if (n < 0) {
        snprintf(err, errlen, "cannot create %s from %s: %s", name, from, reg_pg_last_error());
        return -1;
    }
    snprintf(err, errlen,
             "cannot create %s as a copy of %s: PostgreSQL copies a database "
             "only while nobody is connected to it, and %d session%s %s: %s. Stop them (the "
             "dev server, a psql, a test run), or end them: SELECT pg_terminate_backend(pid) "
             "FROM pg_stat_activity WHERE datname = '%s'; then run the claim again",
             name, from, n, n == 1 ? "" : "s", n == 1 ? "is" : "are",
             n ? who : "(gone by now: retry)", from);
    return 1;
}

/* CREATE DATABASE name [TEMPLATE from], both identifiers quoted.
 * Returns 0, or -1 with err (reg_pg_last_state() says why). */
static int create_sql(PGconn *c, const char *name, const char *from, char *err, size_t errlen)
{
    if (!from)
        return reg_db_utility(c, "CREATE DATABASE %s", name, NULL, err, errlen);
    char *src = PQescapeIdentifier(c, from, strlen(from)), fmt[256];
    if (!src) {
        snprintf(err, errlen, "cannot quote %s: %s", from, PQerrorMessage(c));
        return -1;
    }
    snprintf(fmt, sizeof fmt, "CREATE DATABASE %%s TEMPLATE %s", src);
    PQfreemem(src);
    return reg_db_utility(c, fmt, name, NULL, err, errlen);
}

int reg_db_create(PGconn *c, const char *name, const char *from, const char *stamp, char *err,
                  size_t errlen)
{
    char now[STAMP_MAX];
    if (create_sql(c, name, from, err, errlen) < 0) {
        if (from && strcmp(reg_pg_last_state(), "55006") == 0)
            return source_in_use(c, name, from, err, errlen);
        if (strcmp(reg_pg_last_state(), "42P04") != 0)
            return -1;
        if (reg_db_stamp_of(c, name, now, sizeof now, err, errlen) < 0)
            return -1;
        if (strcmp(now, stamp) == 0)
            return 0;
        snprintf(err, errlen,
                 "database %s was created by someone else at the same moment "
                 "(its stamp: \"%s\"); refused, it is not ours",
                 name, now);
        return 1;
    }
    return reg_db_utility(c, "COMMENT ON DATABASE %s IS %s", name, stamp, err, errlen);
}

void reg_db_our_stamp(const char *machine, const char *worktree, const char *hash, char *out,
                      size_t outlen)
{
    char id[64];
    host_worktree_identity(worktree, id, sizeof id);
    reg_db_stamp(machine, worktree, id, hash, out, outlen);
}

/* What to do with our own database of this worktree. */
static const char *decide_own(const struct reg_db_claim *c, const struct reg_db_owner *o, char *err,
                              size_t errlen)
{
    if (o->kind != c->kind) {
        snprintf(err, errlen,
                 "database %s is this worktree's %s database, not a %s one; "
                 "refused, so that one kind's rules (a test's recreate, a dev's reset) never "
                 "reach the other: use another name, or free it: wtproxy db release --name %s",
                 c->name, reg_db_kind_name(o->kind), reg_db_kind_name(c->kind), c->name);
        return c->force ? "taken over" : NULL;
    }
    if (c->reset)
        return "reset";
    if (c->kind == REG_DB_DEV) /* the dev server migrates forward: its data stays */
        return "kept";
    return c->hash[0] && strcmp(c->hash, o->hash) != 0 ? "recreated" : "kept";
}

/* Whether o, another worktree of this machine still there, has the
 * database c->name because both folder names derive it: then err says
 * so, and that freeing it there or --force takes it from under that
 * worktree's tests; the fix is a folder name of this worktree's own.
 * (Checked after reg_db_owner_gone: a folder that is gone frees it.) */
static int alike(const struct reg_db_claim *c, const struct reg_db_owner *o, char *err,
                 size_t errlen)
{
    char slug[REG_DB_WORKTREE_SLUG + 1], to[PATH_MAX], cmd[3 * PATH_MAX];
    struct host_worktree *wt = malloc(sizeof *wt); /* PATH_MAX thrice */
    size_t n = strlen(c->name), k;
    if (!wt || !reg_db_alike(c->worktree, o->worktree, slug, sizeof slug) ||
        (k = strlen(slug)) >= n || c->name[n - k - 1] != '_' || strcmp(c->name + n - k, slug)) {
        free(wt);
        return 0;
    }
    int is_main =
        host_worktree_of(c->worktree, wt, NULL, 0) == 0 && strcmp(wt->gitdir, wt->common) == 0;
    free(wt);
    if (reg_db_own_folder(c->worktree, o->worktree, to, sizeof to) < 0)
        snprintf(to, sizeof to, "<a folder name of its own>");
    snprintf(cmd, sizeof cmd,
             is_main ? "mv '%s' '%s' && cd '%s' && git worktree repair"
                     : "git worktree move '%s' '%s' && cd '%s'",
             c->worktree, to, to);
    snprintf(err, errlen,
             "database %s is worktree %s's, which is still there: its folder name and this "
             "one's give one database name, ending in %s (a folder's name lowercased, other "
             "characters '_', cut to %d bytes). "
             "Refused: releasing it there, or --force, would drop it from under that "
             "worktree's tests. Give this worktree a folder name of its own, then claim again "
             "there: %s",
             c->name, o->worktree, slug, REG_DB_WORKTREE_SLUG, cmd);
    return 1;
}

/* Decide what to do with an existing database stamped now. Returns the
 * action ("kept", "recreated", ...) or NULL with err (refused). */
static const char *decide(const struct reg_db_claim *c, const char *now, char *err, size_t errlen)
{
    struct reg_db_owner o;
    if (reg_db_parse_stamp(now, &o) < 0) {
        snprintf(err, errlen,
                 "database %s exists and was not made by wtproxy (its comment: "
                 "\"%s\"); it is not ours to drop: use another --base, or take it: --force",
                 c->name, now);
        return c->force ? "taken over" : NULL;
    }
    int same_machine = strcmp(o.machine, c->machine) == 0;
    /* before its own: a worktree removed and added again at its path is a
     * new task, which must not get the old one's rows unasked */
    if (reg_db_owner_gone(&o, c->machine))
        return "reclaimed";
    if (same_machine && strcmp(o.worktree, c->worktree) == 0)
        return decide_own(c, &o, err, errlen);
    if (same_machine && alike(c, &o, err, errlen))
        return c->force ? "taken over" : NULL;
    /* That database only, on its machine: a bare `db release` there drops
     * every database of that worktree, its dev one with its rows too, and
     * run here it released this worktree's own. */
    snprintf(err, errlen,
             "database %s belongs to worktree %s on %s%s; refused. Free it there%s%s: cd %s && "
             "wtproxy db release --name %s (that database only); or take it: --force",
             c->name, o.worktree, same_machine ? "this machine" : "machine ",
             same_machine ? "" : o.machine, same_machine ? "" : ", on machine ",
             same_machine ? "" : o.machine, o.worktree, c->name);
    return c->force ? "taken over" : NULL;
}

/* The stamp a new database of claim c gets: a template is "pending"
 * until its command has migrated it (reg_db_restamp). */
static void new_stamp(const struct reg_db_claim *c, char *out, size_t len)
{
    char pending[REG_DB_HASH_MAX + 32];
    const char *hash = c->hash;
    size_t mark = strlen(REG_DB_TEMPLATE_MARK);
    if (c->kind == REG_DB_TEMPLATE && strncmp(hash, REG_DB_TEMPLATE_MARK, mark) == 0) {
        snprintf(pending, sizeof pending, REG_DB_PENDING_MARK "%s", hash + mark);
        hash = pending;
    }
    reg_db_our_stamp(c->machine, c->worktree, hash, out, len);
}

/* A kept database whose stamp has no identity of its worktree's folder (a
 * stamp of before, or of a file system that told none then): stamped with
 * it now, its hash unchanged, so that a later removal and re-add at its
 * path is seen. Returns 0, or -1 with err. */
static int add_identity(PGconn *pg, const struct reg_db_claim *c, const char *now, char *err,
                        size_t errlen)
{
    struct reg_db_owner o;
    char stamp[STAMP_MAX];
    if (reg_db_parse_stamp(now, &o) < 0 || o.id[0])
        return 0;
    reg_db_our_stamp(c->machine, c->worktree, o.hash, stamp, sizeof stamp);
    if (strcmp(stamp, now) == 0)
        return 0;
    return reg_db_utility(pg, "COMMENT ON DATABASE %s IS %s", c->name, stamp, err, errlen);
}

/* The claim, with the lock held. */
static int claim_locked(PGconn *pg, const struct reg_db_claim *c, const char **done, char *err,
                        size_t errlen)
{
    char stamp[STAMP_MAX], now[STAMP_MAX];
    new_stamp(c, stamp, sizeof stamp);
    int exists = reg_db_stamp_of(pg, c->name, now, sizeof now, err, errlen);
    if (exists < 0)
        return -1;
    if (!exists) {
        *done = "created";
        return reg_db_create(pg, c->name, c->from, stamp, err, errlen);
    }
    if (!(*done = decide(c, now, err, errlen)))
        return 1;
    if (strcmp(*done, "kept") == 0)
        return add_identity(pg, c, now, err, errlen);
    if (reg_db_utility(pg, "DROP DATABASE IF EXISTS %s WITH (FORCE)", c->name, NULL, err, errlen) <
        0)
        return -1;
    return reg_db_create(pg, c->name, c->from, stamp, err, errlen);
}

int reg_db_claim_on_server(const struct reg_db_claim *c, const char **done, char *err,
                           size_t errlen)
{
    PGconn *pg = reg_pg_dial(c->server, "the database server", err, errlen);
    if (!pg)
        return -1;
    int rc = reg_db_lock(pg, c->name, err, errlen);
    if (rc == 0 && c->min_free > 0)
        rc = reg_db_headroom(pg, c->min_free, err, errlen);
    if (rc == 0)
        rc = claim_locked(pg, c, done, err, errlen);
    PQfinish(pg); /* ends the session: the lock goes with it */
    return rc;
}

/* Drop every database whose stamp mine() accepts (name only, when given).
 * Their names go to stderr. Returns the count, or -1 with err. */
static int drop_where(const char *server, const char *name,
                      int (*mine)(const struct reg_db_owner *, const void *), const void *arg,
                      char *err, size_t errlen)
{
    PGconn *pg = reg_pg_dial(server, "the database server", err, errlen);
    if (!pg)
        return -1;
    const char *p[] = {name ? name : ""};
    PGresult *r = reg_pg_exec(pg,
                              "SELECT datname, coalesce(shobj_description(oid, "
                              "'pg_database'), '') FROM pg_database WHERE $1 = '' OR "
                              "datname = $1 ORDER BY datname",
                              1, p, err, errlen);
    int count = r ? 0 : -1;
    for (int i = 0; r && i < PQntuples(r) && count >= 0; i++) {
        struct reg_db_owner o;
        const char *db = PQgetvalue(r, i, 0);
        if (reg_db_parse_stamp(PQgetvalue(r, i, 1), &o) < 0 || !mine(&o, arg))
            continue; /* not ours: never dropped */
        if (reg_db_utility(pg, "DROP DATABASE IF EXISTS %s WITH (FORCE)", db, NULL, err, errlen) <
            0)
            count = -1;
        else {
            fprintf(stderr, "wtproxy: dropped database %s (%s)\n", db, reg_db_kind_name(o.kind));
            count++;
        }
    }
    PQclear(r);
    PQfinish(pg);
    return count;
}

struct holder {
    const char *machine, *worktree;
};

static int of_worktree(const struct reg_db_owner *o, const void *arg)
{
    const struct holder *h = arg;
    return strcmp(o->machine, h->machine) == 0 && strcmp(o->worktree, h->worktree) == 0;
}

static int of_gone_worktree(const struct reg_db_owner *o, const void *arg)
{
    return reg_db_owner_gone(o, (const char *)arg);
}

int reg_db_release_on_server(const char *server, const char *name, const char *machine,
                             const char *worktree, char *err, size_t errlen)
{
    struct holder h = {machine, worktree};
    return drop_where(server, name, of_worktree, &h, err, errlen);
}

int reg_db_release_abandoned(const char *server, const char *machine, char *err, size_t errlen)
{
    return drop_where(server, NULL, of_gone_worktree, machine, err, errlen);
}

int reg_db_restamp(const char *server, const char *name, const char *machine, const char *worktree,
                   const char *hash, char *err, size_t errlen)
{
    char stamp[STAMP_MAX];
    PGconn *pg = reg_pg_dial(server, "the database server", err, errlen);
    if (!pg)
        return -1;
    reg_db_our_stamp(machine, worktree, hash, stamp, sizeof stamp);
    int rc = reg_db_lock(pg, name, err, errlen);
    if (rc == 0)
        rc = reg_db_utility(pg, "COMMENT ON DATABASE %s IS %s", name, stamp, err, errlen);
    PQfinish(pg);
    return rc;
}
