/* reg_db_copy.c - copies of a worktree's migrated template (one fresh
 * database per test file or worker, made by CREATE DATABASE ... TEMPLATE
 * in a fraction of a migration's time), and the listing of every database
 * wtproxy stamped. A copy is stamped like any claim, so release drops it
 * by its exact name: never a prefix, which would reach other worktrees'
 * templates and copies mid-run. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reg_db.h"
#include "reg_db_pg.h"
#include "reg_pg.h"

/* Whether template is this worktree's migrated template. Returns 0 yes,
 * 1 refused (err says what it is instead), -1. */
static int check_template(PGconn *pg, const struct reg_db_copy *c, char *err, size_t errlen)
{
    char now[REG_DB_STAMP_MAX];
    struct reg_db_owner o;
    int exists = reg_db_stamp_of(pg, c->template_name, now, sizeof now, err, errlen);
    if (exists < 0)
        return -1;
    int ours = exists && reg_db_parse_stamp(now, &o) == 0 && o.kind == REG_DB_TEMPLATE &&
               strcmp(o.machine, c->machine) == 0 && strcmp(o.worktree, c->worktree) == 0;
    if (ours && strncmp(o.hash, REG_DB_TEMPLATE_MARK, strlen(REG_DB_TEMPLATE_MARK)) == 0)
        return 0;
    snprintf(err, errlen,
             "no migrated template %s of worktree %s (%s); make it first: "
             "wtproxy db template --base BASE --migrations-dir DIR -- MIGRATE-COMMAND",
             c->template_name, c->worktree,
             !exists ? "it does not exist"
             : !ours ? "that database is not this worktree's template"
                     : "its migrate command has not succeeded yet");
    return 1;
}

/* Make one copy, with its name's lock held. Returns 0, 1 refused, -1. */
static int copy_one(PGconn *pg, const struct reg_db_copy *c, const char *name, char *err,
                    size_t errlen)
{
    char stamp[REG_DB_STAMP_MAX], now[REG_DB_STAMP_MAX], hash[REG_DB_HASH_MAX];
    struct reg_db_owner o;
    snprintf(hash, sizeof hash, REG_DB_COPY_MARK "%s", c->template_name);
    reg_db_stamp(c->machine, c->worktree, hash, stamp, sizeof stamp);
    int exists = reg_db_stamp_of(pg, name, now, sizeof now, err, errlen);
    if (exists < 0)
        return -1;
    if (exists) {
        if (reg_db_parse_stamp(now, &o) < 0 || o.kind != REG_DB_COPY ||
            strcmp(o.machine, c->machine) != 0 || strcmp(o.worktree, c->worktree) != 0) {
            snprintf(err, errlen,
                     "database %s exists and is not a copy of this worktree's "
                     "(its stamp: \"%s\"); refused, it is not ours to replace: use another "
                     "suffix",
                     name, now);
            return 1;
        }
        if (reg_db_utility(pg, "DROP DATABASE IF EXISTS %s WITH (FORCE)", name, NULL, err, errlen) <
            0)
            return -1;
    }
    int rc = reg_db_create(pg, name, c->template_name, stamp, err, errlen);
    if (rc == 0)
        fprintf(stderr, "wtproxy: database %s %s from %s\n", name,
                exists ? "copied afresh" : "copied", c->template_name);
    return rc;
}

int reg_db_copy_on_server(const struct reg_db_copy *c, char *err, size_t errlen)
{
    PGconn *pg = reg_pg_dial(c->server, "the database server", err, errlen);
    if (!pg)
        return -1;
    int rc = c->min_free > 0 ? reg_db_headroom(pg, c->min_free, err, errlen) : 0;
    if (rc == 0)
        rc = check_template(pg, c, err, errlen);
    for (size_t i = 0; rc == 0 && i < c->count; i++) {
        const char *p[] = {c->names[i]};
        rc = reg_db_lock(pg, c->names[i], err, errlen);
        if (rc == 0)
            rc = copy_one(pg, c, c->names[i], err, errlen);
        /* one lock at a time: two copiers of overlapping sets never wait in a circle */
        PQclear(reg_pg_exec(pg, "SELECT pg_advisory_unlock(hashtext('wtproxy-db:' || $1))", 1, p,
                            NULL, 0));
    }
    PQfinish(pg);
    return rc;
}

/* One listed database, as text or into the JSON array. */
static void list_one(const char *name, const struct reg_db_owner *o, int is_gone, json_t *arr,
                     FILE *out)
{
    if (arr) {
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:b}", "name", name, "kind",
                                             reg_db_kind_name(o->kind), "machine", o->machine,
                                             "worktree", o->worktree, "worktree_gone", is_gone));
        return;
    }
    fprintf(out, "%-40s %-8s %-10s %s%s\n", name, reg_db_kind_name(o->kind), o->machine,
            o->worktree, is_gone ? "  (gone: wtproxy db release --abandoned)" : "");
}

int reg_db_list(const char *server, const char *machine, int json, FILE *out, char *err,
                size_t errlen)
{
    PGconn *pg = reg_pg_dial(server, "the database server", err, errlen);
    if (!pg)
        return -1;
    PGresult *r = reg_pg_exec(pg,
                              "SELECT datname, coalesce(shobj_description(oid, "
                              "'pg_database'), '') FROM pg_database ORDER BY datname",
                              0, NULL, err, errlen);
    int count = r ? 0 : -1;
    json_t *arr = json ? json_array() : NULL;
    if (r && !json)
        fprintf(out, "%-40s %-8s %-10s %s\n", "NAME", "KIND", "MACHINE", "WORKTREE");
    for (int i = 0; r && i < PQntuples(r); i++) {
        struct reg_db_owner o;
        if (reg_db_parse_stamp(PQgetvalue(r, i, 1), &o) < 0)
            continue;
        list_one(PQgetvalue(r, i, 0), &o, reg_db_owner_gone(&o, machine), arr, out);
        count++;
    }
    if (arr && count >= 0) {
        json_dumpf(arr, out, JSON_INDENT(2));
        fputc('\n', out);
    }
    json_decref(arr);
    PQclear(r);
    PQfinish(pg);
    return count;
}
