/* doctor_dbenv.c - the env file `wtproxy db claim --write-env FILE` wrote
 * (registry/CLAIMS.md, "Env"), as doctor finds and reads it: the file an
 * app's dev server reads its databases from at start (`.env.wt` in the
 * guides). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "doctor.h"

/* The value of key (a database name) in text's `KEY=VALUE` lines into
 * out; "" when it has none, or one no claim writes. */
static void value_of(const char *text, const char *key, char *out, size_t len)
{
    size_t k = strlen(key);
    out[0] = '\0';
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, k) != 0 || p[k] != '=')
            continue;
        size_t n = strcspn(p + k + 1, "\n");
        if (n > 0 && n < len && strspn(p + k + 1, "abcdefghijklmnopqrstuvwxyz0123456789_") == n)
            snprintf(out, len, "%.*s", (int)n, p + k + 1);
        return;
    }
}

/* Whether dir/name is a file a claim wrote (it names a dev or a test
 * database) whose WTPROXY_DEV_DB is dev (NULL: any), read into e. */
static int read_one(const char *dir, const char *name, const char *dev, struct doc_dbenv *e)
{
    char path[PATH_MAX], err[PATH_MAX + 64];
    if (strncmp(name, ".env", 4) != 0 || cli_join(path, sizeof path, dir, name) < 0 ||
        !cli_is_file(dir, name, 0))
        return 0;
    char *text = cli_read_text(path, DOC_DBENV_MAX, err, sizeof err);
    if (!text)
        return 0;
    value_of(text, "WTPROXY_DEV_DB", e->dev, sizeof e->dev);
    value_of(text, "WT_TEST_DB", e->test, sizeof e->test);
    free(text);
    return (e->dev[0] || e->test[0]) && (!dev || strcmp(e->dev, dev) == 0);
}

/* The first such file in dir itself (sub NULL) or in its subfolder sub,
 * its path relative to the worktree into e->rel. */
static int find_in(const char *root, const char *sub, const char *dev, struct doc_dbenv *e)
{
    char dir[PATH_MAX];
    if (cli_join(dir, sizeof dir, root, sub ? sub : ".") < 0)
        return 0;
    DIR *d = opendir(dir);
    struct dirent *f;
    int found = 0;
    while (d && !found && (f = readdir(d)))
        found = read_one(dir, f->d_name, dev, e) &&
                snprintf(e->rel, sizeof e->rel, "%s%s%s", sub ? sub : "", sub ? "/" : "",
                         f->d_name) < (int)sizeof e->rel;
    if (d)
        closedir(d);
    return found;
}

int doc_dbenv_find(const char *root, const char *dev, struct doc_dbenv *e)
{
    if (find_in(root, NULL, dev, e))
        return 0;
    /* an app in a subfolder (api/) runs its claim there */
    DIR *d = opendir(root);
    struct dirent *f;
    int found = 0;
    while (d && !found && (f = readdir(d)))
        found = f->d_name[0] != '.' && f->d_type == DT_DIR &&
                strcmp(f->d_name, "node_modules") != 0 && find_in(root, f->d_name, dev, e);
    if (d)
        closedir(d);
    return found ? 0 : -1;
}
