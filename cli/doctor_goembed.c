/* doctor_goembed.c - `wtproxy doctor`'s go-embed check: a Go server built
 * by the whoami-protocol recipe (`wtproxy fingerprint ... --include ...`,
 * then `go build`) whose fingerprint leaves out a file the binary embeds.
 *
 * Why: the binary is built from its //go:embed files as much as from its
 * .go files, but only what the includes match is fingerprinted. An edited
 * template is then built into the next server and moves no fingerprint:
 * the server that serves the old one is called verified, and nothing
 * restarts it. The check reads the fingerprint line where the server is
 * started (each .wtproxy service's start, else the Playwright webServer
 * command, and a script either runs by its path), expands each //go:embed
 * pattern of the non-test .go files below its root as go build does, and
 * names each embedded file no include matches, with the `--include` that
 * adds it. Templates read at start (template.ParseFiles) are not seen:
 * whoami-protocol's recipe says to include them. */
#include <dirent.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "doctor.h"
#include "whoami.h"

#define GE_SCRIPT_MAX 65536    /* bytes of a script a start runs */
#define GE_SCRIPTS 4           /* scripts read per command */
#define GE_GO_FILE_MAX 1048576 /* bytes of a .go file read for //go:embed lines */
#define GE_GO_FILES_MAX 20000  /* .go files read */
#define GE_DEPTH_MAX 32        /* folders deep */
#define GE_SUGGEST_MAX 8       /* --include patterns proposed */

/* The fingerprint a command computes before its go build. */
struct ge_line {
    char where[PATH_MAX + 64]; /* "the .wtproxy's start", "scripts/dev.sh (run by ...)" */
    int in_start;              /* the line is the .wtproxy start's own text (not a script's) */
    int svc;                   /* that service's index */
    size_t insert_at;          /* in the start: where an --include is added */
    char root[PATH_MAX];       /* the folder fingerprinted, its realpath */
    char words[4096];          /* the patterns' text (inc and exc point into it) */
    char *inc[WHOAMI_MAX_PATTERNS], *exc[WHOAMI_MAX_PATTERNS];
    struct whoami_patterns p;
};

/* What the walk found. */
struct ge_walk {
    const struct ge_line *line;
    struct timespec deadline;
    int go_files, cut;
    int embedded, missing;
    char first[PATH_MAX];            /* the first file left out */
    char first_from[PATH_MAX + 300]; /* "main.go's //go:embed templates" */
    char suggest[GE_SUGGEST_MAX][PATH_MAX];
    int nsuggest;
    char *buf; /* GE_GO_FILE_MAX + 1 */
};

/* One shell word of s at *at into out (quotes removed), *at past it; the
 * word ends at a blank or an operator. 0, or -1 when there is none (an
 * operator or the end) or it holds a `$` the shell would expand. */
static int shell_word(const char *s, size_t *at, char *out, size_t len)
{
    size_t i = *at, n = 0;
    int dollar = 0;
    while (s[i] == ' ' || s[i] == '\t' || (s[i] == '\\' && s[i + 1] == '\n'))
        i += s[i] == '\\' ? 2 : 1;
    if (!s[i] || strchr("\n&|;<>()#", s[i]))
        return -1;
    for (; s[i] && !strchr(" \t\n&|;<>()", s[i]); i++) {
        if (s[i] == '\'' || s[i] == '"') {
            char q = s[i++];
            for (; s[i] && s[i] != q; i++) {
                dollar |= q == '"' && s[i] == '$';
                if (n + 1 < len)
                    out[n++] = s[i];
            }
            if (!s[i])
                return -1;
            continue;
        }
        dollar |= s[i] == '$';
        if (n + 1 < len)
            out[n++] = s[i];
    }
    out[n] = '\0';
    *at = i;
    return dollar ? -1 : 0;
}

/* Parse the `wtproxy fingerprint` whose arguments begin at text + at, its
 * folder relative to base, into l. 0, or -1 when it cannot be told (a
 * variable, a missing folder). */
static int parse_fp(const char *text, size_t at, const char *base, struct ge_line *l)
{
    char word[PATH_MAX], dir[PATH_MAX] = ".", path[2 * PATH_MAX];
    size_t used = 0, ni = 0, ne = 0;
    int no_exclude = 0;
    l->insert_at = at;
    while (shell_word(text, &at, word, sizeof word) == 0) {
        int inc = strcmp(word, "--include") == 0, exc = strcmp(word, "--exclude") == 0;
        no_exclude |= strcmp(word, "--no-exclude") == 0;
        if (word[0] != '-') {
            snprintf(dir, sizeof dir, "%s", word);
            l->insert_at = at;
            continue;
        }
        if (!inc && !exc)
            continue;
        if (shell_word(text, &at, word, sizeof word) < 0 ||
            used + strlen(word) + 1 > sizeof l->words)
            return -1;
        char *w = memcpy(l->words + used, word, strlen(word) + 1);
        used += strlen(word) + 1;
        if (inc && ni < WHOAMI_MAX_PATTERNS)
            l->inc[ni++] = w, l->insert_at = at;
        else if (exc && ne < WHOAMI_MAX_PATTERNS)
            l->exc[ne++] = w;
    }
    while (text[at] == ' ' || text[at] == '\t')
        at++;
    if (text[at] && !strchr("\n&|;<>()#", text[at]))
        return -1; /* a word with a $: its value is the shell's */
    const struct whoami_patterns *d = whoami_default_patterns(); /* as `fingerprint` fills them */
    l->p.include = ni ? l->inc : d->include;
    l->p.n_include = ni ? ni : d->n_include;
    l->p.exclude = no_exclude ? NULL : ne ? l->exc : d->exclude;
    l->p.n_exclude = no_exclude ? 0 : ne ? ne : d->n_exclude;
    snprintf(path, sizeof path, "%s/%s", base, dir);
    return dir[0] == '/' || !realpath(path, l->root) ? -1 : 0;
}

/* The `wtproxy fingerprint` in text that a `go build` (or `go run`)
 * follows, into l: 1, or 0 when there is none that can be read. */
static int find_fp(const char *text, const char *base, struct ge_line *l)
{
    for (const char *f = strstr(text, "wtproxy fingerprint"); f;
         f = strstr(f + 1, "wtproxy fingerprint")) {
        const char *after = f + strlen("wtproxy fingerprint");
        if ((strstr(after, "go build") || strstr(after, "go run")) &&
            parse_fp(text, (size_t)(after - text), base, l) == 0)
            return 1;
    }
    return 0;
}

/* Whether cmd (run in base) runs a script of the worktree that
 * fingerprints before a go build: each word naming a file there is read,
 * its fingerprint's folder taken from the worktree's root, where the
 * daemon runs a start.
 * 1 with l filled; l NULL: whether one runs `wtproxy fingerprint` at all. */
static int find_in_scripts(const char *cmd, const char *base, const char *root, struct ge_line *l,
                           const char *runner)
{
    char word[PATH_MAX], path[2 * PATH_MAX], real[PATH_MAX], *text = malloc(GE_SCRIPT_MAX);
    struct stat st;
    int found = 0, read = 0;
    for (size_t at = 0; text && cmd[at] && !found && read < GE_SCRIPTS;) {
        if (shell_word(cmd, &at, word, sizeof word) < 0) {
            at += cmd[at] != '\0'; /* past the operator (or the word with a $) */
            continue;
        }
        snprintf(path, sizeof path, "%s/%s", base, word);
        if (!strchr(word, '/') || word[0] == '/' || !realpath(path, real) ||
            strncmp(real, root, strlen(root)) != 0 || stat(real, &st) < 0 || !S_ISREG(st.st_mode) ||
            host_read_small_file(real, text, GE_SCRIPT_MAX) < 0)
            continue;
        read++;
        found = l ? find_fp(text, root, l) : strstr(text, "wtproxy fingerprint") != NULL;
        if (found && l)
            snprintf(l->where, sizeof l->where, "%s (run by %s)", word, runner);
    }
    free(text);
    return found;
}

/* The folder a start runs in: the worktree's root, or the DIR of its
 * leading `cd DIR &&`. */
static void start_base(const char *start, const char *root, char *base, size_t len)
{
    size_t n = strncmp(start, "cd ", 3) == 0 ? strcspn(start + 3, " ") : 0;
    if (n && strncmp(start + 3 + n, " &&", 3) == 0)
        snprintf(base, len, "%s/%.*s", root, (int)n, start + 3);
    else
        snprintf(base, len, "%s", root);
}

int doc_start_fingerprints(const char *root, const char *start)
{
    char base[2 * PATH_MAX];
    start_base(start, root, base, sizeof base);
    return strstr(start, "wtproxy fingerprint") || find_in_scripts(start, base, root, NULL, "");
}

/* The fingerprint line of w's services' starts, else of the Playwright
 * config's webServer commands: 1 with l filled. */
static int find_line(const char *root, const struct cli_wtproxy *w, struct ge_line *l)
{
    char base[2 * PATH_MAX], runner[128];
    for (int i = 0; w->file && i < w->file->n; i++) {
        const struct wtfile_service *s = &w->file->svc[i];
        snprintf(runner, sizeof runner, "the .wtproxy's %s%s%sstart", s->name[0] ? "[service " : "",
                 s->name, s->name[0] ? "] " : "");
        start_base(s->start, root, base, sizeof base);
        l->svc = i;
        if ((l->in_start = find_fp(s->start, base, l))) {
            snprintf(l->where, sizeof l->where, "%s", runner);
            return 1;
        }
        if (find_in_scripts(s->start, base, root, l, runner))
            return 1;
    }
    struct cli_playwright pw;
    cli_playwright_read(root, &pw);
    const char *cmds[CLI_PW_MAX_SERVERS + 2] = {pw.run_cmd, pw.command};
    for (int i = 0; i < pw.nservers; i++)
        cmds[2 + i] = pw.server[i].command;
    int found = 0;
    snprintf(runner, sizeof runner, "%s's webServer.command", pw.file);
    for (int i = 0; pw.text && !found && i < 2 + pw.nservers; i++)
        if ((found = find_fp(cmds[i], root, l)))
            snprintf(l->where, sizeof l->where, "%s", runner);
        else
            found = find_in_scripts(cmds[i], root, root, l, runner);
    free(pw.text);
    return found;
}

static int past(const struct timespec *deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > deadline->tv_sec ||
           (now.tv_sec == deadline->tv_sec && now.tv_nsec > deadline->tv_nsec);
}

/* The --include that adds rel (relative to the fingerprint's root), an
 * embedded file that pattern (of the package in folder pkg, "" the root)
 * matched: the pattern's folder and all below it (a `**` component) when
 * it names one plainly, so that a new template there is in too; else the
 * pattern itself; else rel. dir: the match is a folder, embedded whole. */
static void suggest(struct ge_walk *g, const char *pkg, const char *pattern, const char *match,
                    int dir, const char *rel)
{
    char s[PATH_MAX];
    const char *slash = strrchr(pattern, '/');
    size_t plain = strcspn(pattern, "*?[\\");
    const char *sep = pkg[0] ? "/" : "";
    if (dir)
        snprintf(s, sizeof s, "%s/**", match);
    else if (slash && plain > (size_t)(slash - pattern))
        snprintf(s, sizeof s, "%s%s%.*s/**", pkg, sep, (int)(slash - pattern), pattern);
    else
        snprintf(s, sizeof s, "%s%s%s", pkg, sep, pattern);
    if (!whoami_glob_match(s, rel))
        snprintf(s, sizeof s, "%s", rel);
    for (int i = 0; i < g->nsuggest; i++)
        if (whoami_glob_match(g->suggest[i], rel)) /* one proposed already adds it */
            return;
    if (g->nsuggest < GE_SUGGEST_MAX)
        snprintf(g->suggest[g->nsuggest++], sizeof g->suggest[0], "%s", s);
}

/* a "/" b into out; -1 when it does not fit (b "" gives a). */
static int join(char *out, size_t len, const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b), sep = na && nb;
    if (na + sep + nb + 1 > len)
        return -1;
    memcpy(out, a, na);
    out[na] = '/';
    memcpy(out + na + sep, b, nb + 1);
    return 0;
}

/* One embedded file (abs), matched by pattern of gofile in folder pkg. */
static void embedded(struct ge_walk *g, const char *abs, const char *gofile, const char *pkg,
                     const char *pattern, const char *match, int dir)
{
    const char *rel = abs + strlen(g->line->root) + 1;
    g->embedded++;
    if (whoami_patterns_select(&g->line->p, rel))
        return;
    if (!g->missing++) {
        snprintf(g->first, sizeof g->first, "%s", rel);
        snprintf(g->first_from, sizeof g->first_from, "%s's //go:embed %.256s", gofile, pattern);
    }
    suggest(g, pkg, pattern, match, dir, rel);
}

/* Every file below folder abs that go:embed takes when a pattern names
 * the folder: names beginning with '.' or '_' left out unless all:. */
static void embed_dir(struct ge_walk *g, const char *abs, int all, int depth, const char *gofile,
                      const char *pkg, const char *pattern, const char *match)
{
    DIR *d = depth < GE_DEPTH_MAX ? opendir(abs) : NULL;
    char path[PATH_MAX];
    struct stat st;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            (!all && strchr("._", e->d_name[0])) || join(path, sizeof path, abs, e->d_name) < 0 ||
            lstat(path, &st) < 0)
            continue;
        if (S_ISDIR(st.st_mode))
            embed_dir(g, path, all, depth + 1, gofile, pkg, pattern, match);
        else if (S_ISREG(st.st_mode))
            embedded(g, path, gofile, pkg, pattern, match, 1);
    }
    if (d)
        closedir(d);
}

/* One //go:embed pattern of gofile, in the package folder pkg (relative
 * to the fingerprint's root, "" for it), expanded as go build does. */
static void embed_pattern(struct ge_walk *g, const char *pkg, const char *gofile, char *pattern)
{
    int all = strncmp(pattern, "all:", 4) == 0;
    char full[2 * PATH_MAX];
    glob_t gl;
    if (all)
        pattern += 4;
    snprintf(full, sizeof full, "%s%s%s/%s", g->line->root, pkg[0] ? "/" : "", pkg, pattern);
    if (glob(full, GLOB_PERIOD, NULL, &gl) != 0)
        return;
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        struct stat st;
        const char *match = gl.gl_pathv[i] + strlen(g->line->root) + 1;
        if (lstat(gl.gl_pathv[i], &st) < 0)
            continue;
        if (S_ISDIR(st.st_mode))
            embed_dir(g, gl.gl_pathv[i], all, 0, gofile, pkg, pattern, match);
        else if (S_ISREG(st.st_mode))
            embedded(g, gl.gl_pathv[i], gofile, pkg, pattern, match, 0);
    }
    globfree(&gl);
}

/* The //go:embed lines of the .go file abs (rel: its path for messages),
 * in package folder pkg. A pattern is a word, a "quoted" or `raw` one. */
static void go_file(struct ge_walk *g, const char *abs, const char *rel, const char *pkg)
{
    if (host_read_small_file(abs, g->buf, GE_GO_FILE_MAX + 1) < 0)
        return;
    for (char *line = g->buf, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        line += strspn(line, " \t");
        if (strncmp(line, "//go:embed", 10) != 0 || !strchr(" \t", line[10]) || !line[10])
            continue;
        for (char *p = line + 10;;) {
            p += strspn(p, " \t\r");
            if (!*p)
                break;
            char q = *p == '"' || *p == '`' ? *p++ : '\0';
            char *end = q ? strchr(p, q) : p + strcspn(p, " \t\r");
            if (!end)
                break;
            char save = *end;
            *end = '\0';
            embed_pattern(g, pkg, rel, p);
            *end = save;
            p = end + (q != '\0');
        }
    }
}

/* The non-test .go files below folder rel of the fingerprint's root, as
 * go build sees a module: folders beginning with '.' or '_', testdata,
 * vendor and node_modules left out. */
static void go_walk(struct ge_walk *g, const char *rel, int depth)
{
    char abs[PATH_MAX], path[PATH_MAX], sub[PATH_MAX];
    if (join(abs, sizeof abs, g->line->root, rel) < 0)
        return;
    DIR *d = depth < GE_DEPTH_MAX ? opendir(abs) : NULL;
    struct stat st;
    for (struct dirent *e; d && (e = readdir(d));) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        if (g->go_files >= GE_GO_FILES_MAX || past(&g->deadline)) {
            g->cut = 1;
            break;
        }
        if (strchr("._", n[0]) || join(path, sizeof path, abs, n) < 0 ||
            join(sub, sizeof sub, rel, n) < 0 || lstat(path, &st) < 0)
            continue;
        if (S_ISDIR(st.st_mode) && strcmp(n, "testdata") && strcmp(n, "vendor") &&
            strcmp(n, "node_modules"))
            go_walk(g, sub, depth + 1);
        else if (S_ISREG(st.st_mode) && len > 3 && !strcmp(n + len - 3, ".go") &&
                 (len < 8 || strcmp(n + len - 8, "_test.go"))) {
            g->go_files++;
            go_file(g, path, sub, rel);
        }
    }
    if (d)
        closedir(d);
}

/* The fix: the start rewritten with the includes when the line is the
 * .wtproxy's start itself, else where to add them. */
static void fix(const struct ge_walk *g, const struct wtfile *f, struct doc_result *r)
{
    char adds[768] = "";
    size_t n = 0;
    for (int i = 0; i < g->nsuggest && n < sizeof adds; i++)
        n += (size_t)snprintf(adds + n, sizeof adds - n, " --include '%.200s'", g->suggest[i]);
    const struct ge_line *l = g->line;
    if (l->in_start) {
        const struct wtfile_service *s = &f->svc[l->svc];
        snprintf(r->fix, sizeof r->fix,
                 "in .wtproxy%s%s%s write: start = %.*s%s%s, then: wtproxy restart",
                 s->name[0] ? " [service " : "", s->name, s->name[0] ? "]" : "", (int)l->insert_at,
                 s->start, adds, s->start + l->insert_at);
    } else {
        snprintf(r->fix, sizeof r->fix,
                 "add%.600s to the wtproxy fingerprint line of %.300s, then: wtproxy restart", adds,
                 l->where);
    }
}

/* The includes of l, each quoted, joined by ", " (the defaults without any). */
static void includes_words(const struct ge_line *l, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < l->p.n_include && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, "%s'%s'", i ? ", " : "", l->p.include[i]);
}

void doc_go_embed(struct doc_ctx *c, struct doc_result *r)
{
    struct cli_wtproxy w = {0};
    static struct ge_line l; /* PATH_MAX several times: not on the stack */
    static struct ge_walk g;
    char incs[1024];
    if (!c->have_wt) {
        doc_set(r, DOC_SKIP, "not in a worktree");
        return;
    }
    memset(&l, 0, sizeof l);
    if (c->has_file)
        cli_wtproxy_read(c->wt.root, &w);
    if (!find_line(c->wt.root, &w, &l)) {
        doc_set(r, DOC_SKIP,
                "no `wtproxy fingerprint` before a `go build` in the .wtproxy's start nor the "
                "Playwright webServer: no Go server built by the whoami-protocol recipe");
        cli_wtproxy_free(&w);
        return;
    }
    memset(&g, 0, sizeof g);
    g.line = &l;
    g.buf = malloc(GE_GO_FILE_MAX + 1);
    clock_gettime(CLOCK_MONOTONIC, &g.deadline);
    g.deadline.tv_sec += DOC_WALK_MAX_MS / 1000;
    if (g.buf)
        go_walk(&g, "", 0);
    free(g.buf);
    includes_words(&l, incs, sizeof incs);
    if (g.missing) {
        char more[96] = "";
        if (g.missing > 1)
            snprintf(more, sizeof more, " (and %d more of the %d files embedded)", g.missing - 1,
                     g.embedded);
        doc_set(r, DOC_PROBLEM,
                "%s runs `wtproxy fingerprint` before `go build`, but its includes (%s) leave "
                "out %s, which %s embeds%s: an edit there is built into the next server yet "
                "moves no fingerprint, so wtproxy calls a server that serves the old file "
                "verified and never restarts it",
                l.where, incs, g.first, g.first_from, more);
        fix(&g, w.file, r);
    } else {
        doc_set(
            r, DOC_OK,
            "%s fingerprints %s before `go build`, and its includes (%s) match the %d files "
            "the module's //go:embed lines embed%s (a template read at start, template.ParseFiles, "
            "must be included too: wtproxy help whoami-protocol)",
            l.where, l.root, incs, g.embedded, g.cut ? ", of the .go files read in time" : "");
    }
    cli_wtproxy_free(&w);
}
