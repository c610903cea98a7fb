/* db.c - `wtproxy db claim|release|names`: this worktree's own test and
 * dev databases on the app's PostgreSQL server, and the env a settings
 * file reads (template, copy and ls: db_tpl.c). Exit status: 0 done, 1
 * refused or failed, 2 bad usage. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "reg_db.h"
#include "registry.h"

int db_usage_error(const char *msg)
{
    fprintf(stderr, "wtproxy db: %s (see wtproxy db --help)\n", msg);
    return 2;
}

/* This worktree's backend port from the daemon (front 8000 first), 0 when
 * none or no daemon answers: the env then has no WT_BACKEND_PORT (an empty
 * one read as a port that is there, and said nothing of why). */
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

/* The keys wtproxy db writes: each line of an env file that sets one, or
 * a key of the text written now, is wtproxy's; every other line the app's.
 * (WT_BACKEND_PORT, written while a daemon answered, is dropped when none
 * does.) */
static const char *const db_keys[] = {"WTPROXY_DEV_DB",  "WTPROXY_TEST_DB", "WT_DB",
                                      "WT_TEST_DB",      "WT_BACKEND_PORT", "WTPROXY_TEMPLATE_DB",
                                      "WTPROXY_COPY_DBS"};

/* Whether text has a line that begins key (n bytes) and `=`. */
static int sets(const char *text, const char *key, size_t n)
{
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, key, n) == 0 && l[n] == '=')
            return 1;
    return 0;
}

/* Whether the line at l (`KEY=...`, `export KEY=...`) sets a key of
 * wtproxy db's, or of text. */
static int db_line(const char *l, const char *text)
{
    l += strspn(l, " \t");
    if (strncmp(l, "export ", 7) == 0)
        l += 7 + strspn(l + 7, " \t");
    size_t n = strspn(l, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
    if (!n || l[n] != '=')
        return 0;
    for (size_t i = 0; i < sizeof db_keys / sizeof db_keys[0]; i++)
        if (strlen(db_keys[i]) == n && strncmp(l, db_keys[i], n) == 0)
            return 1;
    return sets(text, l, n);
}

/* The file's text once text is written: text, then the app's own lines
 * of old, in their order. A Bun user's .env (which Bun loads itself) held
 * DATABASE_URL=...${WTPROXY_DEV_DB} below the claim's lines, and the next
 * claim wrote the file anew without it; the claim's lines go first, so
 * that a line using one finds it set. NULL out of memory. */
static char *merged(const char *old, const char *text)
{
    size_t n = strlen(text), cap = n + (old ? strlen(old) : 0) + 2;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    memcpy(out, text, n + 1);
    for (const char *l = old; l && *l;) {
        const char *eol = strchr(l, '\n');
        size_t len = eol ? (size_t)(eol - l) : strlen(l);
        if (!db_line(l, text)) {
            memcpy(out + n, l, len);
            n += len;
            out[n++] = '\n';
        }
        l += len + (eol != NULL);
    }
    out[n] = '\0';
    return out;
}

/* text written to path, the app's other lines there kept (merged). The
 * same text is not written again: the file's .env.* name makes it code to
 * a dev server's /__whoami fingerprint, and a server trusted without
 * /__whoami is judged by its files' times: a file rewritten by each test
 * run's claim made that server look stale each time. */
static int write_env(const char *path, const char *text, char *err, size_t errlen)
{
    char *old = cli_read_text(path, 1 << 20, err, errlen);
    if (!old && errno != ENOENT)
        return -1; /* unreadable, or no text: left as it is, never replaced */
    char *want = merged(old, text);
    int r = 0;
    if (!want)
        r = (snprintf(err, errlen, "out of memory"), -1);
    else if (!old || strcmp(old, want) != 0)
        r = reg_store_replace_file(path, want, strlen(want), err, errlen);
    free(old);
    free(want);
    return r;
}

int db_give_text(const struct db_args *a, const char *text)
{
    char err[PATH_MAX + 256];
    if (a->print_env)
        fputs(text, stdout);
    if (a->env_file && write_env(a->env_file, text, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy: cannot write %s: %s\n", a->env_file, err);
        return 1;
    }
    return 0;
}

/* The env of a claim. A test-only claim keeps the keys it always wrote
 * (WT_DB was then the test database: kept for the files that read it);
 * a claim with a dev database writes WTPROXY_DEV_DB and WTPROXY_TEST_DB,
 * which cannot be confused, and WT_DB then names the dev database. */
static int give_env(const struct db_args *a, const char *test, const char *dev,
                    const char *worktree, int ask_port)
{
    char text[1024], port[48] = "";
    int p = ask_port ? backend_port(worktree) : 0, n;
    if (p)
        snprintf(port, sizeof port, "WT_BACKEND_PORT=%d\n", p);
    if (!dev)
        n = snprintf(text, sizeof text, "WT_DB=%s\nWT_TEST_DB=%s\n%s", test, test, port);
    else
        n = snprintf(text, sizeof text, "WTPROXY_DEV_DB=%s\n%s%s%sWT_DB=%s\n%s%s%s%s", dev,
                     test ? "WTPROXY_TEST_DB=" : "", test ? test : "", test ? "\n" : "", dev,
                     test ? "WT_TEST_DB=" : "", test ? test : "", test ? "\n" : "", port);
    /* names are checked to PostgreSQL's 63 bytes before this: never reached */
    if (n < 0 || (size_t)n >= sizeof text) {
        fprintf(stderr, "wtproxy db: the environment text is over %zu bytes\n", sizeof text);
        return 1;
    }
    return db_give_text(a, text);
}

/* The test database's name: --name checked, or derived from --base. */
static int test_name(const struct db_args *a, const char *wt, char *name, size_t len, char *err,
                     size_t errlen)
{
    if (a->name) {
        snprintf(name, len, "%s", a->name);
        /* release drops only what we stamped: any kind's exact name (a copy's too) */
        return a->releasing ? reg_db_check_dev_name(name, NULL, NULL, err, errlen)
                            : reg_db_check_name(name, err, errlen);
    }
    return reg_db_name(a->base, reg_machine_id(), wt, name, len, err, errlen);
}

/* The dev database's name: --dev-name, or derived from --dev; never the
 * base itself nor --from. Returns 0, or -1 with err. */
static int dev_name(const struct db_args *a, const char *wt, char *name, size_t len, char *err,
                    size_t errlen)
{
    if (a->dev_name)
        snprintf(name, len, "%s", a->dev_name);
    else if (reg_db_derive(a->dev, reg_machine_id(), wt, name, len, err, errlen) < 0)
        return -1;
    return reg_db_check_dev_name(name, a->dev, a->from, err, errlen);
}

/* The names this call is about into test/dev ("" when not asked for).
 * Returns 0, 1 refused (printed), 2 bad usage (printed). */
static int names(const struct db_args *a, const char *wt, char *test, char *dev, size_t len)
{
    char err[PATH_MAX + 512];
    test[0] = dev[0] = '\0';
    if (!a->base && !a->name && !a->dev && !a->dev_name)
        return db_usage_error("give --base NAME (the test database, e.g. --base test_shop) "
                              "and/or --dev NAME (the dev database, e.g. --dev shop)");
    if ((a->base || a->name) && test_name(a, wt, test, len, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy: %s\n", err);
        return 1;
    }
    if ((a->dev || a->dev_name) && dev_name(a, wt, dev, len, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy: %s\n", err);
        return 1;
    }
    return 0;
}

int db_hash(const struct db_args *a, char *hash, size_t len)
{
    char err[PATH_MAX + 256];
    hash[0] = '\0';
    if (a->hash && (size_t)snprintf(hash, len, "%s", a->hash) >= len) {
        fprintf(stderr, "wtproxy: --migrations-hash is longer than %zu bytes\n", len - 1);
        return 1;
    }
    if (a->dir && reg_db_hash_dir(a->dir, hash, len, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy: %s\n", err);
        return 1;
    }
    return 0;
}

/* Claim one database. Returns 0, or 1 (printed why). */
/* A reclaimed database was a removed worktree's, also when a new one now
 * stands at its path (an orchestrator's reused slot): said, since the
 * task that had it and its rows are not this one's. */
#define RECLAIMED_WHY                                                                              \
    " (the worktree that claimed it was removed, even if one was added again at its path "         \
    "since: made fresh, none of its rows carried over)"

static int claim_one(const struct db_args *a, struct reg_db_claim *c, const char *wt)
{
    char err[PATH_MAX * 2 + 4096];
    const char *done = "";
    c->server = a->server;
    c->machine = reg_machine_id();
    c->worktree = wt;
    c->force = a->force;
    c->reset = a->reset;
    c->min_free = a->min_free;
    int r = reg_db_claim_on_server(c, &done, err, sizeof err);
    if (r != 0) {
        fprintf(stderr, "wtproxy: %s%s\n", r > 0 ? "" : "cannot claim the database: ", err);
        return 1;
    }
    fprintf(stderr, "wtproxy: %s database %s %s%s%s for %s%s\n", reg_db_kind_name(c->kind), c->name,
            done, c->from && strcmp(done, "kept") ? " from " : "",
            c->from && strcmp(done, "kept") ? c->from : "", wt,
            strcmp(done, "reclaimed") == 0 ? RECLAIMED_WHY : "");
    return 0;
}

static int cmd_claim(const struct db_args *a, const char *wt)
{
    char test[256], dev[256], hash[REG_DB_HASH_MAX];
    int r = names(a, wt, test, dev, sizeof test);
    if (r != 0)
        return r;
    if (a->from && !dev[0])
        return db_usage_error("--from copies a dev database: give --dev NAME with it");
    if (db_hash(a, hash, sizeof hash) != 0)
        return 1;
    if (dev[0]) {
        struct reg_db_claim c = {
            .name = dev, .hash = REG_DB_DEV_MARK, .kind = REG_DB_DEV, .from = a->from};
        if (claim_one(a, &c, wt) != 0)
            return 1;
    }
    if (test[0]) {
        struct reg_db_claim c = {.name = test, .hash = hash, .kind = REG_DB_TEST};
        if (claim_one(a, &c, wt) != 0)
            return 1;
    }
    return give_env(a, test[0] ? test : NULL, dev[0] ? dev : NULL, wt, 1);
}

/* `wtproxy db names`: the env a claim would give, computed here without
 * touching any server: a settings file may run it on every import. */
static int cmd_names(const struct db_args *a, const char *wt)
{
    char test[256], dev[256];
    int r = names(a, wt, test, dev, sizeof test);
    if (r != 0)
        return r;
    return give_env(a, test[0] ? test : NULL, dev[0] ? dev : NULL, wt, 0);
}

static int cmd_release(const struct db_args *a, const char *wt)
{
    char test[256] = "", dev[256] = "", err[PATH_MAX * 2 + 512];
    int n = 0, any = a->base || a->name || a->dev || a->dev_name;
    if (a->abandoned)
        n = reg_db_release_abandoned(a->server, reg_machine_id(), err, sizeof err);
    else if (any && names(a, wt, test, dev, sizeof test) != 0)
        return 1;
    for (int i = 0; !a->abandoned && i < 2 && n >= 0; i++) {
        const char *one = i == 0 ? test : dev;
        if (any && !one[0])
            continue;
        int k = reg_db_release_on_server(a->server, any ? one : NULL, reg_machine_id(), wt, err,
                                         sizeof err);
        n = k < 0 ? -1 : n + k;
        if (!any)
            break;
    }
    if (n < 0) {
        fprintf(stderr, "wtproxy: cannot release: %s\n", err);
        return 1;
    }
    if (n == 0)
        fprintf(stderr,
                "wtproxy: no database stamped as %s's on this machine%s%s%s%s; nothing "
                "dropped\n",
                a->abandoned ? "an abandoned worktree" : wt, test[0] || dev[0] ? " is named " : "",
                test, test[0] && dev[0] ? " or " : "", dev);
    return 0;
}

/* Parse the flags into a. Returns 0, or an exit code. */
static int parse(int argc, char **argv, struct db_args *a)
{
    const struct cli_opt opts[] = {{"base", &a->base, NULL},
                                   {"name", &a->name, NULL},
                                   {"dev", &a->dev, NULL},
                                   {"dev-name", &a->dev_name, NULL},
                                   {"from", &a->from, NULL},
                                   {"server", &a->server, NULL},
                                   {"migrations-hash", &a->hash, NULL},
                                   {"migrations-dir", &a->dir, NULL},
                                   {"write-env", &a->env_file, NULL},
                                   {"worktree", &a->worktree, NULL},
                                   {"min-free-connections", &a->min_free_s, NULL},
                                   {"force", NULL, &a->force},
                                   {"print-env", NULL, &a->print_env},
                                   {"reset", NULL, &a->reset},
                                   {"abandoned", NULL, &a->abandoned},
                                   {"json", NULL, &a->json},
                                   {NULL, NULL, NULL}};
    char err[PATH_MAX + 256];
    int rest = 0;
    long n = REG_DB_MIN_FREE_DEFAULT;
    int r = cli_parse(argc - 1, argv + 1, opts, &rest, err, sizeof err);
    if (r > 0)
        return CLI_HELP;
    if (r < 0)
        return db_usage_error(err);
    a->argc = argc - 1 - rest;
    a->argv = argv + 1 + rest;
    if (a->base && a->name)
        return db_usage_error("give --base or --name, not both");
    if (a->dev && a->dev_name)
        return db_usage_error("give --dev or --dev-name, not both");
    if (a->hash && a->dir)
        return db_usage_error("give --migrations-hash or --migrations-dir, not both");
    if (a->min_free_s && cli_number(a->min_free_s, 0, 100000, &n) < 0)
        return db_usage_error("--min-free-connections takes a whole number, 0 or more");
    a->min_free = (int)n;
    if (!a->server)
        a->server = getenv("WTPROXY_DB_SERVER") ? getenv("WTPROXY_DB_SERVER") : "";
    return 0;
}

/* The commands that take no positional argument refuse one. */
static int no_rest(const struct db_args *a)
{
    char msg[512];
    if (a->argc == 0)
        return 0;
    snprintf(msg, sizeof msg, "unexpected argument \"%s\"", a->argv[0]);
    return db_usage_error(msg);
}

int cli_db_main(int argc, char **argv)
{
    struct db_args a = {0};
    char wt[PATH_MAX], err[PATH_MAX + 256];
    if (argc < 2)
        return CLI_USAGE;
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
        return CLI_HELP;
    const char *cmd = argv[1];
    static const char *const known[] = {"claim", "release", "names", "template", "copy", "ls"};
    size_t k = 0;
    while (k < sizeof known / sizeof *known && strcmp(cmd, known[k]) != 0)
        k++;
    if (k == sizeof known / sizeof *known) {
        snprintf(err, sizeof err,
                 "unknown db command \"%s\": claim, release, names, template, "
                 "copy or ls",
                 cmd);
        return db_usage_error(err);
    }
    int r = parse(argc, argv, &a);
    if (r != 0)
        return r;
    a.releasing = strcmp(cmd, "release") == 0;
    if (strcmp(cmd, "ls") == 0)
        return no_rest(&a) ? 2 : db_cmd_ls(&a);
    if (strcmp(cmd, "release") == 0 && a.abandoned)
        return no_rest(&a) ? 2 : cmd_release(&a, "");
    if (cli_worktree(a.worktree, wt, sizeof wt, err, sizeof err) < 0)
        return db_usage_error(err);
    a.worktree = wt;
    if (strcmp(cmd, "copy") == 0)
        return db_cmd_copy(&a);
    if (strcmp(cmd, "template") == 0)
        return db_cmd_template(&a);
    if (no_rest(&a))
        return 2;
    if (strcmp(cmd, "claim") == 0)
        return cmd_claim(&a, wt);
    if (strcmp(cmd, "names") == 0)
        return cmd_names(&a, wt);
    return cmd_release(&a, wt);
}
