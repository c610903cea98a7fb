/* test_caller.c - proxy/caller.c and the host/ facts it walks on, with
 * real parts: TCP connections between this test's own sockets (127.0.0.1,
 * ::1, an IPv4 client of an IPv6 listener) looked up through
 * NETLINK_SOCK_DIAG; the fd scan of this process and of a forked child
 * (host/proc_fd.c); real git repositories and worktrees (linked, nested,
 * pruned; every layout is in test_worktree.c); and ppid chains of real
 * processes placed by cwd and by WTPROXY_WORKTREE. Includes the .c files
 * to reach statics. */
#include "../../proxy/caller.c"
#include "../../host/diag.c"
#include "../../host/proc.c"
#include "../../host/proc_fd.c"
#include "../../host/worktree.c"

#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "tap.h"

static char tmp[PATH_MAX];      /* canonical scratch directory, outside any repository */
static char repo_git[PATH_MAX]; /* the common dir of tmp/repo */
static char self_comm[64];      /* our command line, as caller_place reports it */

/* tmp/rel as a path, in one of a few rotating buffers. */
static const char *at(const char *rel)
{
    static char buf[4][2 * PATH_MAX];
    static int i;

    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", tmp, rel);
    return buf[i];
}

static void put(const char *rel, const char *text)
{
    FILE *f = fopen(at(rel), "w");

    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(at(rel));
        exit(1);
    }
}

/* A connected TCP pair over loopback: *cfd the client, *afd the accepted
 * end. listen_family/addr is where the listener binds; connect_family the
 * client's. Returns 0, or -1 when the family is unavailable here. */
static int tcp_pair(int lfam, const char *laddr, int cfam, const char *caddr, int *cfd, int *afd)
{
    struct sockaddr_storage ss = {0};
    socklen_t len = sizeof ss;
    int lfd, off = 0;

    if ((lfd = socket(lfam, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        return -1;
    if (lfam == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
        s6->sin6_family = AF_INET6;
        inet_pton(AF_INET6, laddr, &s6->sin6_addr);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        inet_pton(AF_INET, laddr, &s4->sin_addr);
    }
    if (bind(lfd, (struct sockaddr *)&ss, sizeof ss) < 0 || listen(lfd, 4) < 0 ||
        getsockname(lfd, (struct sockaddr *)&ss, &len) < 0)
        goto fail;
    if (cfam != lfam) { /* an IPv4 client of a dual-stack listener */
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        in_port_t port = ((struct sockaddr_in6 *)&ss)->sin6_port;
        memset(&ss, 0, sizeof ss);
        s4->sin_family = AF_INET;
        s4->sin_port = port;
        inet_pton(AF_INET, caddr, &s4->sin_addr);
    }
    if ((*cfd = socket(cfam, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        goto fail;
    if (connect(*cfd, (struct sockaddr *)&ss, sizeof ss) < 0 ||
        (*afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0) {
        close(*cfd);
        goto fail;
    }
    close(lfd);
    return 0;
fail:
    close(lfd);
    return -1;
}

/* The client and server addresses of the connection accepted as afd. */
static void addrs(int afd, struct sockaddr_storage *peer, struct sockaddr_storage *local)
{
    socklen_t plen = sizeof *peer, llen = sizeof *local;

    if (getpeername(afd, (struct sockaddr *)peer, &plen) < 0 ||
        getsockname(afd, (struct sockaddr *)local, &llen) < 0)
        exit(1);
}

static void test_socket(struct host_diag *d, const char *what, int lfam, const char *laddr,
                        int cfam, const char *caddr)
{
    struct sockaddr_storage peer, local;
    struct sockaddr *p = (struct sockaddr *)&peer, *l = (struct sockaddr *)&local;
    unsigned long inode = 0;
    uid_t uid = (uid_t)-1;
    struct stat st;
    int cfd, afd;

    if (tcp_pair(lfam, laddr, cfam, caddr, &cfd, &afd) < 0) {
        tap_skip(what);
        return;
    }
    addrs(afd, &peer, &local);
    fstat(cfd, &st);
    is_int(host_diag_socket(d, p, l, &inode, &uid), 0, "%s: the client end is found", what);
    is_int((long long)inode, (long long)st.st_ino, "  its inode is the client fd's");
    is_int((long long)uid, (long long)getuid(), "  its uid is ours");
    is_int(host_diag_socket(d, l, p, &inode, &uid), 0, "  swapped, the server end is found");
    ok(inode != st.st_ino, "  which is another socket");
    host_diag_socket(d, p, l, &inode, &uid);
    ok(host_pid_socket_fd(getpid(), inode) >= 0, "  this process holds the client end");
    ok(host_pid_socket_fd(getppid(), inode) < 0, "  the parent process does not");
    close(cfd);
    is_int(host_diag_socket(d, p, l, &inode, &uid), -1,
           "  closed by the client: unknown (inode 0)");
    close(afd);
    is_int(host_diag_socket(d, p, l, &inode, &uid), -1, "  closed by both: unknown");
}

static void test_socket_misc(struct host_diag *d)
{
    struct sockaddr_in a = {.sin_family = AF_INET}, b;
    struct sockaddr unix_sa = {.sa_family = AF_UNIX};
    unsigned long inode;
    uid_t uid;

    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    b = a;
    a.sin_port = htons(1);
    b.sin_port = htons(2);
    is_int(host_diag_socket(d, (struct sockaddr *)&a, (struct sockaddr *)&b, &inode, &uid), -1,
           "no such connection: -1 (the kernel answers ENOENT)");
    is_int(host_diag_socket(d, &unix_sa, (struct sockaddr *)&b, &inode, &uid), -1,
           "not an IP address: -1");
}

/* A listener on 127.0.0.1 (or, dual, [::] taking IPv4 too) at port (0:
 * any); its fd, its port in *port and its inode in *ino. */
static int listen_on(int dual, int port, int *bound, unsigned long *ino)
{
    struct sockaddr_storage ss = {0};
    socklen_t len = sizeof ss;
    struct stat st;
    int one = 1, zero = 0;
    int fd = socket(dual ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (dual) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        a->sin6_addr = in6addr_any;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)port);
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    }
    if (fd < 0 || bind(fd, (struct sockaddr *)&ss, sizeof ss) < 0 || listen(fd, 4) < 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &len) < 0 || fstat(fd, &st) < 0)
        exit(1);
    *bound = ntohs(dual ? ((struct sockaddr_in6 *)&ss)->sin6_port
                        : ((struct sockaddr_in *)&ss)->sin_port);
    *ino = st.st_ino;
    return fd;
}

/* What the /__whoami gate asks: which listener takes connections to a
 * backend's address, and whether it is still the one it was. */
static void test_listener(struct host_diag *d)
{
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    unsigned long ino, want;
    uid_t uid;
    int port, again;

    int fd = listen_on(0, 0, &port, &want);
    to.sin_port = htons((uint16_t)port);
    is_int(host_diag_socket(d, (struct sockaddr *)&to, NULL, &ino, &uid), 0,
           "listener on 127.0.0.1: found from its address alone");
    is_int((long long)ino, (long long)want, "  its inode is the listening fd's");
    close(fd);
    is_int(host_diag_socket(d, (struct sockaddr *)&to, NULL, &ino, &uid), -1,
           "  closed: nobody listens, -1");
    fd = listen_on(0, port, &again, &want);
    is_int(host_diag_socket(d, (struct sockaddr *)&to, NULL, &ino, &uid), 0,
           "  another listener on the same port: found");
    is_int((long long)ino, (long long)want, "  with the new socket's inode");
    close(fd);
    fd = listen_on(1, 0, &port, &want);
    to.sin_port = htons((uint16_t)port);
    is_int(host_diag_socket(d, (struct sockaddr *)&to, NULL, &ino, &uid), 0,
           "a dual-stack [::] listener: found for 127.0.0.1");
    is_int((long long)ino, (long long)want, "  its inode is the listening fd's");
    close(fd);
}

/* Fork a child that enters dir (unless NULL) and waits to be killed.
 * keep: an fd the parent then closes, so that only the child holds it. */
static pid_t spawn(const char *dir, int keep, uid_t as)
{
    int ready[2];
    pid_t pid;
    char c = 0;

    if (pipe(ready) < 0 || (pid = fork()) < 0)
        exit(1);
    if (pid == 0) {
        close(ready[0]);
        if (dir && chdir(dir) < 0)
            _exit(1);
        /* Changing uid makes a process non-dumpable, which turns its /proc
         * entry root's; make it dumpable again, as a user's process is. */
        if (as != getuid() && (setuid(as) < 0 || prctl(PR_SET_DUMPABLE, 1) < 0))
            _exit(1);
        if (write(ready[1], &c, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(ready[1]);
    if (read(ready[0], &c, 1) != 1)
        exit(1);
    close(ready[0]);
    if (keep >= 0)
        close(keep);
    return pid;
}

static void reap(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void test_scan_all(void)
{
    unsigned long inode = 0;
    struct stat st;
    pid_t child;
    int cfd, afd;

    if (tcp_pair(AF_INET, "127.0.0.1", AF_INET, NULL, &cfd, &afd) < 0) {
        tap_skip("no IPv4 loopback");
        return;
    }
    fstat(cfd, &st);
    inode = st.st_ino;
    is_int(host_socket_holder(&inode, 1, getuid()), getpid(),
           "scan: this process holds its socket");
    child = spawn(NULL, cfd, getuid());
    is_int(host_socket_holder(&inode, 1, getuid()), child, "scan: the child that kept the socket");
    ok(host_pid_socket_fd(getpid(), inode) < 0, "  and no longer this process");
    is_int(host_socket_holder(&inode, 1, getuid() + 1), 0, "scan: only processes of the uid asked");
    reap(child);
    is_int(host_socket_holder(&inode, 1, getuid()), 0, "scan: nobody, once the child is gone");
    close(afd);
}

/* One pass finds every socket of a burst: two held here, one by a child
 * (which holds copies of ours too: the lowest holder, we, wins), one by
 * nobody; a pass limited to some pids reads only theirs. */
static void test_scan_batch(void)
{
    int cfd[3], afd[3];
    unsigned long inodes[4] = {0, 0, 0, 1}; /* inode 1: no socket has it */
    pid_t pids[4] = {0}, child;
    int fds[4] = {-1, -1, -1, -1};
    struct stat st;

    for (int i = 0; i < 3; i++) {
        if (tcp_pair(AF_INET, "127.0.0.1", AF_INET, NULL, &cfd[i], &afd[i]) < 0) {
            tap_skip("no IPv4 loopback");
            return;
        }
        fstat(cfd[i], &st);
        inodes[i] = st.st_ino;
    }
    int kept_fd = cfd[2];
    child = spawn(NULL, cfd[2], getuid()); /* the child keeps cfd[2]; we close ours */
    pid_t only[] = {getpid()};
    struct host_scope mine = {.only = only, .nonly = 1};
    struct host_scope young = {.after = child - 1, .upto = host_last_pid()}, all = {0};
    is_int((int)host_socket_holders(inodes, 4, getuid(), &mine, pids, fds), 2,
           "batch, only this process: its two sockets");
    is_int(pids[0], getpid(), "  the first is ours");
    is_int(fds[0], cfd[0], "  at its fd");
    is_int(pids[1], getpid(), "  the second is ours");
    is_int(pids[2], 0, "  the child's not looked for");
    ok(young.upto >= child, "the last pid handed out (%d) is the child's or later",
       (int)young.upto);
    is_int((int)host_socket_holders(inodes, 4, getuid(), &young, pids, fds), 1,
           "batch, the processes started since the child: the one still unfound");
    is_int(pids[2], child, "  held by the child");
    is_int(fds[2], kept_fd, "  at the number it had here before fork");
    is_int((int)host_socket_holders(inodes, 4, getuid(), &all, pids, fds), 0,
           "batch, all of /proc: nothing more");
    is_int(pids[3], 0, "  an inode nobody holds stays 0");
    reap(child);
    for (int i = 0; i < 3; i++) {
        if (i < 2)
            close(cfd[i]);
        close(afd[i]);
    }
}

static void *park(void *arg)
{
    char c;
    return read(*(int *)arg, &c, 1) < 0 ? arg : NULL; /* until the pipe closes */
}

/* Threads started after the range's start open as /proc/TID and share this
 * process's fd table, which the pass reads once for all of them: a socket
 * is still found, and reported as this process, not as a thread. */
static void test_scan_threads(void)
{
    int cfd, afd, pfd[2];
    pthread_t th[4];
    struct stat st;

    if (pipe(pfd) < 0 || tcp_pair(AF_INET, "127.0.0.1", AF_INET, NULL, &cfd, &afd) < 0) {
        tap_skip("no pipe or no IPv4 loopback");
        return;
    }
    pid_t before = host_last_pid();
    int started = 0;
    for (int i = 0; i < 4; i++)
        started += pthread_create(&th[i], NULL, park, &pfd[0]) == 0;
    fstat(cfd, &st);
    unsigned long inode = st.st_ino;
    pid_t pid = 0;
    int fd = -1;
    struct host_scope young = {.after = before, .upto = host_last_pid()};
    ok(started == 4 && young.upto > before, "4 threads started after pid %d", (int)before);
    is_int((int)host_socket_holders(&inode, 1, getuid(), &young, &pid, &fd), 1,
           "young range of threads only: the socket their process holds is found");
    is_int(pid, getpid(), "  reported as the process");
    is_int(fd, cfd, "  at its fd");
    close(pfd[1]);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    close(pfd[0]);
    close(cfd);
    close(afd);
}

static void is_worktree(const char *dir, const char *root, const char *common, const char *what)
{
    struct host_worktree w;

    is_int(host_worktree_of(dir, &w, NULL, 0), 0, "worktree of %s", what);
    is_str(w.root, root, "  root");
    is_str(w.common, common, "  common dir");
}

static void test_worktree_of(void)
{
    struct host_worktree w;

    is_worktree(at("repo"), at("repo"), repo_git, "the main checkout");
    is_worktree(at("repo/sub/deeper"), at("repo"), repo_git, "a subdirectory of it");
    is_worktree(at("wt-b"), at("wt-b"), repo_git, "a linked worktree: main's .git");
    is_worktree(at("wt-b/sub"), at("wt-b"), repo_git, "a subdirectory of a linked worktree");
    is_worktree(at("repo/.worktrees/wt-a"), at("repo/.worktrees/wt-a"), repo_git,
                "a worktree nested in the main checkout: itself");
    is_worktree(at("repo/.worktrees/wt-a/src"), at("repo/.worktrees/wt-a"), repo_git,
                "a subdirectory of a nested worktree: still it");
    is_worktree(at("repo/.claude/worktrees/x"), at("repo/.claude/worktrees/x"), repo_git,
                "a worktree under .claude/worktrees");
    is_worktree(at("repo/sub/../.worktrees/./wt-a"), at("repo/.worktrees/wt-a"), repo_git,
                "a path with .. and . is made canonical");
    is_worktree(at("link-to-wt-a"), at("repo/.worktrees/wt-a"), repo_git,
                "a symlink into a worktree is made canonical");
    is_worktree(at("rel"), at("rel"), repo_git, "a gitdir relative to the worktree");
    is_worktree(at("sm"), at("sm"), at("notes/.git"), "a gitdir without commondir: itself");
    is_int(host_worktree_of(at("outside"), &w, NULL, 0), -1,
           "a folder outside every repository: -1");
    is_int(host_worktree_of(at("repo/.worktrees/pruned"), &w, NULL, 0), -1,
           "a worktree whose gitdir is gone: -1, not the enclosing checkout");
    is_int(host_worktree_of(at("no-such-dir"), &w, NULL, 0), -1, "a missing folder: -1");
}

static int known_is(const char *worktree, const char *common_dir, void *arg)
{
    (void)worktree;
    return strcmp(common_dir, arg) == 0;
}

/* A shell started with WTPROXY_WORKTREE=wt-a in its environment, and its
 * child that went to / and dropped the variable (by exec: /proc/PID/environ
 * is the environment a process was started with, not its setenv()s).
 * Returns the child's pid; *parent the shell's. */
static pid_t spawn_env_chain(pid_t *parent)
{
    char env[PATH_MAX + 32], line[32], comm[32] = "", path[64];
    char *argv[] = {"sh", "-c", "(cd / && unset " ENV_NAME "; exec sleep 600) & echo $!; wait",
                    NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", env, NULL};
    int out[2];
    long pid;

    snprintf(env, sizeof env, ENV_NAME "=%s", at("repo/.worktrees/wt-a"));
    if (pipe(out) < 0 || (*parent = fork()) < 0)
        exit(1);
    if (*parent == 0) {
        dup2(out[1], 1);
        if (chdir(at("outside")) == 0)
            execve("/bin/sh", argv, envp);
        _exit(127);
    }
    close(out[1]);
    FILE *f = fdopen(out[0], "r");
    if (!f || !fgets(line, sizeof line, f) || (pid = strtol(line, NULL, 10)) <= 0)
        exit(1);
    fclose(f);
    /* Until it has exec'd sleep, the child still carries the shell's env;
     * and comm turns "sleep" before the new argv is readable, so wait for
     * the cmdline itself. */
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    for (int i = 0;
         i < 5000 && (read_line(path, comm, sizeof comm) < 0 || strcmp(comm, "sleep") != 0); i++)
        usleep(1000);
    return (pid_t)pid;
}

static void test_place(void)
{
    struct caller_place pl;
    pid_t child, sh, self = getpid();
    char none[] = "/nowhere";
    /* Our cwd is in no repository: only an ancestor's override places us,
     * and it would place every process below, too. */
    int env_above = caller_place(self, getuid(), known_is, none, &pl) == 0;

    child = spawn(at("wt-b/sub"), -1, getuid());
    is_int(caller_place(child, getuid(), known_is, repo_git, &pl), 0,
           "a child whose cwd is in a known worktree is placed");
    is_int(pl.pid, child, "  pid");
    is_int(pl.decided_by, child, "  decided by the child itself");
    is_int(pl.depth, 0, "  at depth 0");
    is_str(pl.how, "cwd", "  by its cwd");
    is_str(pl.worktree, at("wt-b"), "  worktree");
    is_str(pl.common_dir, repo_git, "  common dir");
    is_str(pl.cwd, at("wt-b/sub"), "  cwd");
    is_str(pl.comm, self_comm, "  comm: the command line it shares with us");
    is_int(host_pid_parent(child), self, "  its ppid, from /proc/PID/stat");
    if (env_above) {
        tap_skip("an ancestor of this test sets " ENV_NAME);
    } else {
        is_int(caller_place(child, getuid(), known_is, none, &pl), -1,
               "  not placed when its repository is unknown (nor are we, in tmp)");
        is_str(pl.worktree, "", "  and no worktree is reported");
    }
    reap(child);

    child = spawn_env_chain(&sh);
    is_int(caller_place(child, getuid(), known_is, none, &pl), 0,
           "a child of a process with " ENV_NAME " is placed");
    is_int(pl.decided_by, sh, "  decided by the parent");
    is_int(pl.depth, 1, "  at depth 1");
    is_str(pl.how, "env", "  by its environment, with no known() check");
    is_str(pl.worktree, at("repo/.worktrees/wt-a"), "  the worktree named");
    is_str(pl.cwd, "/", "  the child's cwd is reported");
    has_str(pl.comm, "sleep", "  the child's command is reported");
    reap(child);
    reap(sh);

    if (chdir(at("wt-b")) < 0)
        exit(1);
    child = spawn(at("notes"), -1, getuid());
    is_int(caller_place(child, getuid(), known_is, repo_git, &pl), 0,
           "a cwd in an unknown repository does not stop the walk");
    is_int(pl.decided_by, self, "  the parent, in a known worktree, decides");
    is_int(pl.depth, 1, "  at depth 1");
    is_str(pl.how, "cwd", "  by its cwd");
    is_str(pl.worktree, at("wt-b"), "  its worktree");
    reap(child);
    if (chdir(tmp) < 0)
        exit(1);

    child = spawn(at("outside"), -1, getuid());
    if (env_above) {
        tap_skip("an ancestor of this test sets " ENV_NAME);
    } else {
        is_int(caller_place(child, getuid(), known_is, repo_git, &pl), -1,
               "a child outside every worktree, no env, up to pid 1: -1");
        is_int(pl.decided_by, 0, "  decided by nobody");
        is_str(pl.cwd, at("outside"), "  its cwd still reported");
        is_str(pl.comm, self_comm, "  and its command");
    }
    reap(child);

    is_int(caller_place(1, getuid(), known_is, repo_git, &pl), -1, "pid 1 is never walked");
    if (getuid() != 0) {
        tap_skip("another uid's process: needs root");
        return;
    }
    child = spawn(at("wt-b"), -1, 65534);
    is_int(caller_place(child, 0, known_is, repo_git, &pl), -1,
           "a process of another uid stops the walk");
    is_int(caller_place(child, 65534, known_is, repo_git, &pl), 0, "  its own uid places it");
    reap(child);
}

static void test_cmdline(void)
{
    char buf[8];

    host_pid_cmdline(getpid(), buf, sizeof buf);
    is_int((long long)strlen(buf), 7, "a long command line is cut to the buffer");
    host_pid_cmdline(0, buf, sizeof buf);
    is_str(buf, "", "an unreadable one is empty");
}

/* The scratch tree: tmp/repo with worktrees wt-b (beside it), .worktrees/
 * wt-a and .claude/worktrees/x (nested), a pruned one, hand-made .git
 * files (a relative gitdir, a submodule-like gitdir), tmp/notes (another
 * repository) and tmp/outside. */
static int make_tree(void)
{
    char cmd[4 * PATH_MAX];

    snprintf(cmd, sizeof cmd,
             "set -e; cd '%s'; g='git -c init.defaultBranch=main -c user.name=t "
             "-c user.email=t@t'; $g init -q repo; $g init -q notes; cd repo; "
             "$g commit -q --allow-empty -m init; $g worktree add -q ../wt-b; "
             "$g worktree add -q .worktrees/wt-a; $g worktree add -q .claude/worktrees/x; "
             "$g worktree add -q .worktrees/pruned; rm -rf .git/worktrees/pruned; "
             "mkdir -p sub/deeper ../wt-b/sub .worktrees/wt-a/src ../outside ../rel ../sm; "
             "ln -s repo/.worktrees/wt-a ../link-to-wt-a",
             tmp);
    if (system(cmd) != 0)
        return -1;
    put("rel/.git", "gitdir: ../repo/.git/worktrees/wt-b\n");
    put("sm/.git", "gitdir: ../notes/.git\n");
    snprintf(repo_git, sizeof repo_git, "%s", at("repo/.git"));
    return 0;
}

int main(int argc, char **argv)
{
    char err[256], cmd[PATH_MAX + 16], templ[] = "/tmp/test_caller.XXXXXX";
    struct host_diag *d;

    (void)argc;
    /* The placement checks expect no override of our own: drop it from
     * the environment this process was started with. */
    if (getenv(ENV_NAME)) {
        unsetenv(ENV_NAME);
        execv("/proc/self/exe", argv);
        return 1;
    }
    host_pid_cmdline(getpid(), self_comm, sizeof self_comm);
    if (!mkdtemp(templ) || !realpath(templ, tmp) || chdir(tmp) < 0)
        return 1;
    if (!(d = host_diag_open(err, sizeof err))) {
        printf("# %s\n", err);
        ok(0, "host_diag_open");
        return done_testing();
    }
    test_socket(d, "IPv4 127.0.0.1", AF_INET, "127.0.0.1", AF_INET, NULL);
    test_socket(d, "IPv6 ::1", AF_INET6, "::1", AF_INET6, NULL);
    test_socket(d, "IPv4 client of a dual-stack listener (::ffff:127.0.0.1)", AF_INET6,
                "::ffff:127.0.0.1", AF_INET, "127.0.0.1");
    test_socket_misc(d);
    test_listener(d);
    host_diag_close(d);
    test_scan_all();
    test_scan_batch();
    test_scan_threads();
    test_cmdline();
    if (make_tree() < 0) {
        tap_skip("git cannot make the test repositories");
    } else {
        test_worktree_of();
        test_place();
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        ok(0, "remove %s", tmp);
    return done_testing();
}
