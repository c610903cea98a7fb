/* logs.c - `wtproxy logs [WORKTREE] [--service S] [--front F] [-n N] [-f]`:
 * a server's log, read by the command line itself (the log is the user's
 * own file; the daemon only names it in the registration). Also what
 * logs, restart and stop share: their arguments and the registrations
 * they select. */
#include "cli.h"
#include "servers.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "registry.h"

#define TAIL_CHUNK 65536            /* read backwards this much at a time */
#define TAIL_MAX (16 * 1024 * 1024) /* never read more than this for -n */
#define FOLLOW_POLL_MS 200          /* -f looks for new bytes this often */
#define DEFAULT_LINES 50

int cli_server_args(int argc, char **argv, struct cli_server_args *a, const struct cli_opt *extra,
                    char *err, size_t errlen)
{
    struct cli_opt opts[16] = {{"service", &a->service, NULL}, {"front", &a->frontv, NULL}};
    size_t n = 2;
    for (; extra && extra->name && n < 15; extra++)
        opts[n++] = *extra;
    opts[n] = (struct cli_opt){NULL, NULL, NULL};
    int rest = argc, r = cli_parse(argc, argv, opts, &rest, err, errlen);
    if (r == 0 && rest < argc) { /* WORKTREE, then more flags */
        a->dir = argv[rest];
        r = cli_parse(argc - rest, argv + rest, opts, NULL, err, errlen);
    }
    if (r != 0)
        return r;
    if (a->frontv && cli_port("front", a->frontv, &a->front, err, errlen) < 0)
        return -1;
    if (a->service && !reg_service_name_ok(a->service, err, errlen))
        return -1;
    return cli_worktree_holding(a->dir, a->worktree, sizeof a->worktree, err, errlen);
}

json_t *cli_server_request(const char *op, const struct cli_server_args *a)
{
    json_t *req = json_pack("{s:s, s:s}", "op", op, "worktree", a->worktree);
    if (req && a->service)
        json_object_set_new(req, "service", json_string(a->service));
    if (req && a->front)
        json_object_set_new(req, "front", json_integer(a->front));
    return req;
}

json_t *cli_servers_matching(const struct cli_server_args *a, char *err, size_t errlen)
{
    json_t *reply = NULL, *out = json_array(), *req = json_pack("{s:s}", "op", "list"), *e;
    size_t i;
    int r = out && req ? cli_call(req, 0, &reply, err, errlen) : -1;
    json_decref(req);
    if (r < 0) {
        if (!out || !req)
            snprintf(err, errlen, "out of memory");
        json_decref(out);
        return NULL;
    }
    json_array_foreach(json_object_get(reply, "entries"), i, e) {
        const char *wt = json_string_value(json_object_get(e, "worktree"));
        const char *sv = json_string_value(json_object_get(e, "service"));
        const char *machine = json_string_value(json_object_get(e, "machine"));
        if (wt && strcmp(wt, a->worktree) == 0 && machine &&
            strcmp(machine, reg_machine_id()) == 0 &&
            (!a->service || (sv && strcmp(sv, a->service) == 0)) &&
            (!a->front || json_integer_value(json_object_get(e, "front")) == a->front))
            json_array_append(out, e);
    }
    json_decref(reply);
    return out;
}

/* The offset in fd (size bytes) where its last n lines begin; *found
 * says how many lines that is (fewer than n: the file holds no more). */
static off_t tail_start(int fd, off_t size, long n, long *found)
{
    char *buf = malloc(TAIL_CHUNK);
    off_t pos = size, floor = size > TAIL_MAX ? size - TAIL_MAX : 0;
    long lines = 0;
    *found = n;
    if (n <= 0) {
        free(buf);
        return size;
    }
    while (buf && pos > floor) {
        size_t len = pos - floor < TAIL_CHUNK ? (size_t)(pos - floor) : TAIL_CHUNK;
        ssize_t got = pread(fd, buf, len, pos - (off_t)len);
        if (got != (ssize_t)len)
            break;
        for (ssize_t i = got - 1; i >= 0; i--) {
            /* the last byte's newline ends the last line; it starts none */
            if (buf[i] == '\n' && pos - (off_t)len + i != size - 1 && ++lines == n) {
                free(buf);
                return pos - (off_t)len + i + 1;
            }
        }
        pos -= (off_t)len;
    }
    free(buf);
    /* the first line has no newline before it */
    *found = pos == 0 ? lines + (size > 0) : n;
    return pos;
}

/* Copy fd from off to its end onto out; returns the new offset. */
static off_t copy_out(int fd, off_t off, FILE *out)
{
    char buf[8192];
    ssize_t got;
    while ((got = pread(fd, buf, sizeof buf, off)) > 0) {
        fwrite(buf, 1, (size_t)got, out);
        off += got;
    }
    fflush(out);
    return off;
}

/* The last n lines of path's log, fd open on path (size bytes): when path
 * holds fewer (it was just rotated), the rest from the end of path.1
 * first. Returns the offset in fd from which path's own lines are to be
 * copied. */
static off_t tail_rotated(const char *path, int fd, off_t size, long n, FILE *out)
{
    long found;
    off_t start = tail_start(fd, size, n, &found);
    char old[PATH_MAX + 8];
    snprintf(old, sizeof old, "%s.1", path);
    int ofd = found < n ? open(old, O_RDONLY | O_CLOEXEC) : -1;
    struct stat st;
    if (ofd >= 0 && fstat(ofd, &st) == 0) {
        long more;
        copy_out(ofd, tail_start(ofd, st.st_size, n - found, &more), out);
    }
    if (ofd >= 0)
        close(ofd);
    return start;
}

void cli_log_end(const char *log)
{
    if (!log[0])
        return;
    fprintf(stderr, "its log, %s, ends with:\n", log);
    fflush(stderr);
    if (cli_log_tail(log, CLI_FAIL_LINES, stderr) < 0)
        fprintf(stderr, "(cannot read it)\n");
}

int cli_log_tail(const char *path, long n, FILE *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    copy_out(fd, tail_rotated(path, fd, st.st_size, n, out), out);
    close(fd);
    return 0;
}

/* Where fd's file begins in its writer's output: the count on the first
 * line run_log.c writes into a file it rotated to (CLI_RUN_LOG_ROTATED),
 * 0 for another first line (a file not rotated to), -1 while the file has
 * no whole first line yet. */
static long long file_start(int fd)
{
    char line[PATH_MAX + 160];
    size_t head = strlen(CLI_RUN_LOG_ROTATED_HEAD), tail = strlen(CLI_RUN_LOG_ROTATED_TAIL);
    ssize_t n = pread(fd, line, sizeof line - 1, 0);
    if (n <= 0)
        return -1;
    line[n] = '\0';
    char *end = strchr(line, '\n'), *count;
    if (!end)
        return n == (ssize_t)sizeof line - 1 ? 0 : -1;
    *end = '\0';
    if (strncmp(line, CLI_RUN_LOG_ROTATED_HEAD, head) != 0 || end - line < (ptrdiff_t)tail ||
        strcmp(end - tail, CLI_RUN_LOG_ROTATED_TAIL) != 0 || !(count = strrchr(line, '(')))
        return 0;
    return strtoll(count + 1, NULL, 10);
}

/* After a rotation, fd is the file read next and want where it should
 * begin (the last file's start and length). A file that begins later
 * means files came and went between two looks: say how much is not
 * shown. Returns the next want: -1 once judged. */
static long long told_gap(int fd, long long want, const char *path)
{
    long long start = file_start(fd);
    if (start < 0)
        return want; /* its first line is not written yet */
    if (start > want) {
        fflush(stdout);
        fprintf(stderr,
                "wtproxy logs: %lld bytes of %s are not shown: it rotated more than twice "
                "within %d ms, and the files that held them are gone. To keep them, start the "
                "server with a larger cap: WTPROXY_LOG_MAX_BYTES=BYTES wtproxy run ...\n",
                start - want, path, FOLLOW_POLL_MS);
    }
    return -1;
}

/* tail -F: print what is appended to path until interrupted; a log cut
 * short is read again from its start. One replaced (rotated: a new inode)
 * is read to its end first, since its writer may have added lines after
 * the last look and before the rename, then the file after it from its
 * start: the new one, or, when two rotations came within one look (the
 * old one is unlinked then), the .1 first. More than two within one look
 * leave a file no one can read: told_gap says so. */
static int follow(const char *path, long n)
{
    struct timespec tick = {0, FOLLOW_POLL_MS * 1000000L};
    char old[PATH_MAX + 8];
    int fd = -1, from_old = 0;
    off_t off = 0;
    ino_t ino = 0;
    long long want = -1; /* where the file after a rotation should begin */
    snprintf(old, sizeof old, "%s.1", path);
    for (;;) {
        struct stat st, now;
        if (fd < 0 && (fd = open(from_old ? old : path, O_RDONLY | O_CLOEXEC)) >= 0 &&
            fstat(fd, &st) == 0) {
            off = n >= 0 ? tail_rotated(path, fd, st.st_size, n, stdout) : 0;
            ino = st.st_ino;
            n = -1; /* a reopened log is read from its start */
        }
        from_old = 0;
        if (fd >= 0 && want >= 0)
            want = told_gap(fd, want, path);
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size < off)
            off = 0;
        if (fd >= 0)
            off = copy_out(fd, off, stdout);
        if (ferror(stdout))
            return 1;
        if (fd >= 0 && (stat(path, &now) < 0 || now.st_ino != ino)) {
            off = copy_out(fd, off, stdout);
            if (want >= 0)
                told_gap(fd, want, path);
            long long start = file_start(fd);
            want = start >= 0 ? start + off : -1;
            from_old = fstat(fd, &st) == 0 && st.st_nlink == 0;
            close(fd);
            fd = -1;
            continue; /* the next file at once: it fills meanwhile */
        }
        nanosleep(&tick, NULL);
    }
}

static const char *or_dash(json_t *s)
{
    return json_is_string(s) ? json_string_value(s) : "-";
}

/* Whether file (a name in servers/) is a log of a's worktree (its name
 * begins with prefix, reg_log_prefix's), with a's service and front when
 * given: "<prefix><front>[-<service>].log", as reg_log_name makes it. */
static int log_of(const char *file, const char *prefix, const struct cli_server_args *a)
{
    char want[PATH_MAX];
    size_t n = strlen(prefix);
    if (strncmp(file, prefix, n) != 0 || !isdigit((unsigned char)file[n]))
        return 0;
    char *end;
    long front = strtol(file + n, &end, 10);
    snprintf(want, sizeof want, "%s%s.log", a->service ? "-" : "", a->service ? a->service : "");
    return (!a->front || front == a->front) && strcmp(end, want) == 0;
}

/* path := p when p is a file of a's worktree written after *newest; not
 * one written before the worktree came to be: an earlier worktree's at
 * its path (reg_log_predates). */
static void consider(const struct cli_server_args *a, const char *p, char *path, size_t len,
                     time_t *newest)
{
    struct stat st;
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime >= *newest &&
        !reg_log_predates(p, a->worktree)) {
        *newest = st.st_mtime;
        snprintf(path, len, "%s", p);
    }
}

/* The logs the daemon's starts from a's .wtproxy write (op services). */
static void services_logs(const struct cli_server_args *a, char *path, size_t len, time_t *newest)
{
    char err[512];
    json_t *reply = NULL, *svc,
           *req = json_pack("{s:s, s:s}", "op", "services", "worktree", a->worktree);
    size_t i;
    if (req && cli_call(req, 0, &reply, err, sizeof err) == 0)
        json_array_foreach(json_object_get(reply, "services"), i, svc) {
            const char *name = json_string_value(json_object_get(svc, "name"));
            const char *log = json_string_value(json_object_get(svc, "log"));
            if (log && (!a->service || (name && strcmp(name, a->service) == 0)) &&
                (!a->front || json_integer_value(json_object_get(svc, "front")) == a->front))
                consider(a, log, path, len, newest);
        }
    json_decref(req);
    json_decref(reply);
}

int cli_last_log(const struct cli_server_args *a, char *path, size_t len)
{
    char state[PATH_MAX - 256], dir[PATH_MAX - 128], err[PATH_MAX + 256], prefix[NAME_MAX + 1];
    time_t newest = 0;
    reg_log_prefix(a->worktree, prefix, sizeof prefix);
    services_logs(a, path, len, &newest);
    if (reg_state_dir(state, sizeof state, err, sizeof err) < 0)
        return newest ? 0 : -1;
    snprintf(dir, sizeof dir, "%s/servers", state);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char p[PATH_MAX];
        if (log_of(e->d_name, prefix, a) &&
            (size_t)snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < sizeof p)
            consider(a, p, path, len, &newest);
    }
    if (d)
        closedir(d);
    return newest ? 0 : -1;
}

/* The one log sel names, into path. Returns 0, or the exit status after
 * saying why there is none (nothing registered, several, no log). */
static int pick_log(const struct cli_server_args *a, char *path, size_t len)
{
    char err[PATH_MAX + 256];
    json_t *found = cli_servers_matching(a, err, sizeof err), *e;
    size_t i;
    if (!found) {
        fprintf(stderr, "wtproxy logs: %s\n", err);
        return 1;
    }
    int rc = 0;
    if (json_array_size(found) == 0 && cli_last_log(a, path, len) == 0) {
        fprintf(stderr, "wtproxy logs: no server of %s runs now; its last log: %s\n", a->worktree,
                path);
    } else if (json_array_size(found) == 0) {
        fprintf(stderr,
                "wtproxy logs: no server of %s%s%s is registered (see wtproxy ls); "
                "start one: wtproxy run -- CMD {port}\n",
                a->worktree, a->service ? " with service " : "", a->service ? a->service : "");
        rc = 1;
    } else if (json_array_size(found) > 1) {
        fprintf(stderr,
                "wtproxy logs: %s has %zu servers; choose one with --service NAME or "
                "--front PORT:\n",
                a->worktree, json_array_size(found));
        json_array_foreach(found, i, e)
            fprintf(stderr, "  front %lld service %s: %s\n",
                    json_integer_value(json_object_get(e, "front")),
                    or_dash(json_object_get(e, "service")), or_dash(json_object_get(e, "command")));
        rc = 2;
    } else if (!json_string_value(json_object_get(json_array_get(found, 0), "log"))) {
        fprintf(stderr,
                "wtproxy logs: %s's server (%s) was registered with wtproxy register: "
                "its output goes wherever it was started; run it with wtproxy run -- CMD "
                "{port} to get a log\n",
                a->worktree,
                json_string_value(json_object_get(json_array_get(found, 0), "command")));
        rc = 1;
    } else {
        snprintf(path, len, "%s",
                 json_string_value(json_object_get(json_array_get(found, 0), "log")));
    }
    json_decref(found);
    return rc;
}

int cli_logs_main(int argc, char **argv)
{
    struct cli_server_args a = {0};
    const char *linesv = NULL;
    int follow_on = 0;
    long lines = DEFAULT_LINES;
    char err[PATH_MAX + 256], path[PATH_MAX];
    if (argc == 2 && strcmp(argv[1], "--prune") == 0) /* of every worktree: none to find */
        return cli_logs_prune();
    /* -n N and -f, as tail has them */
    for (int i = 1; i < argc; i++)
        argv[i] = strcmp(argv[i], "-n") == 0   ? "--lines"
                  : strcmp(argv[i], "-f") == 0 ? "--follow"
                                               : argv[i];
    const struct cli_opt extra[] = {
        {"lines", &linesv, NULL}, {"follow", NULL, &follow_on}, {NULL, NULL, NULL}};
    int r = cli_server_args(argc, argv, &a, extra, err, sizeof err);
    if (r > 0)
        return CLI_HELP;
    if (r == 0 && linesv && cli_number(linesv, 0, 1000000, &lines) < 0) {
        snprintf(err, sizeof err, "-n takes a number of lines, not \"%s\"", linesv);
        r = -1;
    }
    if (r < 0) {
        fprintf(stderr, "wtproxy logs: %s (see wtproxy logs --help)\n", err);
        return 2;
    }
    if ((r = pick_log(&a, path, sizeof path)) != 0)
        return r;
    if (follow_on)
        return follow(path, lines);
    if (cli_log_tail(path, lines, stdout) < 0) {
        fprintf(stderr, "wtproxy logs: cannot read %s: %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}
