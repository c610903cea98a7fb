/* doctor_devdb.c - doctor's look at the dev database this worktree's
 * settings would use (claimed_databases derives it as `wtproxy db names`
 * does, without asking the server): missing, or another checkout's. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "doctor.h"
#include "init.h"
#include "reg_db.h"
#include "registry.h"

extern char **environ;

/* Whether res (datname in column 0) holds name. */
static int has_row(PGresult *res, const char *name)
{
    for (int i = 0; i < PQntuples(res); i++)
        if (strcmp(PQgetvalue(res, i, 0), name) == 0)
            return 1;
    return 0;
}

/* The root commits of dir's repository into out ("" when git cannot
 * say): two clones of one repository share them, unrelated apps do not. */
static void root_commits(const char *dir, char *out, size_t len)
{
    char *argv[] = {"git", "-C", (char *)dir, "rev-list", "--max-parents=0", "HEAD", NULL};
    posix_spawn_file_actions_t fa;
    int fd[2], status = -1;
    pid_t pid;
    size_t n = 0;
    out[0] = '\0';
    if (pipe2(fd, O_CLOEXEC) < 0)
        return;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int r = posix_spawnp(&pid, "git", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    for (ssize_t got = 1; r == 0 && got > 0 && n + 1 < len; n += (size_t)got)
        while ((got = read(fd[0], out + n, len - 1 - n)) < 0 && errno == EINTR) {
        }
    out[n] = '\0';
    close(fd[0]);
    while (r == 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (r != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        out[0] = '\0';
}

/* Whether worktree is a checkout of this worktree's repository: one of its
 * worktrees, or a clone (an unrelated app on the same database server may
 * use another base with the same folder names). */
static int same_repo(struct doc_ctx *c, const char *worktree, int clones_too)
{
    static struct host_worktree w; /* PATH_MAX thrice: not on the stack */
    static char mine[1024], theirs[1024];
    if (host_worktree_of(worktree, &w, NULL, 0) != 0)
        return 0;
    if (strcmp(w.common, c->wt.common) == 0)
        return 1;
    if (!clones_too)
        return 0;
    root_commits(c->wt.root, mine, sizeof mine);
    root_commits(worktree, theirs, sizeof theirs);
    return mine[0] && strcmp(mine, theirs) == 0;
}

/* The base a claim derived name from for its stamp's machine and
 * worktree (`--dev BASE`, `--base BASE`) into base; "" when an exact
 * --dev-name or --name made it. */
static void base_of(const char *name, const struct reg_db_owner *o, char *base, size_t len)
{
    char suffix[REG_DB_NAME_MAX + 2], err[256];
    size_t n = strlen(name), k;
    base[0] = '\0';
    if (reg_db_derive("", o->machine, o->worktree, suffix, sizeof suffix, err, sizeof err) < 0)
        return;
    k = strlen(suffix);
    if (n > k && n - k < len && strcmp(name + n - k, suffix) == 0)
        snprintf(base, len, "%.*s", (int)(n - k), name);
}

/* The row of res named name, its stamp parsed into o; -1 when the server
 * has none, or no stamp on it. */
static int stamped_row(PGresult *res, const char *name, struct reg_db_owner *o)
{
    for (int i = 0; i < PQntuples(res); i++)
        if (strcmp(PQgetvalue(res, i, 0), name) == 0)
            return reg_db_parse_stamp(PQgetvalue(res, i, 1), o) < 0 ? -1 : i;
    return -1;
}

/* The claim that gives this worktree databases of its own for those env
 * file e names and writes their names to it, into fix: the flags their
 * bases were claimed with (as their stamps derive them), then
 * `--write-env` e's file. Pasting a bare `db claim --dev BASE` left the
 * file the app reads missing, or naming another worktree's databases. */
static void claim_fix(struct doc_ctx *c, PGresult *res, const struct doc_dbenv *e, char *fix,
                      size_t len)
{
    static struct reg_db_owner o; /* PATH_MAX and more: not on the stack */
    char dev[REG_DB_NAME_MAX + 1] = "", test[REG_DB_NAME_MAX + 1] = "", cwd[PATH_MAX];
    if (e->dev[0] && stamped_row(res, e->dev, &o) >= 0)
        base_of(e->dev, &o, dev, sizeof dev);
    /* The sibling's test database made a template since (the Node test
     * recipes' `db template --base` of the same base): a claim with
     * --base here made a test database, which the recipe then refused
     * ("is this worktree's test database, not a template one") */
    int tested = e->test[0] != '\0';
    if (tested && stamped_row(res, e->test, &o) >= 0) {
        if (o.kind == REG_DB_TEST)
            base_of(e->test, &o, test, sizeof test);
        else
            tested = 0;
    }
    /* --write-env is relative to the claim's folder */
    int here = getcwd(cwd, sizeof cwd) && strcmp(cwd, c->wt.root) == 0;
    snprintf(fix, len, "%s%.400s%swtproxy db claim%s%s%s%s --write-env %.300s", here ? "" : "cd '",
             here ? "" : c->wt.root, here ? "" : "' && ",
             e->dev[0] ? (dev[0] ? " --dev " : " --dev-name <a name of its own>") : "", dev,
             tested ? (test[0] ? " --base " : " --name <a test name of its own>") : "", test,
             e->rel);
}

/* A database this worktree's env file e names that is stamped for
 * another worktree (or machine), its name into name and owner into o; 0
 * when there is none. An env file copied from another worktree (agents
 * seed a new one so), or a worktree moved (`git worktree move`) with it,
 * points this one's dev server and tests at that worktree's data. */
static int foreign_env(struct doc_ctx *c, PGresult *res, const struct doc_dbenv *e,
                       const char **name, struct reg_db_owner *o)
{
    const char *names[] = {e->dev, e->test};
    for (int i = 0; i < 2; i++) {
        if (!names[i][0] || stamped_row(res, names[i], o) < 0)
            continue;
        *name = names[i];
        if (strcmp(o->machine, reg_machine_id()) != 0 || strcmp(o->worktree, c->wt.root) != 0)
            return 1;
    }
    return 0;
}

static void say_foreign(struct doc_ctx *c, PGresult *res, const struct doc_dbenv *e,
                        const char *name, const struct reg_db_owner *o, struct doc_result *r)
{
    int other_machine = strcmp(o->machine, reg_machine_id()) != 0;
    int gone = reg_db_owner_gone(o, reg_machine_id());
    size_t n = strlen(r->detail);
    r->status = DOC_PROBLEM;
    snprintf(r->detail + n, sizeof r->detail - n,
             "; %s, which wtproxy db claim --write-env wrote, names %s database %s, which is "
             "stamped for worktree %.600s%s%s: a dev server or test run here that reads %s "
             "works on that worktree's data (%s); claim this worktree's own, which rewrites "
             "%s, then restart its dev server (wtproxy restart)",
             e->rel, reg_db_kind_name(o->kind), name, o->worktree,
             other_machine ? " of another machine, " : "", other_machine ? o->machine : "", e->rel,
             gone ? "that worktree is gone: this one was moved, or the file copied from it"
                  : "the file was copied from there",
             e->rel);
    claim_fix(c, res, e, r->fix, sizeof r->fix);
}

/* A dev database base (`wtproxy db claim --dev BASE`) another worktree of
 * this repository on this machine has and this one has not, into base,
 * with the name this one's would have into want: the row of that
 * worktree's database, its stamp in o; -1 when there is none. A
 * worktree made after the others has none until it claims one, and a dev
 * server whose settings name it (claimed_databases, which wtproxy init
 * adds) stops at start with only "database ... does not exist" in its log. */
static int missing_dev(struct doc_ctx *c, PGresult *res, char *base, size_t blen, char *want,
                       size_t wlen, struct reg_db_owner *o)
{
    const char *machine = reg_machine_id();
    char err[256];
    for (int i = 0; i < PQntuples(res); i++) {
        if (reg_db_parse_stamp(PQgetvalue(res, i, 1), o) < 0 || o->kind != REG_DB_DEV ||
            strcmp(o->machine, machine) != 0 || strcmp(o->worktree, c->wt.root) == 0 ||
            !same_repo(c, o->worktree, 0))
            continue;
        base_of(PQgetvalue(res, i, 0), o, base, blen);
        if (base[0] && reg_db_derive(base, machine, c->wt.root, want, wlen, err, sizeof err) == 0 &&
            !has_row(res, want))
            return i; /* (an exact --dev-name has no base to derive ours from) */
    }
    return -1;
}

/* The row of a dev database named as this worktree's would be (some base,
 * this machine, this folder name) that another checkout of this
 * repository owns, into base and owner; -1 when none. Two checkouts whose
 * worktrees share a folder name (shop/wt-a and shop2/wt-a) derive one
 * name: `db claim` refuses the second, but claimed_databases, which never
 * asks the server, points its dev server at the first's data. */
static int taken_dev(struct doc_ctx *c, PGresult *res, char *base, size_t blen,
                     struct reg_db_owner *owner)
{
    const char *machine = reg_machine_id();
    char suffix[REG_DB_NAME_MAX + 2], err[256];
    if (reg_db_derive("", machine, c->wt.root, suffix, sizeof suffix, err, sizeof err) < 0)
        return -1;
    for (int i = 0; i < PQntuples(res); i++) {
        const char *name = PQgetvalue(res, i, 0);
        size_t n = strlen(name), k = strlen(suffix);
        if (n <= k || n - k >= blen || strcmp(name + n - k, suffix) != 0 ||
            reg_db_parse_stamp(PQgetvalue(res, i, 1), owner) < 0 || owner->kind != REG_DB_DEV ||
            strcmp(owner->machine, machine) != 0 || strcmp(owner->worktree, c->wt.root) == 0 ||
            !same_repo(c, owner->worktree, 1))
            continue;
        snprintf(base, blen, "%.*s", (int)(n - k), name);
        return i;
    }
    return -1;
}

/* A folder next to this worktree, named after its checkout, whose dev
 * database name (base, this machine) is free, into out; -1 when none of
 * ten is. The name comes from the folder only (registry/CLAIMS.md), so
 * the folder is what must change for claimed_databases to follow. */
static int free_folder(struct doc_ctx *c, PGresult *res, const char *base, char *out, size_t len)
{
    char main[PATH_MAX], dir[PATH_MAX], want[REG_DB_NAME_MAX * 2], err[256];
    int is_main = cli_main_checkout(&c->wt, main, sizeof main) == 0 && !strcmp(main, c->wt.root);
    snprintf(dir, sizeof dir, "%s", c->wt.root);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return -1;
    *slash = '\0';
    const char *name = slash + 1, *tag = strrchr(is_main ? dir : main, '/');
    tag = tag ? tag + 1 : "x";
    /* the unique part must fall inside the slug's first 20 bytes */
    int keep = REG_DB_WORKTREE_SLUG - 4 - (int)strnlen(tag, 8);
    for (int i = 1; i < 10; i++) {
        struct stat st;
        int n = snprintf(out, len, "%s/%.*s-%.8s%.0d", dir, keep, name, tag, i > 1 ? i : 0);
        if (n > 0 && (size_t)n < len && !strchr(out, '\'') && stat(out, &st) < 0 &&
            reg_db_derive(base, reg_machine_id(), out, want, sizeof want, err, sizeof err) == 0 &&
            !has_row(res, want))
            return 0;
    }
    return -1;
}

/* The base of the dev database the Django settings of dir use through
 * claimed_databases, into base; 0 when dir holds no such app. */
static int claimed_base(const char *dir, char *base, size_t len, char *settings, size_t slen)
{
    struct cli_app app;
    char err[512], path[PATH_MAX];
    int claimed = 0;
    if (!cli_is_file(dir, "manage.py", 0) || cli_app_detect(dir, &app, err, sizeof err) < 0)
        return 0;
    if (app.kind == CLI_APP_DJANGO && cli_join(path, sizeof path, dir, app.settings) == 0)
        init_settings_db(path, base, len, &claimed);
    if (claimed)
        snprintf(settings, slen, "%s", path);
    cli_app_free(&app);
    return claimed && base[0];
}

/* The dev database this worktree's own settings derive (a Django app at
 * its top or in a direct subfolder, api/, whose settings use
 * claimed_databases), when the server has none: the first worktree of an
 * app has no sibling's to go by (missing_dev), and its dev server stopped
 * at start while doctor said ok. Its base into base, its name into want,
 * its settings file into settings; 0 when there is none or it exists. */
static int missing_own(struct doc_ctx *c, PGresult *res, char *base, size_t blen, char *want,
                       size_t wlen, char *settings, size_t slen)
{
    char err[256], sub[PATH_MAX];
    int found = claimed_base(c->wt.root, base, blen, settings, slen);
    DIR *d = found ? NULL : opendir(c->wt.root);
    struct dirent *e;
    while (d && !found && (e = readdir(d)))
        found = e->d_name[0] != '.' && e->d_type == DT_DIR &&
                cli_join(sub, sizeof sub, c->wt.root, e->d_name) == 0 &&
                claimed_base(sub, base, blen, settings, slen);
    if (d)
        closedir(d);
    return found &&
           reg_db_derive(base, reg_machine_id(), c->wt.root, want, wlen, err, sizeof err) == 0 &&
           !has_row(res, want);
}

static void say_taken(struct doc_ctx *c, PGresult *res, int row, const char *base,
                      const struct reg_db_owner *o, struct doc_result *r)
{
    const char *name = PQgetvalue(res, row, 0);
    char to[PATH_MAX], main[PATH_MAX];
    size_t n = strlen(r->detail);
    r->status = DOC_PROBLEM;
    snprintf(r->detail + n, sizeof r->detail - n,
             "; dev database %s, the name this worktree's settings derive (claimed_databases: "
             "base %s and this folder's name), is owned by another checkout's worktree %.600s: "
             "a dev server here whose settings use claimed_databases runs on its data, and "
             "`wtproxy db claim --dev %s` here is refused. A --dev-name claim does not help "
             "(claimed_databases derives the name from the folder name): give this worktree a "
             "folder name of its own, claim its dev database, then migrate it (Django: "
             "manage.py migrate) and restart its dev server",
             name, base, o->worktree, base);
    int is_main = cli_main_checkout(&c->wt, main, sizeof main) == 0 && !strcmp(main, c->wt.root);
    if (free_folder(c, res, base, to, sizeof to) < 0 || strlen(to) > 280) {
        snprintf(r->fix, sizeof r->fix, "%s %.900s <a folder name of its own>",
                 is_main ? "mv" : "git worktree move", c->wt.root);
        return;
    }
    snprintf(r->fix, sizeof r->fix,
             "%s '%.280s' '%.280s' && cd '%.280s' && %swtproxy db claim --dev %s",
             is_main ? "mv" : "git worktree move", c->wt.root, to, to,
             is_main ? "git worktree repair && " : "", base);
}

/* No dev database here that a sibling (owner o, its database sibling)
 * has. The fix repeats its claim's flags and the file the app reads them
 * from, when the sibling has that file. */
static void say_missing(struct doc_ctx *c, PGresult *res, const char *sibling,
                        const struct reg_db_owner *o, const char *base, const char *want,
                        struct doc_result *r)
{
    static struct doc_dbenv env;
    size_t n = strlen(r->detail);
    int has_env = doc_dbenv_find(o->worktree, sibling, &env) == 0;
    r->status = DOC_PROBLEM;
    if (!has_env) {
        snprintf(r->detail + n, sizeof r->detail - n,
                 "; no dev database %s here, which other worktrees of this repository have "
                 "(%s_...): a dev server whose settings use claimed_databases stops at start "
                 "with \"database %s does not exist\"; claim it, then migrate it (Django: "
                 "manage.py migrate)",
                 want, base, want);
        snprintf(r->fix, sizeof r->fix, "wtproxy db claim --dev %s", base);
        return;
    }
    snprintf(r->detail + n, sizeof r->detail - n,
             "; no dev database %s here, which other worktrees of this repository have "
             "(%s_...), and whose name their dev servers read from %s (wtproxy db claim "
             "--write-env %s in %.600s): claim it and write %s here too, then migrate it "
             "(Django: manage.py migrate)",
             want, base, env.rel, env.rel, o->worktree, env.rel);
    claim_fix(c, res, &env, r->fix, sizeof r->fix);
}

/* A dev database stamped for this worktree's path by a folder no longer
 * there (git worktree remove, then add at the same path: an orchestrator
 * reusing its slots), its stamp into o; -1 when none. Its name matches
 * the path, so every other check called it this worktree's, while it
 * holds the removed one's data and the new folder has no env file. */
static int replaced_dev(struct doc_ctx *c, PGresult *res, struct reg_db_owner *o)
{
    for (int i = 0; i < PQntuples(res); i++)
        if (reg_db_parse_stamp(PQgetvalue(res, i, 1), o) == 0 && o->kind == REG_DB_DEV &&
            strcmp(o->worktree, c->wt.root) == 0 && reg_db_owner_gone(o, reg_machine_id()))
            return i;
    return -1;
}

/* The env file a sibling worktree wrote for its dev database of base
 * (db claim --write-env), into e; 0 when none has one. */
static int sibling_env(struct doc_ctx *c, PGresult *res, const char *base, struct doc_dbenv *e)
{
    static struct reg_db_owner o; /* PATH_MAX and more: not on the stack */
    char b[REG_DB_NAME_MAX + 1];
    for (int i = 0; i < PQntuples(res); i++) {
        const char *name = PQgetvalue(res, i, 0);
        if (reg_db_parse_stamp(PQgetvalue(res, i, 1), &o) < 0 || o.kind != REG_DB_DEV ||
            strcmp(o.worktree, c->wt.root) == 0 || !same_repo(c, o.worktree, 0))
            continue;
        base_of(name, &o, b, sizeof b);
        if (strcmp(b, base) == 0 && doc_dbenv_find(o.worktree, name, e) == 0)
            return 1;
    }
    return 0;
}

static void say_replaced(struct doc_ctx *c, PGresult *res, int row, const struct reg_db_owner *o,
                         struct doc_result *r)
{
    static struct doc_dbenv env, own;
    char base[REG_DB_NAME_MAX + 1];
    const char *name = PQgetvalue(res, row, 0);
    size_t n = strlen(r->detail);
    base_of(name, o, base, sizeof base);
    int has_env = base[0] && sibling_env(c, res, base, &env);
    int missing = has_env && doc_dbenv_find(c->wt.root, NULL, &own) < 0;
    r->status = DOC_PROBLEM;
    snprintf(r->detail + n, sizeof r->detail - n,
             "; dev database %s, named for this path, was claimed by the worktree removed from "
             "%.600s (git worktree remove, then add at the same path): it holds that worktree's "
             "data%s%s%s; claim it again, which makes it fresh for this one, then migrate it "
             "(Django: manage.py migrate)",
             name, c->wt.root, missing ? ", and this one has no " : "", missing ? env.rel : "",
             missing ? ", which its siblings' servers read" : "");
    if (has_env)
        claim_fix(c, res, &env, r->fix, sizeof r->fix);
    else
        snprintf(r->fix, sizeof r->fix, "wtproxy db claim --dev %s", base[0] ? base : "<base>");
}

void doc_dev_database(struct doc_ctx *c, struct pg_conn *conn, struct doc_result *r)
{
    char base[REG_DB_NAME_MAX + 1], want[REG_DB_NAME_MAX * 2];
    static struct reg_db_owner owner; /* PATH_MAX and more: not on the stack */
    static char path[PATH_MAX];
    if (!c->have_wt || !reg_machine_id())
        return;
    PGresult *res = PQexec(conn, "SELECT datname, shobj_description(oid, 'pg_database') "
                                 "FROM pg_database ORDER BY 1");
    static struct doc_dbenv env;
    const char *foreign = NULL;
    int ok = PQresultStatus(res) == PGRES_TUPLES_OK;
    int row = ok ? replaced_dev(c, res, &owner) : -1;
    if (row >= 0) {
        say_replaced(c, res, row, &owner, r);
    } else if (ok && (row = taken_dev(c, res, base, sizeof base, &owner)) >= 0) {
        say_taken(c, res, row, base, &owner, r);
    } else if (ok && doc_dbenv_find(c->wt.root, NULL, &env) == 0 &&
               foreign_env(c, res, &env, &foreign, &owner)) {
        say_foreign(c, res, &env, foreign, &owner, r);
    } else if (ok &&
               (row = missing_dev(c, res, base, sizeof base, want, sizeof want, &owner)) >= 0) {
        say_missing(c, res, PQgetvalue(res, row, 0), &owner, base, want, r);
    } else if (ok && missing_own(c, res, base, sizeof base, want, sizeof want, path, sizeof path)) {
        size_t n = strlen(r->detail);
        r->status = DOC_PROBLEM;
        snprintf(r->detail + n, sizeof r->detail - n,
                 "; no dev database %s, which %.600s names (claimed_databases, base %s): the "
                 "dev server stops at start with \"database %s does not exist\"; claim it, "
                 "then migrate it (Django: manage.py migrate)",
                 want, path, base, want);
        snprintf(r->fix, sizeof r->fix, "wtproxy db claim --dev %s", base);
    }
    PQclear(res);
}
