/* reg_db.h - per-worktree databases (`wtproxy db`): test and dev
 * databases, a migrated template and its copies. The name rules (pure,
 * reg_db.c), the claim on the database server (reg_db_pg.c), connection
 * headroom and holders (reg_db_conn.c), copies and the listing
 * (reg_db_copy.c); the commands are cli/db.c and cli/db_tpl.c.
 *
 * A name is <base>_<machine-slug>_<worktree-slug>. A slug is the text
 * lowercased, every run of characters outside [a-z0-9] made one '_',
 * leading and trailing '_' removed, then cut to its maximum length. */
#ifndef WTP_REG_DB_H
#define WTP_REG_DB_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#define REG_DB_NAME_MAX 63      /* PostgreSQL's identifier limit (NAMEDATALEN - 1) */
#define REG_DB_WORKER_SUFFIX 3  /* "_NN": Django's --parallel clones name_1 .. name_99 */
#define REG_DB_MACHINE_SLUG 8   /* bytes of the machine id kept in a name */
#define REG_DB_WORKTREE_SLUG 20 /* bytes of the worktree folder name kept */
#define REG_DB_STAMP_PREFIX "wtproxy:"
#define REG_DB_HASH_MAX 96  /* "template:sha256:" and 64 hex digits, or a given hash */
#define REG_DB_SUFFIX_MAX 8 /* bytes of a copy's suffix: <template>_<suffix> */
#define REG_DB_TEMPLATE_MAX (REG_DB_NAME_MAX - 1 - REG_DB_SUFFIX_MAX)
#define REG_DB_MIN_FREE_DEFAULT 5 /* --min-free-connections: slots a claim leaves free */

/* What a stamped database is, told by its stamp's hash field: a test
 * database carries its migrations hash (or ""), the others a word. */
enum reg_db_kind { REG_DB_TEST, REG_DB_DEV, REG_DB_TEMPLATE, REG_DB_COPY };
#define REG_DB_DEV_MARK "dev"
#define REG_DB_TEMPLATE_MARK "template:"        /* + the migrations hash once migrated */
#define REG_DB_PENDING_MARK "template-pending:" /* + hash while its command runs */
#define REG_DB_COPY_MARK "copy:"                /* + the template's name */

/* s as a slug of at most max bytes into out ("" when nothing is left). */
void reg_db_slug(const char *s, size_t max, char *out, size_t outlen);

/* <base>_<machine-slug>_<worktree-slug> into out, unchecked: each kind
 * checks its own rules. Returns 0, or -1 with err. */
int reg_db_derive(const char *base, const char *machine, const char *worktree, char *out,
                  size_t outlen, char *err, size_t errlen);

/* Whether a failed start's last lines say its database does not exist
 * (psycopg's and node-postgres' `database "X" does not exist`), X being
 * the dev database `wtproxy db claim --dev BASE` names for worktree on
 * machine (reg_machine_id: this one): X into db, BASE into base. A new worktree of an app whose
 * settings use claimed_databases has none until then, and no edit of a
 * file helps: what the daemon's 503 and `wtproxy restart` then say. */
int reg_db_missing_dev(const char *lines, const char *machine, const char *worktree, char *db,
                       size_t dblen, char *base, size_t baselen);

/* Whether a failed start's last lines say its PostgreSQL server refused
 * the connection: libpq's (psycopg, Django) `connection to server at
 * "H", port P failed: Connection refused`, or older `could not connect to
 * server: Connection refused ... on host "H" ... on port P`, or
 * node-postgres' `ECONNREFUSED H:P` (with pg in its stack, or port
 * 5432). Writes "its database server at H:P does not answer: start it
 * (pg_isready ...)" into out, which the caller ends with its restart. A server down is no
 * error of the app's files: "fix the error and save" sent an agent to
 * edit code. */
int reg_db_refused(const char *lines, char *out, size_t len);

/* The test database name for base on machine in worktree (its realpath),
 * checked against the rules. Returns 0, or -1 with err saying which rule
 * the name breaks and why the rule exists. */
int reg_db_name(const char *base, const char *machine, const char *worktree, char *out,
                size_t outlen, char *err, size_t errlen);

/* Check an exact name against the rules: contains "test", ^[a-z0-9_]+$,
 * at most REG_DB_NAME_MAX - REG_DB_WORKER_SUFFIX bytes. */
int reg_db_check_name(const char *name, char *err, size_t errlen);

/* Check a dev database's name: ^[a-z0-9_]+$, at most 63 bytes, and never
 * base (the shared database a worktree's own is named after) nor from
 * (the database it is copied from). Either may be NULL. */
int reg_db_check_dev_name(const char *name, const char *base, const char *from, char *err,
                          size_t errlen);

/* Check a template's name (a test name with room for "_<suffix>") and a
 * copy's suffix (^[a-z0-9]{1,8}$). Return 0, or -1 with err. */
int reg_db_check_template_name(const char *name, char *err, size_t errlen);
int reg_db_check_suffix(const char *suffix, char *err, size_t errlen);

/* The owner stamp, COMMENT ON DATABASE:
 * "wtproxy:<machine>:<id>:<worktree>|<migrations hash>", id the worktree
 * folder's identity (host_worktree_identity: never a '/' or ':'), so that
 * a worktree removed and added again at its path is told from the one
 * that claimed; "wtproxy:<machine>:<worktree>|..." without one (unknown,
 * or a stamp of before). */
void reg_db_stamp(const char *machine, const char *worktree, const char *id, const char *hash,
                  char *out, size_t outlen);

struct reg_db_owner {
    char machine[128];
    char id[64]; /* the worktree folder's identity when stamped; "" unknown */
    char worktree[PATH_MAX];
    char hash[REG_DB_HASH_MAX];
    enum reg_db_kind kind;
};

/* The kind a stamp's hash field says. */
enum reg_db_kind reg_db_kind_of(const char *hash);

/* "test", "dev", "template", "copy". */
const char *reg_db_kind_name(enum reg_db_kind k);

/* Parse a stamp. Returns 0, or -1 when comment is not one of ours. */
int reg_db_parse_stamp(const char *comment, struct reg_db_owner *o);

/* Whether o's worktree, of this machine, is gone for sure: its folder is,
 * or the folder at its path is another than the one that stamped (removed
 * and added again at its path, as slot paths are reused). Another
 * machine's is never gone: its folders are not ours to look at. Its
 * database is abandoned (wtproxy db release --abandoned drops it; a claim
 * reclaims it fresh; `db ls` and doctor say so). */
int reg_db_owner_gone(const struct reg_db_owner *o, const char *machine);

/* SHA-256 of the files under dir (relative path, NUL, content, NUL; in
 * byte order of path; __pycache__ folders and *.pyc skipped) as
 * "sha256:<hex>". Returns 0, or -1 with err. */
int reg_db_hash_dir(const char *dir, char *out, size_t outlen, char *err, size_t errlen);

/* --- reg_db_alike.c --- */

/* Whether worktrees a and b, two paths, derive one name: their folders'
 * slugs, cut to REG_DB_WORKTREE_SLUG, are equal; that slug into slug. */
int reg_db_alike(const char *a, const char *b, char *slug, size_t len);

/* A path beside worktree, not there yet, whose folder's name derives
 * another name than other's: worktree's folder name cut to leave room for
 * what tells it from other ("fix-the-login-r-loop", "wt-a-shop2"), into
 * out. Returns 0, or -1 when none is found. */
int reg_db_own_folder(const char *worktree, const char *other, char *out, size_t len);

/* --- reg_db_pg.c --- */

struct reg_db_claim {
    const char *server; /* libpq URI/conninfo of the app's server; "" = PG* variables */
    const char *name;
    const char *machine;
    const char *worktree;
    const char *hash; /* the stamp's hash field: a test's migrations hash ("" = not
                         checked), REG_DB_DEV_MARK, or a template's mark */
    enum reg_db_kind kind;
    const char *from; /* NULL, or CREATE DATABASE name TEMPLATE from */
    int force;
    int reset;    /* drop and create again even when kept */
    int min_free; /* refuse when fewer connections are free (0: no check) */
};

/* Make c->name exist and be ours (`wtproxy db --help` says the
 * rules). A test or template whose hash changed is recreated; a dev
 * database never is (only c->reset does). Returns 0 with what was done in
 * *done ("created", "kept", "recreated", "reclaimed", "taken over",
 * "reset"), 1 refused (err names the owner, or the connections' holders),
 * -1 with err. */
int reg_db_claim_on_server(const struct reg_db_claim *c, const char **done, char *err,
                           size_t errlen);

/* Drop the databases stamped as this machine's and worktree's: only
 * name when given (and only if the stamp is ours), else every one so
 * stamped. Their names go to stderr. Returns the count, or -1 with err. */
int reg_db_release_on_server(const char *server, const char *name, const char *machine,
                             const char *worktree, char *err, size_t errlen);

/* Drop the databases stamped by this machine whose worktree folder is
 * gone (a worktree deleted before its release). Returns the count, or
 * -1 with err. */
int reg_db_release_abandoned(const char *server, const char *machine, char *err, size_t errlen);

/* Re-stamp name (ours) with hash: a template once its command succeeded.
 * Returns 0, or -1 with err. */
int reg_db_restamp(const char *server, const char *name, const char *machine, const char *worktree,
                   const char *hash, char *err, size_t errlen);

/* --- reg_db_copy.c: copies of a template, the listing --- */

struct reg_db_copy {
    const char *server;
    const char *template_name;
    const char *const *names; /* the copies' full names */
    size_t count;
    const char *machine;
    const char *worktree;
    int min_free;
};

/* Create each copy as CREATE DATABASE copy TEMPLATE template, stamped
 * ours; a copy of ours that exists is dropped and made fresh. The
 * template must be ours and migrated. Returns 0, 1 refused (err says
 * whose the name is, or who holds the template), -1 with err. */
int reg_db_copy_on_server(const struct reg_db_copy *c, char *err, size_t errlen);

/* Print every database wtproxy stamped on the server (name, kind,
 * machine, worktree, whether that worktree is gone) to out, as text or
 * JSON. Returns the count, or -1 with err. */
int reg_db_list(const char *server, const char *machine, int json, FILE *out, char *err,
                size_t errlen);

#endif
