/* fingerprint.c - wtproxy-fp-v1 (PROTOCOL.md, section 2): walk the tree
 * with openat/fdopendir (so no path length limit beyond the kernel's per
 * name one), select by pattern, digest each selection with SHA-256 (or
 * reuse an earlier digest of an unchanged file), sort, hash the records. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "whoami.h"

#define READ_CHUNK 65536

struct walk {
    const struct whoami_patterns *pat;
    const struct whoami_fp *prev;
    struct whoami_file *v;
    size_t n, cap;
    char *path; /* the current relative path */
    size_t len, pcap;
    unsigned char *buf; /* READ_CHUNK bytes */
    char *err;
    size_t errlen;
};

/* Running out of descriptors or memory is the one failure that must not
 * pass for "unreadable": the result would silently leave out a folder. */
static int resource_errno(int e)
{
    return e == EMFILE || e == ENFILE || e == ENOMEM;
}

static int fail(struct walk *w, const char *what, int e)
{
    snprintf(w->err, w->errlen,
             "cannot fingerprint: %s %s: %s (raise the open-files limit with ulimit -n, "
             "or narrow the patterns)",
             what, w->len ? w->path : ".", strerror(e));
    return -1;
}

static long long ns(struct timespec t)
{
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Append "/name" (or "name" at the top) to w->path. 0, or -1 on ENOMEM. */
static int path_push(struct walk *w, const char *name)
{
    size_t nl = strlen(name), need = w->len + 1 + nl + 1;
    if (need > w->pcap) {
        size_t cap = need * 2;
        char *p = realloc(w->path, cap);
        if (!p)
            return -1;
        w->path = p;
        w->pcap = cap;
    }
    if (w->len)
        w->path[w->len++] = '/';
    memcpy(w->path + w->len, name, nl + 1);
    w->len += nl;
    return 0;
}

static int cmp_path(const void *a, const void *b)
{
    return strcmp(((const struct whoami_file *)a)->path, ((const struct whoami_file *)b)->path);
}

/* The earlier record of path, when its digest may stand for the file
 * described by st (PROTOCOL.md 2.6), else NULL. */
static const struct whoami_file *reusable(const struct whoami_fp *prev, const char *path,
                                          const struct stat *st)
{
    if (!prev || !prev->n)
        return NULL;
    struct whoami_file key = {.path = (char *)path};
    const struct whoami_file *f = bsearch(&key, prev->file, prev->n, sizeof key, cmp_path);
    long long racy = prev->began_ns - WHOAMI_RACY_NS;
    if (!f || f->type == 'u' || f->dev != st->st_dev || f->ino != st->st_ino ||
        f->size != st->st_size || f->mtime_ns != ns(st->st_mtim) ||
        f->ctime_ns != ns(st->st_ctim) || f->mtime_ns >= racy || f->ctime_ns >= racy)
        return NULL;
    if (S_ISLNK(st->st_mode) != (f->type == 'l'))
        return NULL;
    return f;
}

static int sha256(const void *data, size_t n, unsigned char out[32])
{
    unsigned int len = 0;
    return EVP_Digest(data, n, out, &len, EVP_sha256(), NULL) == 1 ? 0 : -1;
}

/* Digest the regular file name in dfd into f. 1 done (f->type 'f' or 'u'),
 * 0 vanished (leave it out), -1 out of resources (errno set). */
static int digest_file(struct walk *w, int dfd, const char *name, struct whoami_file *f)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        if (resource_errno(errno))
            return -1;
        if (errno == ENOENT || errno == ELOOP)
            return 0;
        f->type = 'u';
        return 1;
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
    ssize_t r = 0;
    while (ok) {
        r = read(fd, w->buf, READ_CHUNK);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        ok = EVP_DigestUpdate(ctx, w->buf, (size_t)r) == 1;
    }
    ok = ok && r == 0 && EVP_DigestFinal_ex(ctx, f->digest, NULL) == 1;
    EVP_MD_CTX_free(ctx);
    close(fd);
    f->type = ok ? 'f' : 'u';
    return 1;
}

/* Digest the symlink name in dfd: its target string, never followed. */
static int digest_link(int dfd, const char *name, struct whoami_file *f)
{
    char target[PATH_MAX + 1];
    ssize_t n = readlinkat(dfd, name, target, sizeof target);
    if (n < 0 && errno == ENOENT)
        return 0;
    f->type = n >= 0 && (size_t)n < sizeof target ? 'l' : 'u';
    return sha256(target, f->type == 'l' ? (size_t)n : 0, f->digest) < 0 ? -1 : 1;
}

/* Add the selected candidate name (w->path) of type st. 0 or -1. */
static int add_file(struct walk *w, int dfd, const char *name, const struct stat *st)
{
    if (w->n == WHOAMI_MAX_FILES) {
        snprintf(w->err, w->errlen,
                 "cannot fingerprint: more than %d files are selected (narrow the include "
                 "patterns or add excludes)",
                 WHOAMI_MAX_FILES);
        return -1;
    }
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 256;
        struct whoami_file *v = realloc(w->v, cap * sizeof *v);
        if (!v)
            return fail(w, "out of memory at", ENOMEM);
        w->v = v;
        w->cap = cap;
    }
    struct whoami_file *f = &w->v[w->n];
    *f = (struct whoami_file){.dev = st->st_dev,
                              .ino = st->st_ino,
                              .size = st->st_size,
                              .mtime_ns = ns(st->st_mtim),
                              .ctime_ns = ns(st->st_ctim)};
    const struct whoami_file *old = reusable(w->prev, w->path, st);
    int r = 1;
    if (old) {
        f->type = old->type;
        memcpy(f->digest, old->digest, sizeof f->digest);
    } else {
        r = S_ISLNK(st->st_mode) ? digest_link(dfd, name, f) : digest_file(w, dfd, name, f);
        if (r < 0)
            return fail(w, "reading", errno);
        if (r == 1 && f->type == 'u' && sha256("", 0, f->digest) < 0)
            return fail(w, "hashing", ENOMEM);
    }
    if (r == 0)
        return 0;
    if (!(f->path = strdup(w->path)))
        return fail(w, "out of memory at", ENOMEM);
    w->n++;
    return 0;
}

static int walk_dir(struct walk *w, int fd);

/* One entry of the folder open as dfd. 0 or -1. */
static int walk_entry(struct walk *w, int dfd, const char *name)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOMEM ? fail(w, "examining", errno) : 0;
    if (S_ISDIR(st.st_mode)) {
        if (whoami_patterns_prune(w->pat, w->path))
            return 0;
        int cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd < 0)
            return resource_errno(errno) ? fail(w, "opening", errno) : 0;
        return walk_dir(w, cfd);
    }
    if ((S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) && whoami_patterns_select(w->pat, w->path))
        return add_file(w, dfd, name, &st);
    return 0;
}

/* Walk the folder open as fd (taken over). A folder that cannot be listed
 * adds what was listed; PROTOCOL.md 2.1. */
static int walk_dir(struct walk *w, int fd)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return resource_errno(e) ? fail(w, "listing", e) : 0;
    }
    size_t len = w->len;
    int r = 0;
    struct dirent *de;
    while (r == 0 && (errno = 0, de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (path_push(w, de->d_name) < 0)
            r = fail(w, "out of memory at", ENOMEM);
        else
            r = walk_entry(w, dirfd(d), de->d_name);
        w->len = len;
        w->path[len] = '\0';
    }
    if (r == 0 && !de && resource_errno(errno))
        r = fail(w, "listing", errno);
    closedir(d);
    return r;
}

/* The records of PROTOCOL.md 2.5, hashed in order, into fp->hash. */
static int hash_records(struct whoami_fp *fp)
{
    static const char hex[] = "0123456789abcdef";
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char total[32];
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
    for (size_t i = 0; ok && i < fp->n; i++) {
        const struct whoami_file *f = &fp->file[i];
        char tail[66];
        for (int j = 0; j < 32; j++) {
            tail[1 + 2 * j] = hex[f->digest[j] >> 4];
            tail[2 + 2 * j] = hex[f->digest[j] & 15];
        }
        tail[0] = '\0';
        tail[65] = '\n';
        ok = EVP_DigestUpdate(ctx, &f->type, 1) == 1 &&
             EVP_DigestUpdate(ctx, f->path, strlen(f->path)) == 1 &&
             EVP_DigestUpdate(ctx, tail, sizeof tail) == 1;
    }
    ok = ok && EVP_DigestFinal_ex(ctx, total, NULL) == 1;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return -1;
    memcpy(fp->hash, "sha256:", 7);
    for (int j = 0; j < 32; j++) {
        fp->hash[7 + 2 * j] = hex[total[j] >> 4];
        fp->hash[8 + 2 * j] = hex[total[j] & 15];
    }
    fp->hash[71] = '\0';
    return 0;
}

int whoami_fp_compute(const char *root, const struct whoami_patterns *p,
                      const struct whoami_fp *prev, struct whoami_fp *out, char *err, size_t errlen)
{
    struct walk w = {.pat = p, .prev = prev, .err = err, .errlen = errlen};
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    *out = (struct whoami_fp){.began_ns = ns(now)};
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot fingerprint %s: %s (give the checkout's folder)", root,
                 strerror(errno));
        return -1;
    }
    w.buf = malloc(READ_CHUNK);
    w.path = calloc(1, 256);
    w.pcap = 256;
    int r;
    if (w.buf && w.path) {
        r = walk_dir(&w, fd);
    } else {
        close(fd);
        r = fail(&w, "out of memory at", ENOMEM);
    }
    free(w.buf);
    free(w.path);
    out->file = w.v;
    out->n = w.n;
    if (r == 0 && out->n)
        qsort(out->file, out->n, sizeof *out->file, cmp_path);
    if (r == 0 && hash_records(out) < 0) {
        snprintf(err, errlen, "cannot fingerprint %s: SHA-256 failed (out of memory?)", root);
        r = -1;
    }
    if (r < 0)
        whoami_fp_free(out);
    return r;
}

int whoami_fp_unknown_after(struct whoami_fp *fp, long long after_ns)
{
    for (size_t i = 0; i < fp->n; i++) {
        struct whoami_file *f = &fp->file[i];
        if (f->mtime_ns <= after_ns)
            continue;
        f->type = 'u';
        if (sha256("", 0, f->digest) < 0)
            return -1;
    }
    return hash_records(fp);
}

void whoami_fp_free(struct whoami_fp *fp)
{
    for (size_t i = 0; i < fp->n; i++)
        free(fp->file[i].path);
    free(fp->file);
    fp->file = NULL;
    fp->n = 0;
}

size_t whoami_fp_diff(const struct whoami_fp *a, const struct whoami_fp *b, const char **out,
                      size_t max)
{
    size_t i = 0, j = 0, n = 0;
    while (i < a->n || j < b->n) {
        int c = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->file[i].path, b->file[j].path);
        const char *changed = NULL;
        if (c < 0) {
            changed = a->file[i++].path;
        } else if (c > 0) {
            changed = b->file[j++].path;
        } else {
            if (a->file[i].type != b->file[j].type ||
                memcmp(a->file[i].digest, b->file[j].digest, 32) != 0)
                changed = a->file[i].path;
            i++, j++;
        }
        if (changed && n++ < max)
            out[n - 1] = changed;
    }
    return n;
}
