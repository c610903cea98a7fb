/* run_fail.c - a server whose start failed while it lives on, read from
 * its output by the `wtproxy run` wrapper, the one that sees every line.
 *
 * Django's runserver, when its server thread dies at start (an error in
 * urls.py, in a model, in an app's ready()), prints the traceback and its
 * autoreloader waits for a change to a file: the process lives, nothing
 * listens. node --watch does the same for a script that throws, and tsc
 * --watch (nest start --watch) for a compile that failed: it starts
 * nothing and waits for a change; nest start --watch, tsx watch and
 * nodemon for a server process that died of an uncaught error. Only the
 * output says so; without it the daemon holds each request for the whole
 * start_timeout, past a test runner's own timeout.
 *
 * uvicorn --reload (0.17) too: its reloader binds the port and spawns the
 * server process, which dies of an app that fails to import or to start
 * while the reloader waits for a change; the port never listened.
 *
 * What was measured (Django 3.2, Node 20, Vite 8): an error in Django's
 * settings, and a vite.config.js that throws, end the process at once
 * (the daemon says so as an exit). A healthy Django prints "Watching for
 * file changes with StatReloader", "Performing system checks...", and
 * warnings before it listens, never the markers below, which only the
 * reloaders print once the server died. So: a marker since this start,
 * then QUIET_MS without output (the traceback is written in full; longer
 * while it stops at a frame), is a failed start; output after it (the reloader saw a change: "X
 * changed, reloading.", "Restarting 'server.js'") is a new start.
 *
 * The same markers after the server was ready are an edit that broke it:
 * the reloader restarted its server, which failed the same way (measured:
 * Django prints "X changed, reloading.", the traceback, and waits; uvicorn
 * "StatReload detected file change", "Process SpawnProcess-N:", the
 * traceback). Told likewise once nothing serves on its port, so that
 * requests get its traceback at once rather than a 502 after reload_grace.
 *
 * flask run --reload is the other way round (measured, Flask 2.2 and 3.1):
 * an app that fails to import at start ends the process (its reloader's
 * parent imports it first), but after an edit the new server process
 * prints the traceback and serves on, answering every request, /__whoami
 * too, with a 500 of that error; the gate said "the whoami middleware is
 * missing". Its marker is told though the port answers, and only its
 * reloader's "Restarting with" withdraws it: each refused request it
 * answered meanwhile prints a line and that traceback again.
 *
 * gunicorn --reload likewise (measured, 20.1): a worker whose app raises
 * a SyntaxError at load (a models.py Django imports at setup) logs the
 * traceback and serves on, answering every request, /__whoami too, with
 * a 500 whose body holds the frames only, not the error; the daemon held
 * requests 10-70 s, then refused them as a server without the
 * middleware. Its master listens all along, so a failure before any
 * "Worker reloading:" line is its start's, one after it an edit's.
 *
 * The relay thread feeds it (cli_run_fail_saw: a mutex held for a
 * memmove, no allocation); the supervising thread reads it at each poll
 * (cli_run_fail_poll) and tells the daemon: the `start-failed` op with the
 * last lines and which case it is ("when": "start" or "edit", after
 * `restarting` for a ready server), then `restarting` when new output
 * withdraws it. */
#include "run.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "packages.h"
#include "reg_db.h"
#include "registry.h"

#define QUIET_MS 300      /* a traceback's lines come in one burst */
#define QUIET_MAX_MS 5000 /* ... unless it stops at a frame: then this long at most */
#define TELL_LINES 16     /* the end of a traceback: the error, its file and line */

/* What a reloader prints when its server died and it waits for a change. */
static const struct {
    const char *text, *reloader;
    /* the line its reloader prints when it starts a new server; NULL: any
     * output after the failure is the reloader's */
    const char *again;
    int answers; /* its failed server answers every request with the error */
    int bun;     /* Bun's only: a line other servers print as they serve on */
    /* the line its reloader prints when a change to its files starts a new
     * server; NULL: unknown. With it the marker says only that the server
     * ended, not why: with no other marker and no such line since the
     * server last listened, no edit broke it (ended_unchanged) */
    const char *changed;
} markers[] = {
    /* runserver's server thread raised; the autoreloader lives on */
    {"Exception in thread django-main-thread:", "Django's autoreloader", NULL, 0, 0, NULL},
    /* the script threw; node waits for a change to it. node --watch
     * prints it after any end of its child, a kill -9's too */
    {"Failed running '", "node --watch", NULL, 0, 0, "Restarting '"},
    /* uvicorn --reload: importing the app raised in the server process its
     * reloader spawned (multiprocessing prints this above the traceback) */
    {"Process SpawnProcess-", "uvicorn's reloader", NULL, 0, 0, NULL},
    /* ... or the app's startup (lifespan) did: that process exits */
    {"Application startup failed. Exiting.", "uvicorn's reloader", NULL, 0, 0, NULL},
    /* tsc --watch (nest start --watch, tsc -w && node): the compile
     * failed, nothing runs, the watcher waits for a change; "Found 0
     * errors." is a compile that passed (tsc_passed) */
    {"error. Watching for file changes.", "tsc --watch", NULL, 0, 0, NULL},
    {"errors. Watching for file changes.", "tsc --watch", NULL, 0, 0, NULL},
    /* Node's last words on an uncaught error ("Node.js v20.20.2" under
     * the stack): the server process died at start, and the watcher that
     * started it (nest start --watch, tsx watch, nodemon) lives on, waiting
     * for a change; measured with Nest 10: an onModuleInit that throws
     * (a database down) left `nest start --watch` up and nothing listening,
     * each request held for start_timeout, then a 503 without the error */
    {"\nNode.js v", "its Node watcher", NULL, 0, 0, NULL},
    /* flask run's server process failed to import the app (the frame
     * above load_app, Flask 2.2's "app = " and 3.x's "app: WSGIApplication
     * = ") and answers each request with that error */
    {", in run_command\n    app", "flask run's reloader", " * Restarting with ", 1, 0, NULL},
    /* gunicorn --reload's worker failed to load the app (a SyntaxError:
     * another error ends the worker, and gunicorn with it) and answers
     * each request with a 500 of its frames */
    {", in load_wsgi\n    self.wsgi = self.app.wsgi()", "gunicorn's reloader",
     "] Worker reloading: ", 1, 0, NULL},
    /* ng serve (Angular 17's esbuild dev server): a build that fails at
     * its start leaves it up and not listening until a change to its
     * files (an Angular user's requests were held 60 s for a 502, then a
     * 503 "did not become ready", neither with the TS error); its
     * errors follow the marker, "✘ [ERROR] TS2322: ..." */
    {"Application bundle generation failed", "ng serve", NULL, 0, 0, NULL},
    /* bun --hot and bun --watch: a module that fails to parse or throws at
     * load prints Bun's "error: Unexpected ;" above "at FILE:LINE:COL",
     * and Bun waits for a change with nothing listening (measured, Bun
     * 1.3: each request held for start_timeout, then a 502 that did not
     * say the error); lowercase "error: " begins lines of other tools that
     * serve on, so it counts under Bun only */
    {"\nerror: ", "Bun's watcher", NULL, 0, 1, NULL},
    /* deno run --watch: the module failed to parse or threw at load ("error:
     * SyntaxError: ..." above), at start or after an edit; Deno restarts it
     * in the same process only on a change, nothing listening meanwhile
     * (measured, Deno 2.9: each request held start_timeout for a 503
     * without the error, or 10 s for a 502 after an edit) */
    {"Process failed. Restarting on file change", "deno --watch", NULL, 0, 0, NULL},
};

/* Whether cmd runs bun (a word bun or bunx, or one ending in /bun). */
int cli_run_fail_bun(const char *cmd)
{
    static const char *const words[] = {"bun", "bunx"};
    for (size_t w = 0; w < 2; w++)
        for (const char *p = strstr(cmd, words[w]); p; p = strstr(p + 1, words[w])) {
            char after = p[strlen(words[w])];
            if ((p == cmd || strchr(" \t/'\"", p[-1])) && strchr(" \t'\"", after))
                return 1;
        }
    return 0;
}

void cli_run_fail_init(struct cli_run_fail *f)
{
    *f = (struct cli_run_fail){.marker = -1};
    pthread_mutex_init(&f->lock, NULL);
}

/* Append buf to the tail, whose size holds a whole relay read and the
 * bytes before it, where a marker split across two reads begins. */
static void keep(struct cli_run_fail *f, const char *buf, size_t n)
{
    if (n >= sizeof f->tail) {
        buf += n - sizeof f->tail;
        n = sizeof f->tail;
    }
    if (f->len + n > sizeof f->tail) {
        size_t drop = f->len + n - sizeof f->tail;
        memmove(f->tail, f->tail + drop, f->len - drop);
        f->len -= drop;
    }
    memcpy(f->tail + f->len, buf, n);
    f->len += n;
}

/* Whether the marker at at is tsc's "Found 0 errors. Watching for file
 * changes.": a compile that passed, after which the server starts. */
static int tsc_passed(const struct cli_run_fail *f, const char *at)
{
    static const char zero[] = "Found 0 ";
    size_t k = sizeof zero - 1;
    return (size_t)(at - f->tail) >= k && memcmp(at - k, zero, k) == 0;
}

void cli_run_fail_saw(struct cli_run_fail *f, const char *buf, size_t n)
{
    if (n == 0)
        return;
    pthread_mutex_lock(&f->lock);
    keep(f, buf, n);
    n = n < f->len ? n : f->len; /* what of buf the tail holds */
    for (size_t i = 0; i < sizeof markers / sizeof markers[0]; i++) {
        if (markers[i].bun && !f->bun)
            continue;
        /* Only a marker that ends in these bytes: one seen before is not
         * seen again when the reloader prints next ("Restarting ..."). */
        size_t m = strlen(markers[i].text), from = f->len - n > m - 1 ? f->len - n - (m - 1) : 0;
        const char *at = memmem(f->tail + from, f->len - from, markers[i].text, m);
        if (at && !tsc_passed(f, at)) {
            if (f->marker_seq <= f->since) /* the first since this start */
                f->marker_ms = host_mono_ms();
            f->marker = (int)i;
            f->marker_seq = f->seq + 1;
            if (!markers[i].changed)
                f->error_seq = f->seq + 1;
        }
    }
    /* Any reloader's "starting anew": gunicorn's says a failure after it
     * is an edit's (failed_when_ready) */
    for (size_t i = 0; i < sizeof markers / sizeof markers[0]; i++) {
        const char *again = markers[i].again;
        if (!again)
            continue;
        size_t m = strlen(again), from = f->len - n > m - 1 ? f->len - n - (m - 1) : 0;
        if (!memmem(f->tail + from, f->len - from, again, m))
            continue;
        f->reloaded = 1;
        if ((int)i == f->marker)
            f->again_seq = f->seq + 1;
    }
    for (size_t i = 0; i < sizeof markers / sizeof markers[0]; i++) {
        const char *changed = markers[i].changed;
        size_t m = changed ? strlen(changed) : 0,
               from = m && f->len - n > m - 1 ? f->len - n - (m - 1) : 0;
        if (m && memmem(f->tail + from, f->len - from, changed, m))
            f->changed_seq = f->seq + 1;
    }
    f->seq++;
    f->last_ms = host_mono_ms();
    pthread_mutex_unlock(&f->lock);
}

void cli_run_fail_restart(struct cli_run_fail *f)
{
    pthread_mutex_lock(&f->lock);
    /* The new process's lines only: an aiohttp user's server that exited
     * later was quoted, and diagnosed, by a traceback of the run before
     * its restart, fixed since */
    f->len = 0;
    f->since = f->seq;
    f->reloaded = 0;
    pthread_mutex_unlock(&f->lock);
    f->told = 0;
    f->held = 0;
}

/* Whether the line at s (n bytes to the tail's end) is a JavaScript stack
 * frame, "    at f (file:1:2)". Node prints its error above ten of them,
 * and counted they pushed it out of the last lines: a missing
 * require('wtproxy-whoami') was then told as a plain exit, without the
 * link that fixes it. */
static int is_frame(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return i > 0 && n - i >= 3 && memcmp(s + i, "at ", 3) == 0;
}

/* Whether the output so far ends inside a traceback: its last line is
 * indented (a frame, "  File ...", or its code) or announces more, an
 * unindented line ending in a colon ("Traceback (most recent call
 * last):", "Exception in thread django-main-thread:", a chained
 * exception's "During handling of the above exception, another exception
 * occurred:"). A traceback ends with an unindented line, the error.
 * Seen in CI: under load Django paused over QUIET_MS between two frames,
 * and (by the likeliest reading of a failure of test 127) after
 * threading's "Exception in thread" line, which it flushes before it
 * reads each frame's source file; the failure was told without its error
 * line, and the rest of the traceback then read as a new start.
 * An error line that ends in a colon waits QUIET_MAX_MS. The lock is held. */
static int mid_traceback(const struct cli_run_fail *f)
{
    size_t end = f->len, at;
    while (end > 0 && (f->tail[end - 1] == '\n' || f->tail[end - 1] == '\r'))
        end--;
    for (at = end; at > 0 && f->tail[at - 1] != '\n'; at--)
        ;
    return end > at && (f->tail[at] == ' ' || f->tail[at] == '\t' || f->tail[end - 1] == ':');
}

/* Whether the line at s (n bytes to the tail's end) is a Ruby backtrace
 * frame, "\tfrom FILE:LINE:in `m'". Ruby prints its error first and
 * every frame after it, 60 and more for a Rails boot: the last lines held
 * only frames, never the error ("config/routes.rb:6: syntax error,
 * unexpected `end' (SyntaxError)"). */
static int is_ruby_frame(const char *s, size_t n)
{
    const char *eol = memchr(s, '\n', n);
    size_t i = 0;
    n = eol ? (size_t)(eol - s) : n;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    /* ":in ": not the code line of a Python frame, "    from app import views" */
    return i > 0 && n - i >= 5 && memcmp(s + i, "from ", 5) == 0 && memmem(s + i, n - i, ":in ", 4);
}

/* The run consecutive Ruby frames that end at out[*n], the second of
 * them at out[second]: those after the first become one line saying how
 * many they were, when that line is the shorter. */
static void cut_ruby_run(char *out, size_t *n, size_t run, size_t second)
{
    char note[64];
    if (run < 2)
        return;
    size_t k = (size_t)snprintf(note, sizeof note, "\t... %zu more frames\n", run - 1);
    if (*n - second > k) {
        memcpy(out + second, note, k);
        *n = second + k;
    }
}

/* The tail into out (as large), each run of Ruby frames cut to its first
 * and a count of the rest, so that the error above them stays among the
 * last lines. Never longer than the tail. Returns its length. The lock
 * is held. */
static size_t cut_ruby_frames(const struct cli_run_fail *f, char *out)
{
    size_t n = 0, run = 0, second = 0;
    for (size_t p = 0, e; p < f->len; p = e) {
        const char *nl = memchr(f->tail + p, '\n', f->len - p);
        e = nl ? (size_t)(nl - f->tail) + 1 : f->len;
        if (!is_ruby_frame(f->tail + p, e - p)) {
            cut_ruby_run(out, &n, run, second);
            run = 0;
        } else if (++run == 2) {
            second = n;
        }
        memcpy(out + n, f->tail + p, e - p);
        n += e - p;
    }
    cut_ruby_run(out, &n, run, second);
    return n;
}

/* buf (n bytes) without terminal escapes: colours, cursor moves, screen
 * clears (ESC [ ... final byte), titles and links (ESC ] ... BEL or ESC
 * \\), other two-byte ones. Nest's log and tsc's reached the 503 pages,
 * ls and the MCP tools as raw "[32m[Nest] 12522  - [39m". Returns the
 * new length. */
static size_t strip_escapes(char *buf, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (buf[i] != '\x1b' || i + 1 >= n) {
            buf[o++] = buf[i++];
        } else if (buf[i + 1] == '[') {
            for (i += 2; i < n && !(buf[i] >= 0x40 && buf[i] <= 0x7e); i++)
                ;
            i += i < n;
        } else if (buf[i + 1] == ']') {
            for (i += 2; i < n && buf[i] != '\a' && !(buf[i] == '\x1b' && i + 1 < n); i++)
                ;
            i += i < n ? (buf[i] == '\a' ? 1 : 2) : 0;
        } else {
            i += 2;
        }
    }
    return o;
}

/* The tail's last TELL_LINES lines, stack frames not counted and Ruby's
 * cut, terminal escapes out, at most len - 1 bytes, without the final
 * line break. The lock is held. */
static void last_lines(const struct cli_run_fail *f, char *out, size_t len)
{
    char tail[sizeof f->tail];
    size_t end = strip_escapes(tail, cut_ruby_frames(f, tail)), at, lines = 0;
    while (end > 0 && (tail[end - 1] == '\n' || tail[end - 1] == '\r'))
        end--;
    at = end;
    while (at > 0 && end - at < len - 1) {
        if (tail[at - 1] == '\n' && !is_frame(tail + at, end - at) && ++lines == TELL_LINES)
            break;
        at--;
    }
    snprintf(out, len, "%.*s", (int)(end - at), tail + at);
}

void cli_run_fail_last(struct cli_run_fail *f, char *out, size_t len)
{
    pthread_mutex_lock(&f->lock);
    last_lines(f, out, len);
    pthread_mutex_unlock(&f->lock);
}

int cli_run_install_fix(const struct cli_run *r, const char *lines, char *fix, size_t len)
{
    char cwd[PATH_MAX];
    if (whoami_missing_package(lines, r->worktree, fix, len))
        return 1;
    if (!getcwd(cwd, sizeof cwd)) /* CMD's folder, which its `cd DIR` starts from */
        snprintf(cwd, sizeof cwd, "%s", r->worktree);
    return host_deps_missing(lines, r->command, cwd, fix, len) || reg_db_refused(lines, fix, len);
}

/* Say it where the user reads (the terminal, or the log). */
static void say(struct cli_run *r, const char *line)
{
    fprintf(stderr, "%s\n", line);
    cli_run_log_note(&r->log, line);
}

/* Marker m (its reloader's `changed`) while r's server was ready, and no
 * file changed: its server process ended by itself, printing no error
 * (node --watch says "Failed running 'server.js'" after a kill -9 of its
 * child too, and measured, Node 20, nothing more); it was called an edit
 * that broke it, whose fix "fix the error its last lines name" names
 * none. Told as a death, with the restart that fixes it. */
static void died_unchanged(struct cli_run *r, int m)
{
    char line[PATH_MAX + 1024], pid[32] = "";
    pid_t ended = cli_run_died_ended(r);
    if (ended > 0)
        snprintf(pid, sizeof pid, " (pid %d)", (int)ended);
    snprintf(line, sizeof line,
             "wtproxy: %s's server process%s ended with no error and no change to its files: "
             "killed (kill -9, the OOM killer) or exited by itself; %s, which said only that it "
             "ended, lives on and starts it again only after a change to a file it watches: "
             "wtproxy restart --front %d (or save a file it watches); meanwhile requests "
             "through wtproxy get a 503 saying so",
             cli_run_folder(r->worktree), pid, markers[m].reloader, r->front);
    cli_run_tell_said(r, line, markers[m].reloader, REG_FAILED_DIED);
}

/* Whether marker m, after r's server last listened, says only that the
 * server ended: its reloader said no file changed since (its `changed`
 * line), and no marker of an error came. The lock is held. */
static int ended_unchanged(const struct cli_run_fail *f, int m)
{
    return markers[m].changed && f->changed_seq <= f->serving_seq && f->error_seq <= f->serving_seq;
}

/* Marker m while r's server was ready: its reloader restarted it after a
 * change and the new one failed. Told only once nothing serves on its
 * port (a server that answers serves, whatever it printed), unless m's
 * server answers with its error: as a restart (the entry starting, its
 * verdict dropped), then as a failed start; as a failed start when
 * reloaded says no reloader started it anew since this start (gunicorn's
 * master listens before its workers load the app).
 * A port that listens is asked (one GET, a second at most, once per
 * marker): uvicorn's reloader holds the socket its dead server accepted
 * on, so the port listens while connections queue unanswered (measured,
 * uvicorn 0.17: the reloader the socket's one holder, its server child
 * a zombie); the daemon's requests waited reload_grace for a 502.
 * Returns 1 when told. */
static int failed_when_ready(struct cli_run *r, const char *lines, int m, int ready, int reloaded)
{
    char line[PATH_MAX + 256];
    int listens = cli_port_listened(r->port), at_start = markers[m].answers && !reloaded;
    if (listens && !markers[m].answers && cli_port_answers(r->port))
        return 0;
    r->log.fail.held = listens;
    if (at_start)
        snprintf(line, sizeof line,
                 "wtproxy: %s's server failed at start: its app fails to load, and %s answers "
                 "every request with that error while it waits for a change to its files: fix "
                 "the error above and save; meanwhile requests through wtproxy get a 503 with "
                 "its last lines",
                 cli_run_folder(r->worktree), markers[m].reloader);
    else
        snprintf(line, sizeof line,
                 "wtproxy: an edit broke %s's server: %s restarted it after a change to its "
                 "files and the new one failed; %s: fix the error above and save; meanwhile "
                 "requests through wtproxy get a 503 with its last lines",
                 cli_run_folder(r->worktree), markers[m].reloader,
                 markers[m].answers ? "it answers every request with that error"
                                    : "it lives on without listening");
    say(r, line);
    if (at_start && ready) /* its entry is ready: starting first, as an edit's */
        cli_run_tell_restarting(r);
    cli_run_tell_failed(r, lines, markers[m].reloader,
                        at_start ? REG_FAILED_START : REG_FAILED_EDIT);
    return 1;
}

void cli_run_fail_serving(struct cli_run_fail *f)
{
    pthread_mutex_lock(&f->lock);
    f->serving_seq = f->seq;
    pthread_mutex_unlock(&f->lock);
}

void cli_run_fail_hold(struct cli_run *r)
{
    struct cli_run_fail *f = &r->log.fail;
    pthread_mutex_lock(&f->lock);
    f->told = f->seq;
    pthread_mutex_unlock(&f->lock);
    f->held = 1;
}

int cli_run_fail_held(const struct cli_run *r)
{
    return r->log.fail.held;
}

/* Whether the traceback of f's marker is written whole: QUIET_MS without
 * output, and its last line not a frame's (QUIET_MAX_MS at most). A
 * server that answers with its error is asked meanwhile (the gate's
 * /__whoami, every 100 ms), each request printing its line and the
 * traceback again, so its output is never quiet: QUIET_MS after the
 * marker's first sight, at a moment between two tracebacks. The lock is
 * held. */
static int settled(const struct cli_run_fail *f)
{
    long long now = host_mono_ms(), quiet = now - f->last_ms;
    if (markers[f->marker].answers)
        return now - f->marker_ms >= QUIET_MS && !mid_traceback(f);
    return quiet >= QUIET_MS && (quiet >= QUIET_MAX_MS || !mid_traceback(f));
}

/* Whether r's failure told at f->told is withdrawn: its reloader starts a
 * new server (its line, or any output after the failure). The lock is
 * held. */
static int started_anew(const struct cli_run_fail *f, unsigned long long seq)
{
    const char *again = f->marker >= 0 ? markers[f->marker].again : NULL;
    return f->told && (again ? f->again_seq > f->told : seq != f->told);
}

int cli_run_fail_poll(struct cli_run *r, int ready)
{
    struct cli_run_fail *f = &r->log.fail;
    char lines[REG_START_FAILED_MAX], fix[4 * PATH_MAX], line[sizeof fix + PATH_MAX + 256];
    const char *reloader = NULL;
    int m = -1, anew, reloaded;
    pthread_mutex_lock(&f->lock);
    unsigned long long seq = f->seq;
    if (ready && f->told) { /* it listened after its failed start, silently */
        f->since = f->told;
        f->told = 0;
    }
    if (!f->told && f->marker >= 0 && f->marker_seq > f->since && settled(f)) {
        last_lines(f, lines, sizeof lines);
        m = f->marker;
        reloader = markers[m].reloader;
    }
    anew = started_anew(f, seq);
    reloaded = f->reloaded;
    int unchanged = reloader && ready && ended_unchanged(f, m);
    pthread_mutex_unlock(&f->lock);
    if (unchanged && !cli_port_listened(r->port)) {
        f->told = seq;
        died_unchanged(r, m);
        return 1;
    }
    /* flask run's server fails so only after an edit (its start exits),
     * and listens meanwhile, ready or not */
    if (reloader && (ready || markers[m].answers)) {
        if (failed_when_ready(r, lines, m, ready, reloaded)) {
            f->told = seq;
            return 1;
        }
        pthread_mutex_lock(&f->lock);
        f->since = seq; /* it listens: that marker is not a failure */
        pthread_mutex_unlock(&f->lock);
    } else if (reloader) {
        f->told = seq;
        snprintf(line, sizeof line,
                 "wtproxy: %s's server failed at start and lives on without listening (%s "
                 "waits for a change to its files): fix the error above and save (a fix in a file "
                 "it does not watch, an .env or a config, needs wtproxy restart --front %d); "
                 "meanwhile requests through wtproxy get a 503 with its last lines",
                 cli_run_folder(r->worktree), reloader, r->front);
        if (cli_run_install_fix(r, lines, fix, sizeof fix))
            snprintf(line, sizeof line,
                     "wtproxy: %s's server failed at start and lives on without listening: %s; "
                     "then wtproxy restart --front %d",
                     cli_run_folder(r->worktree), fix, r->front);
        say(r, line);
        cli_run_tell_failed(r, lines, reloader, REG_FAILED_START);
    } else if (anew) {
        /* Its reloader saw a change and starts it anew: what its failed
         * server printed before (a refused request's traceback) is not
         * the new one's. */
        pthread_mutex_lock(&f->lock);
        f->since = f->marker >= 0 && markers[f->marker].again ? f->again_seq - 1 : f->told;
        pthread_mutex_unlock(&f->lock);
        f->told = 0;
        f->held = 0;
        snprintf(line, sizeof line,
                 "wtproxy: %s's server is starting again after %s: waiting for it to listen",
                 cli_run_folder(r->worktree),
                 r->failed_when == REG_FAILED_EDIT   ? "the edit that broke it"
                 : r->failed_when == REG_FAILED_DIED ? "its server process died"
                                                     : "its failed start");
        say(r, line);
        cli_run_tell_restarting(r);
    }
    return 0;
}
