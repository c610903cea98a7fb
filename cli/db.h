/* db.h - what the `wtproxy db` files share: the parsed flags, the names
 * they give, the env they print or write. Internal to cli/ (db.c: claim,
 * release, names; db_tpl.c: template, copy, ls). */
#ifndef WTP_CLI_DB_H
#define WTP_CLI_DB_H

#include <stddef.h>

struct db_args {
    const char *base, *name, *dev, *dev_name, *from, *server, *hash, *dir, *env_file, *worktree,
        *min_free_s;
    int force, print_env, reset, abandoned, json;
    int min_free;
    int releasing; /* release: --name may be any kind's exact name */
    int argc;      /* what follows the flags: copy's suffixes, template's command */
    char **argv;
};

/* Print "wtproxy db: msg (see ...)" and return 2 (bad usage). */
int db_usage_error(const char *msg);

/* The migrations hash of --migrations-hash or --migrations-dir into hash
 * ("" when neither). Returns 0, or prints why and returns 1. */
int db_hash(const struct db_args *a, char *hash, size_t len);

/* Print and/or write env text (--print-env, --write-env FILE). Returns 0,
 * or 1 (printed why). */
int db_give_text(const struct db_args *a, const char *text);

/* The template's name for --base, checked. Returns 0, or -1 with err. */
int db_template_name(const struct db_args *a, const char *wt, char *out, size_t len, char *err,
                     size_t errlen);

int db_cmd_template(const struct db_args *a);
int db_cmd_copy(const struct db_args *a);
int db_cmd_ls(const struct db_args *a);

#endif
