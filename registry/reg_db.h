/* reg_db.h - per-worktree test databases (`wtproxy db claim|release`):
 * the name rules (pure, reg_db.c), the claim on the database server
 * (reg_db_pg.c); the commands are cli/db.c.
 *
 * A name is <base>_<machine-slug>_<worktree-slug>. A slug is the text
 * lowercased, every run of characters outside [a-z0-9] made one '_',
 * leading and trailing '_' removed, then cut to its maximum length. */
#ifndef WTP_REG_DB_H
#define WTP_REG_DB_H

#include <limits.h>
#include <stddef.h>

#define REG_DB_NAME_MAX 63          /* PostgreSQL's identifier limit (NAMEDATALEN - 1) */
#define REG_DB_WORKER_SUFFIX 3      /* "_NN": Django's --parallel clones name_1 .. name_99 */
#define REG_DB_MACHINE_SLUG 8       /* bytes of the machine id kept in a name */
#define REG_DB_WORKTREE_SLUG 20     /* bytes of the worktree folder name kept */
#define REG_DB_STAMP_PREFIX "wtproxy:"
#define REG_DB_HASH_MAX 80          /* "sha256:" and 64 hex digits, or a given hash */

/* s as a slug of at most max bytes into out ("" when nothing is left). */
void reg_db_slug(const char *s, size_t max, char *out, size_t outlen);

/* The database name for base on machine in worktree (its realpath),
 * checked against the rules. Returns 0, or -1 with err saying which rule
 * the name breaks and why the rule exists. */
int reg_db_name(const char *base, const char *machine, const char *worktree, char *out,
                size_t outlen, char *err, size_t errlen);

/* Check an exact name against the rules: contains "test", ^[a-z0-9_]+$,
 * at most REG_DB_NAME_MAX - REG_DB_WORKER_SUFFIX bytes. */
int reg_db_check_name(const char *name, char *err, size_t errlen);

/* The owner stamp, COMMENT ON DATABASE:
 * "wtproxy:<machine>:<worktree>|<migrations hash>". */
void reg_db_stamp(const char *machine, const char *worktree, const char *hash, char *out,
                  size_t outlen);

struct reg_db_owner {
    char machine[128];
    char worktree[PATH_MAX];
    char hash[REG_DB_HASH_MAX];
};

/* Parse a stamp. Returns 0, or -1 when comment is not one of ours. */
int reg_db_parse_stamp(const char *comment, struct reg_db_owner *o);

/* SHA-256 of the files under dir (relative path, NUL, content, NUL; in
 * byte order of path; __pycache__ folders and *.pyc skipped) as
 * "sha256:<hex>". Returns 0, or -1 with err. */
int reg_db_hash_dir(const char *dir, char *out, size_t outlen, char *err, size_t errlen);

/* --- reg_db_pg.c --- */

struct reg_db_claim {
    const char *server;   /* libpq URI/conninfo of the app's server; "" = PG* variables */
    const char *name;
    const char *machine;
    const char *worktree;
    const char *hash;     /* "" = not checked */
    int force;
};

/* Make c->name exist and be ours (`wtproxy db --help` says the
 * rules). Returns 0 with what was done in *done ("created", "kept",
 * "recreated", "reclaimed", "taken over"), 1 refused (err names the
 * owner), -1 with err. */
int reg_db_claim_on_server(const struct reg_db_claim *c, const char **done, char *err,
                           size_t errlen);

/* Drop the databases stamped as this machine's and worktree's: only
 * name when given (and only if the stamp is ours), else every one so
 * stamped. Their names go to stderr. Returns the count, or -1 with err. */
int reg_db_release_on_server(const char *server, const char *name, const char *machine,
                             const char *worktree, char *err, size_t errlen);

#endif
