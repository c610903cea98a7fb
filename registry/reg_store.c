/* reg_store.c - the embedded store: the table as a JSON file that survives
 * a daemon restart.
 *
 * The file, written whole on every change:
 *   {"version": 1, "entries": [ENTRY, ...], "daemon": {"registry", "flags"}}
 * with ENTRY as in PROTOCOL.md ("Entry"), in registration order (made
 * and checked by reg_json.c), and what the daemon that wrote it runs with
 * (reg_store_daemon; an older file, or one a test wrote, has none).
 *
 * A save never leaves a half-written file: it writes a temporary file in
 * the same folder (rename is atomic only within one filesystem), syncs it,
 * renames it over the old one and syncs the folder so the rename itself
 * survives a power cut. A file that cannot be parsed all the same (a disk
 * that lied, a person's edit) is moved aside, not overwritten, so nothing
 * is lost that a person could still recover by hand. */
#include "registry.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STORE_VERSION 1
#define STORE_MAX_FILE (16 * 1024 * 1024) /* ~10000 entries; ours never grow near it */

/* Write all of data to fd. Returns 0, or -1 with errno. */
static int write_all(int fd, const char *data, size_t len)
{
    ssize_t n;

    while (len > 0) {
        if ((n = write(fd, data, len)) < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* fsync the folder holding path, so that a rename in it is on disk.
 * Returns 0, or -1 with errno. */
static int sync_folder(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    int fd, rc;

    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return -1;
    rc = fsync(fd);
    /* EINVAL: a filesystem that cannot sync folders (some FUSE ones); the
     * rename is as durable there as it will ever be. */
    if (rc < 0 && errno == EINVAL)
        rc = 0;
    close(fd);
    return rc;
}

/* Replace path with data atomically (see the top of the file). Returns 0,
 * or -1 with err; path is untouched unless the rename happened. */
int reg_store_replace_file(const char *path, const char *data, size_t len, char *err, size_t errlen)
{
    char tmp[PATH_MAX];
    const char *step = "create a temporary file next to it";
    int fd = -1, saved;

    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path) >= sizeof tmp) {
        errno = ENAMETOOLONG;
        tmp[0] = '\0';
        goto fail;
    }
    if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
        tmp[0] = '\0';
        goto fail;
    }
    step = "write the temporary file";
    /* mkstemp makes it 0600 already; said again since the file holds the
     * commands people run and must never be readable by others. */
    if (fchmod(fd, 0600) < 0 || write_all(fd, data, len) < 0 || fsync(fd) < 0)
        goto fail;
    saved = close(fd);
    fd = -1;
    if (saved < 0)
        goto fail;
    step = "rename the temporary file over it";
    if (rename(tmp, path) < 0)
        goto fail;
    tmp[0] = '\0';
    step = "sync its folder (the new file is in place but may not survive a crash)";
    if (sync_folder(path) < 0)
        goto fail;
    return 0;
fail:
    saved = errno;
    if (fd >= 0)
        close(fd);
    if (tmp[0])
        unlink(tmp);
    snprintf(err, errlen, "cannot save the registry to %s: %s: %s", path, step, strerror(saved));
    return -1;
}

char *reg_store_dump(const struct reg_table *t, json_t *daemon)
{
    json_t *entries = json_array(), *e, *doc;
    char *dump = NULL;

    doc = entries ? json_pack("{s:i, s:O}", "version", STORE_VERSION, "entries", entries) : NULL;
    if (doc && daemon && json_object_set(doc, "daemon", daemon) < 0)
        goto done;
    for (size_t i = 0; doc && i < reg_table_count(t); i++) {
        if (!(e = reg_backend_to_json(reg_table_at(t, i))) || json_array_append_new(entries, e) < 0)
            goto done;
    }
    /* Indented: people read this file when something went wrong. */
    if (doc)
        dump = json_dumps(doc, JSON_INDENT(2));
done:
    json_decref(doc);
    json_decref(entries);
    return dump;
}

int reg_store_save(const struct reg_table *t, const char *path, char *err, size_t errlen)
{
    char *dump = reg_store_dump(t, NULL);
    int rc = -1;

    if (dump)
        rc = reg_store_replace_file(path, dump, strlen(dump), err, errlen);
    else
        snprintf(err, errlen, "cannot save the registry to %s: out of memory", path);
    free(dump);
    return rc;
}

json_t *reg_store_daemon(const char *path)
{
    json_t *doc = json_load_file(path, 0, NULL), *d = json_object_get(doc, "daemon");
    d = json_is_object(d) ? json_incref(d) : NULL;
    json_decref(doc);
    return d;
}

/* Read path whole into *data (NUL-terminated, free() it). Returns 1; 0
 * when there is no file; 2 when it is too large to be ours (*len is its
 * size then); -1 with err when it cannot be read. */
static int read_file(const char *path, char **data, size_t *len, char *err, size_t errlen)
{
    struct stat st;
    size_t n = 0;
    ssize_t r;
    int fd, rc = -1;

    *data = NULL;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "cannot read the registry %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) < 0)
        goto done;
    if ((*len = (size_t)st.st_size) > STORE_MAX_FILE) {
        rc = 2;
        goto done;
    }
    if (!(*data = malloc(*len + 1)))
        goto done;
    while (n < *len && (r = read(fd, *data + n, *len - n)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            goto done;
        n += (size_t)r;
    }
    (*data)[n] = '\0';
    *len = n; /* shorter if it shrank meanwhile: what is there is what we parse */
    rc = 1;
done:
    if (rc < 0) {
        snprintf(err, errlen, "cannot read the registry %s: %s", path, strerror(errno));
        free(*data);
        *data = NULL;
    }
    close(fd);
    return rc;
}

/* Parse a store file. Returns the document, or NULL with what is wrong
 * with it in why (a phrase that follows the file's name). */
static json_t *parse_doc(const char *data, size_t len, char *why, size_t whylen)
{
    json_error_t jerr;
    json_t *doc, *v;

    if (len == 0) {
        snprintf(why, whylen, "is empty");
        return NULL;
    }
    if (!(doc = json_loadb(data, len, 0, &jerr))) {
        /* An error at the very end is a file cut short: a crash of a
         * writer that did not write atomically, or a full disk. */
        snprintf(why, whylen, "%s (%s at line %d column %d)",
                 (size_t)jerr.position >= len ? "is truncated" : "is not valid JSON", jerr.text,
                 jerr.line, jerr.column);
        return NULL;
    }
    if (!json_is_object(doc))
        snprintf(why, whylen, "is not a JSON object");
    else if (!json_is_integer(v = json_object_get(doc, "version")))
        snprintf(why, whylen, "has no \"version\"");
    else if (json_integer_value(v) != STORE_VERSION)
        snprintf(why, whylen, "has version %lld (this wtproxy reads version %d)",
                 (long long)json_integer_value(v), STORE_VERSION);
    else if (!json_is_array(json_object_get(doc, "entries")))
        snprintf(why, whylen, "has no \"entries\" array");
    else
        return doc;
    json_decref(doc);
    return NULL;
}

/* Rename the unusable file at path to PATH.corrupt-<unix seconds>, with
 * -N added when that name is taken, and say so in warn. Only one daemon
 * owns a state file, so nothing races us between the check and the
 * rename. */
static void move_aside(const char *path, const char *why, char *warn, size_t warnlen)
{
    char dst[PATH_MAX + 64];
    long long now = (long long)time(NULL);
    struct stat st;

    snprintf(dst, sizeof dst, "%s.corrupt-%lld", path, now);
    for (int n = 1; lstat(dst, &st) == 0; n++)
        snprintf(dst, sizeof dst, "%s.corrupt-%lld-%d", path, now, n);
    if (rename(path, dst) == 0)
        snprintf(warn, warnlen, "registry %s %s; moved it to %s and started with an empty registry",
                 path, why, dst);
    else
        snprintf(warn, warnlen,
                 "registry %s %s, and moving it to %s failed (%s); started with an empty registry",
                 path, why, dst, strerror(errno));
}

/* Add one stored entry to t. Returns 0, or -1 with why. */
static int load_entry(struct reg_table *t, json_t *o, char *why, size_t whylen)
{
    struct reg_backend *b = reg_backend_from_json(o, why, whylen), *holder;
    int rc;

    if (!b)
        return -1;
    if ((rc = reg_table_put(t, b, &holder)) < 0) {
        if (holder)
            snprintf(why, whylen, "front %d, worktree \"%s\" is registered already", b->front,
                     b->worktree);
        else
            snprintf(why, whylen, "out of memory");
    }
    reg_backend_unref(b);
    return rc;
}

int reg_store_load(struct reg_table *t, const char *path, char *warn, size_t warnlen, char *err,
                   size_t errlen)
{
    char *data, why[PATH_MAX + 256], skipped[1024] = ""; /* why may name a worktree */
    size_t len, i, nskipped = 0, used = 0;
    json_t *doc, *o;
    int rc;

    warn[0] = '\0';
    if ((rc = read_file(path, &data, &len, err, errlen)) <= 0)
        return rc;
    if (rc == 2)
        snprintf(why, sizeof why, "is larger than %d MiB", STORE_MAX_FILE / (1024 * 1024));
    doc = rc == 2 ? NULL : parse_doc(data, len, why, sizeof why);
    free(data);
    if (!doc) {
        move_aside(path, why, warn, warnlen);
        return 0;
    }
    json_array_foreach(json_object_get(doc, "entries"), i, o) {
        if (load_entry(t, o, why, sizeof why) == 0)
            continue;
        nskipped++;
        /* Bounded: past the buffer, snprintf cuts the text and used stops
         * further appends. */
        if (used < sizeof skipped)
            used += (size_t)snprintf(skipped + used, sizeof skipped - used, "%sentries[%zu]: %s",
                                     used ? "; " : "", i, why);
    }
    if (nskipped)
        snprintf(warn, warnlen, "registry %s: skipped %zu bad entr%s: %s", path, nskipped,
                 nskipped == 1 ? "y" : "ies", skipped);
    json_decref(doc);
    return 0;
}
