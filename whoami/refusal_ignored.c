/* refusal_ignored.c - what a stale refusal adds when git ignores every
 * file that changed: most likely the server wrote them itself (a JSON
 * store in data/, uploads in media/, a cache), and a restart cannot help,
 * since its next write makes it stale again. Said with the exclude, in
 * the server's own middleware's words, that leaves them out of the
 * fingerprint. Still a refusal: a gitignored file can be code
 * (local_settings.py, a generated *_pb2.py). */
#include <stdio.h>
#include <string.h>

#include "kind.h"
#include "refusal.h"

/* The pattern of path's folder, any folder of that name (data/notes.json:
 * every file of data/, a data store's next file too), else of the file
 * itself (one at the top), quoted for JavaScript and Python alike. */
static void pattern_of(const char *path, char *out, size_t outlen)
{
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(out, outlen, "'**/%.*s/**'", (int)(slash - path), path);
    else
        snprintf(out, outlen, "'**/%s'", path);
}

/* The patterns of disk's files changed since since_ms, each once,
 * WHOAMI_NAMED_FILES at most, joined by ", ". */
static void patterns_of(const struct whoami_fp *disk, long long since_ms, char *out, size_t outlen)
{
    size_t n = 0;
    char one[1100];
    out[0] = '\0';
    for (size_t i = 0; i < disk->n && n < WHOAMI_NAMED_FILES; i++) {
        if (!whoami_refusal_file_newer(&disk->file[i], since_ms))
            continue;
        pattern_of(disk->file[i].path, one, sizeof one);
        if (strstr(out, one))
            continue;
        size_t used = strlen(out);
        snprintf(out + used, outlen - used, "%s%s", n++ ? ", " : "", one);
    }
}

/* The line that extends the defaults of t's middleware with patterns:
 * `exclude` replaces them, and a list without them fingerprints
 * node_modules and the test runners' output. */
static void exclude_line(const struct whoami_target *t, const char *patterns, char *out,
                         size_t outlen)
{
    static const char *const node[] = {"node", "tsx", "npm", "npx", "pnpm", "yarn", "bun", NULL};
    static const char *const django[] = {"manage", "django-admin", NULL};
    static const char *const asgi[] = {"uvicorn", "hypercorn", "fastapi", NULL};
    static const char *const python[] = {"python", "gunicorn", "uwsgi", "waitress-serve", NULL};
    const char *cmd = t->command ? t->command : "";
    if (whoami_runs_one_of(cmd, django))
        snprintf(out, outlen,
                 "WTPROXY_WHOAMI = {'exclude': [*DEFAULT_EXCLUDE, %s]} in settings.py, with "
                 "from wtproxy_whoami.fingerprint import DEFAULT_EXCLUDE",
                 patterns);
    else if (whoami_runs_one_of(cmd, asgi))
        snprintf(out, outlen,
                 "app = WhoamiASGIMiddleware(app, exclude=[*DEFAULT_EXCLUDE, %s]), with from "
                 "wtproxy_whoami.fingerprint import DEFAULT_EXCLUDE",
                 patterns);
    else if (whoami_runs_one_of(cmd, python))
        snprintf(out, outlen,
                 "WhoamiWSGIMiddleware(app, exclude=[*DEFAULT_EXCLUDE, %s]), with from "
                 "wtproxy_whoami.fingerprint import DEFAULT_EXCLUDE",
                 patterns);
    else if (whoami_runs_one_of(cmd, node))
        snprintf(out, outlen,
                 "app.use(whoami({ exclude: [...DEFAULT_EXCLUDE, %s] })), with import { whoami, "
                 "DEFAULT_EXCLUDE } from 'wtproxy-whoami'",
                 patterns);
    else
        snprintf(out, outlen, "add %s to its /__whoami's exclude, after the defaults", patterns);
}

void whoami_refusal_ignored(const struct whoami_target *t, const struct whoami_fp *disk,
                            long long since_ms, size_t n, const char *files, char *out,
                            size_t outlen)
{
    char patterns[WHOAMI_NAMED_FILES * 1104], line[sizeof patterns + 256];
    patterns_of(disk, since_ms, patterns, sizeof patterns);
    exclude_line(t, patterns, line, sizeof line);
    if (n == 1)
        snprintf(out, outlen,
                 "; %s is ignored by git: if the server writes it itself (a data store, uploads, "
                 "a cache), it is not code: leave it out of the fingerprint: %s (wtproxy help "
                 "whoami)",
                 files, line);
    else
        snprintf(out, outlen,
                 "; all %zu are ignored by git: if the server writes them itself (a data store, "
                 "uploads, a cache), they are not code: leave them out of the fingerprint: %s "
                 "(wtproxy help whoami)",
                 n, line);
}
