/* ondemand.c - see ondemand.h.
 *
 * .wtproxy grammar: `key = value` lines, '#' starts a comment, keys:
 *   start = CMD      run through /bin/sh -c in the worktree; {port} is the port
 *   front = PORT     the front port it serves (default 8000)
 *   idle_stop = DUR  stop after this long without requests in flight: 500ms,
 *                    10s, 30m, 1h (default 30m; 0 = never; a bare number is
 *                    refused, its unit would be a guess) */
#include "ondemand.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server.h"

#define ONDEMAND_MAX 64
#define ONDEMAND_IDLE_DEFAULT_MS (30ULL * 60 * 1000)
#define ONDEMAND_SWEEP_MS 1000

struct started {
    char worktree[PATH_MAX];
    int front;
    pid_t pid; /* of its `wtproxy run`, leader of its own process group; 0 once reaped */
    unsigned long long idle_ms;
    char log[PATH_MAX + 32];
};

struct ondemand {
    struct proxy_server *srv;
    char exe[PATH_MAX];
    char control[PATH_MAX];
    char log_dir[PATH_MAX];
    struct started list[ONDEMAND_MAX];
    int n;
    struct event *sigchld, *sweep;
};

struct declaration {
    char start[2048];
    int front;
    unsigned long long idle_ms;
};

/* A duration with its unit (500ms, 10s, 30m, 1h); a bare number only as 0,
 * since people write "idle_stop = 30" meaning seconds or minutes. */
static int parse_duration(const char *v, unsigned long long *ms)
{
    static const struct { const char *unit; unsigned long long mult; } units[] = {
        {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v || *v == '-')
        return -1;
    if (!*end && n == 0) {
        *ms = 0;
        return 0;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].unit) == 0) {
            *ms = n * units[i].mult;
            return 0;
        }
    return -1;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* Read dir/.wtproxy. Returns 0 with a start command, -1 otherwise (a bad
 * line is reported once to the log and the file ignored). */
static int read_declaration(const char *dir, struct declaration *d)
{
    char path[PATH_MAX + 16], line[4096];
    snprintf(path, sizeof path, "%s/.wtproxy", dir);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    *d = (struct declaration){.front = WTP_DEFAULT_FRONT_PORT, .idle_ms = ONDEMAND_IDLE_DEFAULT_MS};
    int ok = 1;
    for (int no = 1; ok && fgets(line, sizeof line, f); no++) {
        char *hash = strchr(line, '#'), *eq;
        if (hash && (hash == line || hash[-1] == ' ' || hash[-1] == '\t'))
            *hash = '\0';
        char *l = trim(line);
        if (!*l)
            continue;
        if (!(eq = strchr(l, '='))) {
            proxy_log("%s:%d: not `key = value`; ignoring the file", path, no);
            ok = 0;
            break;
        }
        *eq = '\0';
        char *k = trim(l), *v = trim(eq + 1), *end;
        long front;
        if (strcmp(k, "start") == 0 && strlen(v) < sizeof d->start)
            memcpy(d->start, v, strlen(v) + 1);
        else if (strcmp(k, "front") == 0 && (front = strtol(v, &end, 10)) > 0 && front < 65536 && !*end)
            d->front = (int)front;
        else if (strcmp(k, "idle_stop") == 0 && parse_duration(v, &d->idle_ms) == 0)
            ;
        else {
            proxy_log("%s:%d: bad or unknown `%s`; ignoring the file", path, no, k);
            ok = 0;
        }
    }
    fclose(f);
    return ok && d->start[0] ? 0 : -1;
}

int ondemand_declared(const char *common_dir)
{
    char root[PATH_MAX];
    struct declaration d;
    size_t n = strlen(common_dir);
    if (n < 5 || n >= sizeof root || strcmp(common_dir + n - 5, "/.git") != 0)
        return 0;
    memcpy(root, common_dir, n - 5);
    root[n - 5] = '\0';
    return read_declaration(root, &d) == 0;
}

static struct started *find(struct ondemand *a, const char *worktree, int front)
{
    for (int i = 0; i < a->n; i++)
        if (a->list[i].front == front && strcmp(a->list[i].worktree, worktree) == 0)
            return &a->list[i];
    return NULL;
}

/* The child: its own session (so idle stop can signal the whole group and
 * the daemon's signals do not reach it), the log as output, then
 * `wtproxy run` in the worktree. */
static void exec_run(struct ondemand *a, const struct started *e, const char *start)
{
    char front[16];
    snprintf(front, sizeof front, "%d", e->front);
    setsid();
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int out = open(e->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0 ||
        chdir(e->worktree) < 0)
        _exit(127);
    setenv("WTPROXY_CONTROL", a->control, 1);
    setenv("WTPROXY_NO_AUTOSTART", "1", 1);
    /* The daemon started it, so the daemon may restart it when stale. */
    execl(a->exe, a->exe, "run", "--front", front, "--worktree", e->worktree,
          "--restart-on-stale", "--", "/bin/sh", "-c", start, (char *)NULL);
    _exit(127);
}

int ondemand_ensure(struct ondemand *a, const char *worktree, int front)
{
    struct declaration d;
    struct started *e = find(a, worktree, front);
    if (e && e->pid > 0)
        return 0;
    if (read_declaration(worktree, &d) < 0 || d.front != front)
        return -1;
    for (int i = 0; !e && i < a->n; i++)
        if (a->list[i].pid == 0) /* a slot whose server exited */
            e = &a->list[i];
    if (!e && a->n == ONDEMAND_MAX) {
        proxy_log("cannot start %s's server: %d servers started by wtproxy run already",
                  worktree, ONDEMAND_MAX);
        return -1;
    }
    if (!e)
        e = &a->list[a->n++];
    snprintf(e->worktree, sizeof e->worktree, "%s", worktree);
    const char *name = strrchr(worktree, '/');
    snprintf(e->log, sizeof e->log, "%s/%s.log", a->log_dir, name ? name + 1 : worktree);
    e->front = front;
    e->idle_ms = d.idle_ms;
    mkdir(a->log_dir, 0700);
    pid_t pid = fork();
    if (pid == 0)
        exec_run(a, e, d.start);
    if (pid < 0) {
        proxy_log("cannot start %s's server: %s", worktree, strerror(errno));
        return -1;
    }
    e->pid = pid;
    proxy_log("started %s's server from its .wtproxy (pid %d, front :%d); log: %s", worktree,
              (int)pid, front, e->log);
    return 0;
}

int ondemand_exited(struct ondemand *a, const char *worktree, int front, char *log,
                     size_t loglen)
{
    struct started *e = find(a, worktree, front);
    if (e)
        snprintf(log, loglen, "%s", e->log);
    return e && e->pid == 0;
}

static void reap(evutil_socket_t fd, short what, void *arg)
{
    struct ondemand *a = arg;
    pid_t pid;
    int status;
    (void)fd;
    (void)what;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        for (int i = 0; i < a->n; i++)
            if (a->list[i].pid == pid)
                a->list[i].pid = 0;
}

/* Stop what has served no request for its idle_stop: SIGTERM to the group,
 * which `wtproxy run` passes on before it unregisters and exits. */
static void sweep(evutil_socket_t fd, short what, void *arg)
{
    struct ondemand *a = arg;
    struct reg_table *t = a->srv->reg ? reg_server_table(a->srv->reg) : NULL;
    long long now = (long long)proxy_now_ms(a->srv);
    (void)fd;
    (void)what;
    for (int i = 0; t && i < a->n; i++) {
        struct started *e = &a->list[i];
        struct reg_backend *b = e->pid > 0 && e->idle_ms ? reg_table_get(t, e->front, e->worktree)
                                                         : NULL;
        long long last = b ? (b->last_request_ms > b->registered_ms ? b->last_request_ms
                                                                    : b->registered_ms) : 0;
        if (b && !b->active && now - last >= (long long)e->idle_ms) {
            proxy_log("stopping %s's server: idle for %llu ms (idle_stop)", e->worktree,
                      e->idle_ms);
            kill(-e->pid, SIGTERM);
        }
    }
}

struct ondemand *ondemand_new(struct proxy_server *s, const char *control_path,
                                const char *log_dir)
{
    struct ondemand *a = calloc(1, sizeof *a);
    ssize_t n = a ? readlink("/proc/self/exe", a->exe, sizeof a->exe - 1) : -1;
    if (n <= 0) {
        free(a);
        return NULL;
    }
    a->exe[n] = '\0';
    a->srv = s;
    snprintf(a->control, sizeof a->control, "%s", control_path);
    snprintf(a->log_dir, sizeof a->log_dir, "%s", log_dir);
    struct timeval tv = {ONDEMAND_SWEEP_MS / 1000, (ONDEMAND_SWEEP_MS % 1000) * 1000};
    a->sigchld = evsignal_new(s->base, SIGCHLD, reap, a);
    a->sweep = event_new(s->base, -1, EV_PERSIST, sweep, a);
    if (!a->sigchld || !a->sweep || evsignal_add(a->sigchld, NULL) < 0 ||
        event_add(a->sweep, &tv) < 0) {
        ondemand_free(a);
        return NULL;
    }
    return a;
}

void ondemand_free(struct ondemand *a)
{
    if (!a)
        return;
    if (a->sigchld)
        event_free(a->sigchld);
    if (a->sweep)
        event_free(a->sweep);
    free(a);
}
