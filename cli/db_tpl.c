/* db_tpl.c - `wtproxy db template|copy|ls`: a migrated template per
 * worktree, fresh copies of it for test files or workers, and the list of
 * every database wtproxy stamped. A template is migrated once per
 * migrations hash (by the command after "--"); each copy is then a
 * CREATE DATABASE ... TEMPLATE, far faster than migrating again
 * (tests/bench/RESULTS-db-template.md). */
#include "cli.h"

#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "db.h"
#include "reg_db.h"
#include "registry.h"

extern char **environ;

int db_template_name(const struct db_args *a, const char *wt, char *out, size_t len, char *err,
                     size_t errlen)
{
    if (!a->base) {
        snprintf(err, errlen, "give --base NAME (the template's, e.g. --base test_app)");
        return -1;
    }
    if (reg_db_derive(a->base, reg_machine_id(), wt, out, len, err, errlen) < 0)
        return -1;
    return reg_db_check_template_name(out, err, errlen);
}

/* url (postgres:// or postgresql://) with its database name db, into
 * out; 0 when url is no such URL. */
static int url_naming(const char *url, const char *db, char *out, size_t len)
{
    const char *rest = strncmp(url, "postgres://", 11) == 0     ? url + 11
                       : strncmp(url, "postgresql://", 13) == 0 ? url + 13
                                                                : NULL;
    if (!rest)
        return 0;
    size_t host = strcspn(rest, "/?");
    const char *query = strchr(rest + host, '?');
    int n = snprintf(out, len, "%.*s/%s%s", (int)(rest - url + host), url, db, query ? query : "");
    return n > 0 && (size_t)n < len;
}

/* The settings a shell that loaded the dev ones (`. .env.wt`, a claim's
 * --write-env) passes on, and that an app's database config prefers to
 * PGDATABASE: the migrate command migrated the dev database, and the
 * template, left empty, was kept for good. Each one set names the
 * template, a DATABASE_URL by its database. */
static void name_template(const char *name)
{
    static const char *const keys[] = {"WTPROXY_DEV_DB", "WTPROXY_TEST_DB", "WT_DB", "WT_TEST_DB"};
    char url[4096];
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (getenv(keys[i]))
            setenv(keys[i], name, 1);
    const char *was = getenv("DATABASE_URL");
    if (was && url_naming(was, name, url, sizeof url))
        setenv("DATABASE_URL", url, 1);
}

/* Run argv with WTPROXY_TEMPLATE_DB and PGDATABASE (and the settings
 * name_template names) naming the template. Returns its exit status
 * (128+N for signal N), or -1 (printed why). */
static int migrate(char **argv, const char *name)
{
    pid_t pid;
    int st;
    setenv("WTPROXY_TEMPLATE_DB", name, 1);
    setenv("PGDATABASE", name, 1);
    name_template(name);
    int e = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
    if (e != 0) {
        fprintf(stderr, "wtproxy: cannot run %s: %s\n", argv[0], strerror(e));
        return -1;
    }
    while (waitpid(pid, &st, 0) < 0)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* After the claim: run the migrate command on a new template, then mark
 * it migrated. A kept template was migrated for this hash already. */
static int finish_template(const struct db_args *a, const char *name, const char *done,
                           const char *mark)
{
    char err[PATH_MAX + 512];
    if (strcmp(done, "kept") == 0)
        return 0;
    if (a->argc > 0) {
        int st = migrate(a->argv, name);
        if (st != 0) {
            fprintf(stderr,
                    "wtproxy: the migrate command %s %s%d; template %s stays "
                    "unmigrated and copies of it are refused. Fix it and run the same "
                    "wtproxy db template again (it starts from an empty database)\n",
                    a->argv[0], st < 0 ? "did not run" : "exited ", st < 0 ? 0 : st, name);
            return 1;
        }
    }
    if (reg_db_restamp(a->server, name, reg_machine_id(), a->worktree, mark, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy: cannot mark template %s migrated: %s\n", name, err);
        return 1;
    }
    return 0;
}

int db_cmd_template(const struct db_args *a)
{
    char name[256], hash[REG_DB_HASH_MAX], mark[REG_DB_HASH_MAX + 16], err[PATH_MAX * 2 + 4096];
    char text[512];
    const char *done = "";
    if (db_template_name(a, a->worktree, name, sizeof name, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy: %s\n", err);
        return a->base ? 1 : 2;
    }
    if (db_hash(a, hash, sizeof hash) != 0)
        return 1;
    snprintf(mark, sizeof mark, REG_DB_TEMPLATE_MARK "%s", hash);
    struct reg_db_claim c = {.server = a->server,
                             .name = name,
                             .machine = reg_machine_id(),
                             .worktree = a->worktree,
                             .hash = mark,
                             .kind = REG_DB_TEMPLATE,
                             .force = a->force,
                             .reset = a->reset,
                             .min_free = a->min_free};
    int r = reg_db_claim_on_server(&c, &done, err, sizeof err);
    if (r != 0) {
        fprintf(stderr, "wtproxy: %s%s\n", r > 0 ? "" : "cannot claim the template: ", err);
        return 1;
    }
    fprintf(stderr, "wtproxy: template database %s %s for %s\n", name, done, a->worktree);
    if (finish_template(a, name, done, mark) != 0)
        return 1;
    snprintf(text, sizeof text, "WTPROXY_TEMPLATE_DB=%s\n", name);
    return db_give_text(a, text);
}

int db_cmd_copy(const struct db_args *a)
{
    char tpl[256], err[PATH_MAX * 2 + 4096];
    if (a->argc == 0)
        return db_usage_error("give the copies' suffixes: wtproxy db copy --base BASE w1 w2");
    if (a->argc > 64)
        return db_usage_error("at most 64 copies in one call");
    if (db_template_name(a, a->worktree, tpl, sizeof tpl, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy: %s\n", err);
        return a->base ? 1 : 2;
    }
    char names[64][256 + REG_DB_SUFFIX_MAX + 2], text[sizeof names + 512] = "WTPROXY_COPY_DBS=";
    const char *list[64];
    for (int i = 0; i < a->argc; i++) {
        if (reg_db_check_suffix(a->argv[i], err, sizeof err) < 0) {
            fprintf(stderr, "wtproxy: %s\n", err);
            return 1;
        }
        snprintf(names[i], sizeof names[i], "%s_%s", tpl, a->argv[i]);
        list[i] = names[i];
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s", i ? " " : "", names[i]);
    }
    struct reg_db_copy c = {.server = a->server,
                            .template_name = tpl,
                            .names = list,
                            .count = (size_t)a->argc,
                            .machine = reg_machine_id(),
                            .worktree = a->worktree,
                            .min_free = a->min_free};
    int r = reg_db_copy_on_server(&c, err, sizeof err);
    if (r != 0) {
        fprintf(stderr, "wtproxy: %s%s\n", r > 0 ? "" : "cannot copy: ", err);
        return 1;
    }
    snprintf(text + strlen(text), sizeof text - strlen(text), "\nWTPROXY_TEMPLATE_DB=%s\n", tpl);
    return db_give_text(a, text);
}

int db_cmd_ls(const struct db_args *a)
{
    char err[PATH_MAX + 512];
    int n = reg_db_list(a->server, reg_machine_id(), a->json, stdout, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "wtproxy: cannot list the databases: %s\n", err);
        return 1;
    }
    return 0;
}
