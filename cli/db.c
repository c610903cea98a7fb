/* db.c - `wtproxy db claim|release`: this worktree's own test
 * database on the app's PostgreSQL server, and the env a settings file
 * reads. Exit status: 0 done, 1 refused or failed, 2 bad usage. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reg_db.h"
#include "registry.h"

struct db_args {
    const char *base, *name, *server, *hash, *dir, *env_file, *worktree;
    int force, print_env;
};

static int usage_error(const char *msg)
{
    fprintf(stderr, "wtproxy db: %s (see wtproxy db --help)\n", msg);
    return 2;
}

/* This worktree's backend port from the daemon (front 8000 first), 0 when
 * none or no daemon answers: the env file then says WT_BACKEND_PORT=. */
static int backend_port(const char *worktree)
{
    char err[256];
    struct reg_table *t = cli_table(err, sizeof err);
    int port = 0;
    for (size_t i = 0; t && i < reg_table_count(t); i++) {
        struct reg_backend *b = reg_table_at(t, i);
        if (strcmp(b->worktree, worktree) == 0 && (!port || b->front == WTP_DEFAULT_FRONT_PORT))
            port = b->port;
    }
    reg_table_free(t);
    return port;
}

/* Print and/or write the env. Returns 0, or 1 (printed). */
static int give_env(const struct db_args *a, const char *name, const char *worktree)
{
    char text[1024], port[16] = "", err[PATH_MAX + 256];
    int p = backend_port(worktree);
    if (p)
        snprintf(port, sizeof port, "%d", p);
    snprintf(text, sizeof text, "WT_DB=%s\nWT_TEST_DB=%s\nWT_BACKEND_PORT=%s\n", name, name,
             port);
    if (a->print_env)
        fputs(text, stdout);
    if (a->env_file && reg_store_replace_file(a->env_file, text, strlen(text), err,
                                              sizeof err) < 0) {
        fprintf(stderr, "wtproxy: cannot write %s: %s\n", a->env_file, err);
        return 1;
    }
    return 0;
}

/* The database name: --name checked, or derived from --base. */
static int db_name(const struct db_args *a, const char *wt, char *name, size_t len, char *err,
                   size_t errlen)
{
    if (a->name) {
        snprintf(name, len, "%s", a->name);
        return reg_db_check_name(name, err, errlen);
    }
    if (!a->base) {
        snprintf(err, errlen, "give --base NAME (e.g. --base test_shop)");
        return -1;
    }
    return reg_db_name(a->base, reg_machine_id(), wt, name, len, err, errlen);
}

static int cmd_claim(const struct db_args *a)
{
    char wt[PATH_MAX], name[256], hash[REG_DB_HASH_MAX] = "", err[PATH_MAX * 2 + 512];
    const char *done = "";
    if (a->hash && a->dir)
        return usage_error("give --migrations-hash or --migrations-dir, not both");
    if (cli_worktree(a->worktree, wt, sizeof wt, err, sizeof err) < 0 ||
        (a->hash && (size_t)snprintf(hash, sizeof hash, "%s", a->hash) >= sizeof hash &&
         snprintf(err, sizeof err, "--migrations-hash is longer than %d bytes",
                  REG_DB_HASH_MAX - 1)))
        return usage_error(err);
    if (db_name(a, wt, name, sizeof name, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy: %s\n", err);
        return a->base || a->name ? 1 : 2;
    }
    if (a->dir && reg_db_hash_dir(a->dir, hash, sizeof hash, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy: %s\n", err);
        return 1;
    }
    struct reg_db_claim c = {.server = a->server, .name = name, .machine = reg_machine_id(),
                             .worktree = wt, .hash = hash, .force = a->force};
    int r = reg_db_claim_on_server(&c, &done, err, sizeof err);
    if (r != 0) {
        fprintf(stderr, "wtproxy: %s%s\n", r > 0 ? "" : "cannot claim the database: ", err);
        return 1;
    }
    fprintf(stderr, "wtproxy: database %s %s for %s\n", name, done, wt);
    return give_env(a, name, wt);
}

static int cmd_release(const struct db_args *a)
{
    char wt[PATH_MAX], name[256], err[PATH_MAX * 2 + 512];
    if (cli_worktree(a->worktree, wt, sizeof wt, err, sizeof err) < 0)
        return usage_error(err);
    if ((a->base || a->name) && db_name(a, wt, name, sizeof name, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy: %s\n", err);
        return 1;
    }
    int n = reg_db_release_on_server(a->server, a->base || a->name ? name : NULL,
                                     reg_machine_id(), wt, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "wtproxy: cannot release: %s\n", err);
        return 1;
    }
    if (n == 0)
        fprintf(stderr, "wtproxy: no database stamped as %s's on this machine%s%s; nothing "
                "dropped\n", wt, a->base || a->name ? " is named " : "",
                a->base || a->name ? name : "");
    return 0;
}

int cli_db_main(int argc, char **argv)
{
    struct db_args a = {0};
    const struct cli_opt opts[] = {
        {"base", &a.base, NULL}, {"name", &a.name, NULL}, {"server", &a.server, NULL},
        {"migrations-hash", &a.hash, NULL}, {"migrations-dir", &a.dir, NULL},
        {"write-env", &a.env_file, NULL}, {"worktree", &a.worktree, NULL},
        {"force", NULL, &a.force}, {"print-env", NULL, &a.print_env}, {NULL, NULL, NULL}};
    char err[PATH_MAX + 256];
    if (argc < 2)
        return CLI_USAGE;
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
        return CLI_HELP;
    int r = cli_parse(argc - 1, argv + 1, opts, NULL, err, sizeof err);
    if (r > 0)
        return CLI_HELP;
    if (r < 0)
        return usage_error(err);
    if (a.base && a.name)
        return usage_error("give --base or --name, not both");
    if (!a.server)
        a.server = getenv("WTPROXY_DB_SERVER") ? getenv("WTPROXY_DB_SERVER") : "";
    if (strcmp(argv[1], "claim") == 0)
        return cmd_claim(&a);
    if (strcmp(argv[1], "release") == 0)
        return cmd_release(&a);
    snprintf(err, sizeof err, "unknown db command \"%s\": claim or release", argv[1]);
    return usage_error(err);
}
