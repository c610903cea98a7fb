/* reg_db_pg.h - what the server-side files of `wtproxy db` share
 * (reg_db_pg.c, reg_db_conn.c, reg_db_copy.c). Internal to registry/. */
#ifndef WTP_REG_DB_PG_H
#define WTP_REG_DB_PG_H

#include <libpq-fe.h>
#include <limits.h>
#include <stddef.h>

#define REG_DB_STAMP_MAX (PATH_MAX + 256)

/* The stamp of name into comment (may be ""). Returns 1 exists, 0 not, -1. */
struct reg_db_owner;

/* Our stamp of worktree (reg_db_stamp), with its folder's identity
 * (host_worktree_identity) when the file system tells one. */
void reg_db_our_stamp(const char *machine, const char *worktree, const char *hash, char *out,
                      size_t outlen);

int reg_db_stamp_of(PGconn *c, const char *name, char *comment, size_t len, char *err,
                    size_t errlen);

/* Run one utility statement on the identifier name (quoted by libpq).
 * fmt has one %s for it and, with lit, a second for the literal (quoted).
 * Returns 0, or -1 with err. */
int reg_db_utility(PGconn *c, const char *fmt, const char *name, const char *lit, char *err,
                   size_t errlen);

/* Take the creators' advisory lock on name for this session (it dies with
 * the connection). Returns 0, or -1 with err. */
int reg_db_lock(PGconn *c, const char *name, char *err, size_t errlen);

/* CREATE DATABASE name [TEMPLATE from], then stamp it. A concurrent
 * creator's 42P04 counts only if the database then carries our stamp; a
 * template in use (55006) is refused naming who is connected to it.
 * Returns 0, 1 refused, -1. */
int reg_db_create(PGconn *c, const char *name, const char *from, const char *stamp, char *err,
                  size_t errlen);

/* --- reg_db_conn.c --- */

/* Refuse (1, err naming who holds the connections, grouped, and how to
 * raise the limit) when fewer than min_free connections are free on the
 * server: max_connections minus the reserved ones minus those in use.
 * Returns 0 enough, 1 refused, -1 with err. */
int reg_db_headroom(PGconn *c, int min_free, char *err, size_t errlen);

/* The sessions connected to db (other than ours), as "pid N (application
 * "A", user U, from ADDR); ..." into out. Returns their count, -1. */
int reg_db_holders(PGconn *c, const char *db, char *out, size_t outlen, char *err, size_t errlen);

#endif
