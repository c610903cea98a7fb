/* whoami.h - the /__whoami contract (PROTOCOL.md): the code fingerprint
 * wtproxy-fp-v1, the parser of a backend's answer, and (gate.h) the gate
 * that compares the two. The fingerprint and the parser have no event loop
 * and no I/O beyond reading the tree: they are what the tests vectors, the
 * fuzzers and `wtproxy fingerprint` use. */
#ifndef WTP_WHOAMI_H
#define WTP_WHOAMI_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#define WHOAMI_ALGORITHM "wtproxy-fp-v1"
#define WHOAMI_HASH_SIZE 72 /* "sha256:" + 64 hex digits + NUL */

/* Limits of PROTOCOL.md: an answer's size, its pattern lists, the files
 * one fingerprint may select; and how old a file's timestamps must be,
 * relative to an earlier computation, for its digest to be reused. */
#define WHOAMI_ANSWER_MAX 65536
#define WHOAMI_MAX_PATTERNS 64
#define WHOAMI_PATTERN_MAX 256
#define WHOAMI_MAX_FILES 1048576
#define WHOAMI_RACY_NS 2000000000LL

/* Include and exclude globs (PROTOCOL.md, "Patterns"). Arrays of
 * NUL-terminated strings, owned by whoever filled them. */
struct whoami_patterns {
    char **include;
    size_t n_include;
    char **exclude;
    size_t n_exclude;
};

/* Whether path (relative to the root, '/'-separated, no leading '/')
 * matches pattern: '*' and '?' never cross '/', a "**" path component
 * matches zero or more components. 1 or 0. */
int whoami_glob_match(const char *pattern, const char *path);

/* Whether path is fingerprinted under p: it matches an include and no
 * exclude. 1 or 0. */
int whoami_patterns_select(const struct whoami_patterns *p, const char *path);

/* Whether the folder dir need not be walked nor watched: an exclude that is
 * a pattern P then a last component "**", with P matching dir, excludes
 * everything below it, or no include can match a path below it (`vendor`
 * when every include starts with `apps/web`) (PROTOCOL.md, "Pruning"). */
int whoami_patterns_prune(const struct whoami_patterns *p, const char *dir);

/* Whether a and b are the same lists, in the same order. 1 or 0. */
int whoami_patterns_same(const struct whoami_patterns *a, const struct whoami_patterns *b);

/* The patterns of a server that declares none of its own (defaults.c). */
const struct whoami_patterns *whoami_default_patterns(void);

/* One fingerprinted file. type is 'f' (regular file, digest of its
 * bytes), 'l' (symlink, digest of its target string, never followed) or
 * 'u' (unreadable: digest of nothing). The stat fields let a later
 * computation reuse digest for an unchanged file. */
struct whoami_file {
    char *path;
    char type;
    unsigned char digest[32];
    dev_t dev;
    ino_t ino;
    off_t size;
    long long mtime_ns, ctime_ns;
};

struct whoami_fp {
    char hash[WHOAMI_HASH_SIZE]; /* "sha256:<hex>" */
    size_t n;                    /* files fingerprinted */
    struct whoami_file *file;    /* sorted by path bytes (memcmp order) */
    long long began_ns;          /* CLOCK_REALTIME when the walk began */
};

/* Fingerprint the tree at root under p. prev, when not NULL, is an earlier
 * result for the same root and patterns: a file whose dev, ino, size,
 * mtime and ctime are unchanged keeps its digest without being read.
 * Returns 0 with out filled (free with whoami_fp_free), or -1 with err
 * (root missing or not a folder). An unreadable file or folder below root
 * is not an error: see PROTOCOL.md. */
int whoami_fp_compute(const char *root, const struct whoami_patterns *p,
                      const struct whoami_fp *prev, struct whoami_fp *out, char *err,
                      size_t errlen);
void whoami_fp_free(struct whoami_fp *fp);

/* Make every file of fp modified after after_ns (nanoseconds since the
 * epoch) type 'u' with the empty digest, and hash fp again: what a server
 * that loads its code itself reports of a file edited after its start,
 * which it may have loaded before or after the edit (PROTOCOL.md, 1).
 * 0, or -1 when SHA-256 fails (out of memory). */
int whoami_fp_unknown_after(struct whoami_fp *fp, long long after_ns);

/* Paths added, removed or changed from a to b: the count, with up to max
 * of them in out (pointers into a or b, valid while both live). */
size_t whoami_fp_diff(const struct whoami_fp *a, const struct whoami_fp *b, const char **out,
                      size_t max);

/* A backend's /__whoami answer, parsed and checked (PROTOCOL.md,
 * "Answer"). */
struct whoami_answer {
    char checkout[PATH_MAX];
    pid_t pid;
    char started_at[40];             /* as sent: RFC 3339, UTC */
    long long started_ms;            /* the same, in unix ms */
    struct whoami_patterns patterns; /* owned by the answer */
    size_t files;
    char hash[WHOAMI_HASH_SIZE];
    /* taking_in.since in unix ms: the server has seen a change on disk and
     * is taking it in now (its fingerprint is about to move); 0: it is not */
    long long taking_in_ms;
    /* "reloads": false: nothing takes a change in for this process, in it
     * or above it (PROTOCOL.md, section 1.2), so a fingerprint that differs
     * from the disk's will not catch up and stale_grace would only delay */
    int no_reloader;
};

/* Parse body (len bytes, not NUL-terminated) into out. Every field is
 * checked: types, the algorithm name, the hash's form, sizes, pattern
 * counts. Returns 0, or -1 with a one-line reason in err that names the
 * field ("fingerprint.hash is not \"sha256:\" and 64 hex digits"); out
 * then holds nothing to free. */
int whoami_answer_parse(const char *body, size_t len, struct whoami_answer *out, char *err,
                        size_t errlen);
void whoami_answer_free(struct whoami_answer *a);

/* Whether an error answer's body (len bytes) holds a Python traceback (a
 * line `  File "...", line N`): an app that fails to load (traceback.c).
 * Its last lines, the error's file and line and the error when given,
 * into out. */
int whoami_traceback_tail(const char *body, size_t len, char *out, size_t outlen);

/* The first lines of an error answer's body (len bytes) with text in
 * them, an HTML page's as its text, into out (error_head.c): what a
 * refusal quotes of a server that answers /__whoami with an error. 1 when
 * there is any, else 0 (out ""). */
int whoami_error_head(const char *body, size_t len, char *out, size_t outlen);

#endif
