/* identify.c - what identifying the caller costs per new connection, with
 * the daemon's own code (proxy/identify.c and proxy/caller*.c, linked in
 * from the proxy library).
 *
 * It makes a temp git repository with a linked worktree, moves its cwd into
 * the worktree, listens on 127.0.0.1:0 and, per new connection, times what
 * the daemon does when a request needs its caller (identify_start):
 *   warm  the connection comes from this process, the most recent pid:
 *         sock_diag lookup + /proc/PID/fd of that pid + the cached place
 *         (identify_start returns 1 at once), once with the few fds this
 *         process has and once with extra sockets open (a busy client such
 *         as wrk -c50 holds 50);
 *   cold  a new child process connects each time: its pid is in no list,
 *         identify_start returns 0 and the worker thread's full /proc scan
 *         (then caller_place, on the worker too) answers; timed until the callback.
 * Each identified connection is interleaved with a bare one (accept, close,
 * nothing else) of the same kind, so the baseline sits beside every figure.
 *
 * Usage: bench_identify [-w WARM] [-c COLD] [-f EXTRA_FDS]
 *        (defaults 2000, 200, 50). Markdown on stdout.
 * See tests/bench/README.md. */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "caller.h"
#include "host.h"
#include "identify.h"
#include "registry.h"

static void die(const char *what)
{
    fprintf(stderr, "bench_identify: FAIL: %s%s%s\n", what, errno ? ": " : "",
            errno ? strerror(errno) : "");
    exit(1);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* --- samples ------------------------------------------------------------- */

struct samples {
    double *v;
    size_t n, cap;
};

static void add(struct samples *s, double x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        if (!(s->v = realloc(s->v, s->cap * sizeof *s->v)))
            die("out of memory");
    }
    s->v[s->n++] = x;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile (nearest rank) of s; sorts it. */
static double pct(struct samples *s, double q)
{
    if (!s->n)
        return 0;
    qsort(s->v, s->n, sizeof *s->v, cmp_double);
    size_t k = (size_t)(q * (double)s->n + 0.999999);
    if (k < 1)
        k = 1;
    if (k > s->n)
        k = s->n;
    return s->v[k - 1];
}

/* --- the repository --------------------------------------------------------- */

static char tmpdir[PATH_MAX], worktree[PATH_MAX], common_dir[PATH_MAX];

static void cleanup_tmp(void)
{
    char cmd[PATH_MAX + 32];
    if (!tmpdir[0])
        return;
    if (chdir("/") < 0)
        return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_identify: could not remove %s\n", tmpdir);
}

static void make_repo(void)
{
    char cmd[4 * PATH_MAX], root[PATH_MAX];
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/wtproxy-bench-id.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmpdir))
        die("mkdtemp");
    atexit(cleanup_tmp);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && git init -q repo && git -C repo -c user.name=bench "
             "-c user.email=bench@localhost commit -q --allow-empty -m init && "
             "git -C repo worktree add -q '%s/wt-a' 2>/dev/null",
             tmpdir, tmpdir);
    errno = 0;
    if (system(cmd) != 0)
        die("git init / git worktree add in the temp dir");
    snprintf(cmd, sizeof cmd, "%s/wt-a", tmpdir);
    struct host_worktree w;
    if (host_worktree_of(cmd, &w, NULL, 0) < 0)
        die("host_worktree_of(the new worktree)");
    snprintf(worktree, sizeof worktree, "%s", w.root);
    snprintf(common_dir, sizeof common_dir, "%s", w.common);
    if (chdir(worktree) < 0)
        die("chdir into the worktree");
    (void)root;
}

/* What route_known_repo does with one registration: the registered
 * worktree's common dir, found afresh, against the caller's. */
static int known(const char *caller_wt, const char *common, void *arg)
{
    struct host_worktree w;
    (void)caller_wt;
    (void)arg;
    return host_worktree_of(worktree, &w, NULL, 0) == 0 && strcmp(w.common, common) == 0;
}

/* known's copy for the worker: it reads nothing of it. */
static void *known_snap(void *arg)
{
    (void)arg;
    return malloc(1);
}

/* The one registration never changes. */
static unsigned long known_version(void *arg)
{
    (void)arg;
    return 0;
}

/* --- the machine ---------------------------------------------------------------- */

static int count_fds(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static void machine(int *procs, int *procs_uid, long *fds_uid)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    struct stat st;
    char path[300];
    *procs = *procs_uid = 0;
    *fds_uid = 0;
    if (!d)
        die("opendir /proc");
    while ((e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        (*procs)++;
        if (fstatat(dirfd(d), e->d_name, &st, 0) < 0 || st.st_uid != getuid())
            continue;
        (*procs_uid)++;
        snprintf(path, sizeof path, "/proc/%s/fd", e->d_name);
        int n = count_fds(path);
        if (n > 0)
            *fds_uid += n;
    }
    closedir(d);
}

/* --- connections ------------------------------------------------------------------ */

static int lfd;
static struct sockaddr_in laddr;

static int connect_client(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket");
    if (connect(fd, (struct sockaddr *)&laddr, sizeof laddr) < 0)
        die("connect");
    return fd;
}

static int accept_one(void)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        die("accept");
    return fd;
}

struct answer {
    int done;
    double at;
    struct identify_result r;
};

static void answered(void *arg, const struct identify_result *r)
{
    struct answer *a = arg;
    a->at = now_us();
    a->r = *r;
    a->done = 1;
}

static void check_placed(const struct identify_result *r, const char *what)
{
    if (!r->placed || strcmp(r->place.worktree, worktree) != 0) {
        fprintf(stderr,
                "bench_identify: FAIL: %s connection not placed in %s (placed %d, pid %d, "
                "worktree '%s', cwd '%s')\n",
                what, worktree, r->placed, (int)r->place.pid, r->place.worktree, r->place.cwd);
        exit(1);
    }
}

/* One identification through the worker (the first one, or a cold one):
 * loops until the callback. Returns the callback's time. */
static double wait_answer(struct event_base *base, struct answer *a)
{
    double deadline = now_us() + 10e6;
    while (!a->done) {
        if (event_base_loop(base, EVLOOP_ONCE) < 0)
            die("event_base_loop");
        if (now_us() > deadline) {
            errno = 0;
            die("no answer from the identification worker within 10 s");
        }
    }
    return a->at;
}

struct row {
    const char *name;
    size_t n;
    struct samples ident, total, bare;
    struct samples onloop; /* cold: identify_start's own time */
};

/* Warm: this process connects, is the most recent pid, its place cached. */
static void run_warm(struct event_base *base, struct identify *id, int n, struct row *row)
{
    for (int i = 0; i < 2 * n; i++) {
        int cfd = connect_client();
        double t0, t1, t2, t3;
        if (i % 2 == 0) {
            struct identify_result r;
            void *ticket;
            t0 = now_us();
            int sfd = accept_one();
            t1 = now_us();
            int rc = identify_start(id, sfd, NULL, NULL, &r, &ticket);
            t2 = now_us();
            close(sfd);
            identify_forget(id, r.place.pid, r.fd); /* as the daemon does when a connection ends */
            t3 = now_us();
            if (rc != 1) {
                errno = 0;
                fprintf(stderr, "bench_identify: warm identify_start returned %d, want 1\n", rc);
                exit(1);
            }
            check_placed(&r, "warm");
            add(&row->ident, t2 - t1);
            add(&row->total, t3 - t0);
            row->n++;
        } else {
            t0 = now_us();
            int sfd = accept_one();
            close(sfd);
            t3 = now_us();
            add(&row->bare, t3 - t0);
        }
        close(cfd);
    }
    (void)base;
}

/* Cold: a new child connects each time and holds its socket until told. */
static void run_cold(struct event_base *base, struct identify *id, int n, struct row *row)
{
    for (int i = 0; i < 2 * n; i++) {
        int go[2], ready[2];
        char b = 0;
        if (pipe2(go, O_CLOEXEC) < 0 || pipe2(ready, O_CLOEXEC) < 0)
            die("pipe");
        pid_t pid = fork();
        if (pid < 0)
            die("fork");
        if (pid == 0) {
            close(go[1]);
            close(ready[0]);
            int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0 || connect(fd, (struct sockaddr *)&laddr, sizeof laddr) < 0)
                _exit(2);
            if (write(ready[1], &b, 1) != 1)
                _exit(2);
            while (read(go[0], &b, 1) < 0 && errno == EINTR)
                ;
            _exit(0);
        }
        close(go[0]);
        close(ready[1]);
        if (read(ready[0], &b, 1) != 1)
            die("the child did not connect");
        close(ready[0]);
        double t0, t1, t2, t3;
        if (i % 2 == 0) {
            struct answer a = {0};
            void *ticket;
            t0 = now_us();
            int sfd = accept_one();
            t1 = now_us();
            int rc = identify_start(id, sfd, answered, &a, &a.r, &ticket);
            t2 = now_us();
            if (rc != 0) {
                errno = 0;
                fprintf(stderr, "bench_identify: cold identify_start returned %d, want 0\n", rc);
                exit(1);
            }
            double t_ans = wait_answer(base, &a);
            close(sfd);
            t3 = now_us();
            check_placed(&a.r, "cold");
            add(&row->onloop, t2 - t1);
            add(&row->ident, t_ans - t1);
            add(&row->total, t3 - t0);
            row->n++;
        } else {
            t0 = now_us();
            int sfd = accept_one();
            close(sfd);
            t3 = now_us();
            add(&row->bare, t3 - t0);
        }
        close(go[1]);
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
    }
}

/* Components of the warm path, timed one at a time on fresh connections. */
struct parts {
    struct samples names, diag, has, has_extra, start, place;
};

static void run_parts(int n, int extra, struct parts *p)
{
    char err[256];
    struct host_diag *d = host_diag_open(err, sizeof err);
    if (!d) {
        errno = 0;
        die(err);
    }
    pid_t self = getpid();
    int *spare = calloc((size_t)(extra ? extra : 1), sizeof *spare);
    for (int phase = 0; phase < 2; phase++) {
        if (phase == 1)
            for (int k = 0; k < extra; k++)
                if ((spare[k] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
                    die("socket");
        for (int i = 0; i < n; i++) {
            int cfd = connect_client(), sfd = accept_one();
            struct sockaddr_storage local, peer;
            socklen_t ll = sizeof local, pl = sizeof peer;
            unsigned long inode;
            uid_t uid;
            double t0 = now_us();
            if (getsockname(sfd, (struct sockaddr *)&local, &ll) < 0 ||
                getpeername(sfd, (struct sockaddr *)&peer, &pl) < 0)
                die("getsockname/getpeername");
            double t1 = now_us();
            if (host_diag_socket(d, (struct sockaddr *)&peer, (struct sockaddr *)&local, &inode,
                                 &uid) < 0)
                die("host_diag_socket");
            double t2 = now_us();
            int has = host_pid_socket_fd(self, inode) >= 0;
            double t3 = now_us();
            if (!has) {
                errno = 0;
                die("host_pid_socket_fd(own pid) did not find the socket");
            }
            if (phase == 0) {
                add(&p->names, t1 - t0);
                add(&p->diag, t2 - t1);
                add(&p->has, t3 - t2);
                double t4 = now_us();
                volatile unsigned long long s = host_pid_start(self);
                double t5 = now_us();
                (void)s;
                struct caller_place pl2;
                double t6 = now_us();
                int rc = caller_place(self, uid, known, NULL, &pl2);
                double t7 = now_us();
                if (rc != 0) {
                    errno = 0;
                    die("caller_place(own pid) did not place it");
                }
                add(&p->start, t5 - t4);
                add(&p->place, t7 - t6);
            } else {
                add(&p->has_extra, t3 - t2);
            }
            close(sfd);
            close(cfd);
        }
    }
    for (int k = 0; k < extra; k++)
        close(spare[k]);
    free(spare);
    host_diag_close(d);
}

static void print_row(struct row *r, const char *ident_label, struct samples *ident)
{
    double ip50 = pct(ident, 0.5), ip99 = pct(ident, 0.99);
    double tp50 = pct(&r->total, 0.5), tp99 = pct(&r->total, 0.99);
    double bp50 = pct(&r->bare, 0.5), bp99 = pct(&r->bare, 0.99);
    printf("| %s | %zu | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %+.1f |\n", ident_label, r->n,
           ip50, ip99, tp50, tp99, bp50, bp99, tp50 - bp50);
}

int main(int argc, char **argv)
{
    int warm = 2000, cold = 200, extra = 50, opt;
    while ((opt = getopt(argc, argv, "w:c:f:h")) != -1) {
        switch (opt) {
        case 'w':
            warm = atoi(optarg);
            break;
        case 'c':
            cold = atoi(optarg);
            break;
        case 'f':
            extra = atoi(optarg);
            break;
        default:
            fprintf(stderr, "usage: bench_identify [-w WARM] [-c COLD] [-f EXTRA_FDS]\n");
            return opt == 'h' ? 0 : 2;
        }
    }
    if (warm < 1 || cold < 1 || extra < 0) {
        fprintf(stderr, "bench_identify: -w and -c must be >= 1, -f >= 0\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    make_repo();

    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    laddr.sin_family = AF_INET;
    laddr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof laddr;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&laddr, sizeof laddr) < 0 ||
        listen(lfd, 1024) < 0 || getsockname(lfd, (struct sockaddr *)&laddr, &alen) < 0)
        die("listen on 127.0.0.1:0");

    struct event_base *base = event_base_new();
    char err[256];
    if (!base)
        die("event_base_new");
    struct identify_known kn = {known_snap, known, free, known_version, NULL};
    struct identify *id = identify_new(base, &kn, err, sizeof err);
    if (!id) {
        errno = 0;
        die(err);
    }

    /* The first connection goes through the worker (no recent pid yet)
     * and leaves this pid, placed, at the front of the recent list. */
    {
        int cfd = connect_client(), sfd = accept_one();
        struct answer a = {0};
        void *ticket;
        int rc = identify_start(id, sfd, answered, &a, &a.r, &ticket);
        if (rc == 0)
            wait_answer(base, &a);
        else if (rc < 0) {
            errno = 0;
            die("identify_start could not trace the first connection");
        }
        check_placed(&a.r, "first");
        close(sfd);
        close(cfd);
    }

    int own_fds = count_fds("/proc/self/fd");
    struct row w1 = {0}, w2 = {0}, c1 = {0};
    run_warm(base, id, warm / 10 + 1, &w1); /* warm-up, discarded */
    free(w1.ident.v);
    free(w1.total.v);
    free(w1.bare.v);
    memset(&w1, 0, sizeof w1);
    run_warm(base, id, warm, &w1);

    int *spare = calloc((size_t)(extra ? extra : 1), sizeof *spare);
    for (int k = 0; k < extra; k++)
        if ((spare[k] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
            die("socket");
    int own_fds_extra = count_fds("/proc/self/fd");
    run_warm(base, id, warm, &w2);
    for (int k = 0; k < extra; k++)
        close(spare[k]);
    free(spare);

    run_cold(base, id, cold, &c1);

    struct parts p = {0};
    run_parts(warm / 2 > 0 ? warm / 2 : 1, extra, &p);

    int procs, procs_uid;
    long fds_uid;
    machine(&procs, &procs_uid, &fds_uid);
    unsigned long handles = 0;
    FILE *f = fopen("/proc/sys/fs/file-nr", "r");
    if (f) {
        if (fscanf(f, "%lu", &handles) != 1)
            handles = 0;
        fclose(f);
    }
    struct utsname u;
    uname(&u);
    cpu_set_t cpus;
    char cpulist[256] = "";
    if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) {
        size_t used = 0;
        for (int c = 0; c < CPU_SETSIZE && used < sizeof cpulist - 8; c++)
            if (CPU_ISSET(c, &cpus))
                used += (size_t)snprintf(cpulist + used, sizeof cpulist - used, "%s%d",
                                         used ? "," : "", c);
    }

    printf("## wtproxy caller identification: cost per new connection\n\n");
    printf("- the daemon's code (identify_start, proxy/identify.c + caller*.c), kernel %s, "
           "%ld CPUs online, this process on CPUs %s\n",
           u.release, sysconf(_SC_NPROCESSORS_ONLN), cpulist);
    printf("- machine: %d processes, %d of them uid %d with %ld open fds between them "
           "(what a cold /proc scan reads), %lu file handles system-wide\n",
           procs, procs_uid, (int)getuid(), fds_uid, handles);
    printf("- caller: a worktree of a temp git repository (cwd), known() as the daemon's "
           "with one registration; 127.0.0.1 TCP, IPv4\n");
    printf("- warm: this process connects (%d fds open; %d with %d extra sockets), "
           "the most recent pid, its place cached; cold: a new forked child per connection, "
           "answered by the worker's full /proc scan, then caller_place; every identified "
           "connection interleaved with a bare one of the same kind\n",
           own_fds, own_fds_extra, extra);
    printf("- identify = identify_start on the accepted socket (cold: until the callback); "
           "bare = accept + close of a connection of the same kind with no identification; "
           "added = the p50 difference\n\n");
    printf("| case | conns | identify p50 µs | identify p99 µs | accept+identify+close p50 µs "
           "| p99 µs | bare accept+close p50 µs | p99 µs | added p50 µs |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    char label[128];
    snprintf(label, sizeof label, "warm (own pid, %d fds)", own_fds);
    print_row(&w1, label, &w1.ident);
    snprintf(label, sizeof label, "warm (own pid, %d fds)", own_fds_extra);
    print_row(&w2, label, &w2.ident);
    print_row(&c1, "cold (new child): until the answer", &c1.ident);
    printf("| cold: of which on the event loop | %zu | %.1f | %.1f | | | | | |\n", c1.n,
           pct(&c1.onloop, 0.5), pct(&c1.onloop, 0.99));
    printf("\n");

    printf("| warm path, one step at a time | p50 µs | p99 µs |\n|---|---:|---:|\n");
    printf("| getsockname + getpeername | %.1f | %.1f |\n", pct(&p.names, .5), pct(&p.names, .99));
    printf("| host_diag_socket (sock_diag exact lookup) | %.1f | %.1f |\n", pct(&p.diag, .5),
           pct(&p.diag, .99));
    printf("| host_pid_socket_fd (own pid, %d fds) | %.1f | %.1f |\n", own_fds, pct(&p.has, .5),
           pct(&p.has, .99));
    printf("| host_pid_socket_fd (own pid, +%d sockets) | %.1f | %.1f |\n", extra,
           pct(&p.has_extra, .5), pct(&p.has_extra, .99));
    printf("| host_pid_start (the cache's pid check) | %.1f | %.1f |\n", pct(&p.start, .5),
           pct(&p.start, .99));
    printf("| caller_place (uncached: cwd -> worktree -> known) | %.1f | %.1f |\n",
           pct(&p.place, .5), pct(&p.place, .99));
    printf("\n");
    double m = pct(&w1.ident, 0.5), m2 = pct(&w2.ident, 0.5);
    printf("warm median identification: %.1f µs (%d fds), %.1f µs (%d fds): target <= 50 µs: %s\n",
           m, own_fds, m2, own_fds_extra,
           m <= 50 && m2 <= 50 ? "met"
                               : (m <= 50 ? "met with few fds, MISSED with many" : "MISSED"));

    identify_free(id);
    event_base_free(base);
    close(lfd);
    return 0;
}
