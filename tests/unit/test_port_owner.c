/* test_port_owner.c - host/port_owner.c (with host/proc_fd.c, host/proc.c)
 * and the sentence of proxy/port_taken.c: the /proc/net/tcp line parser
 * and cmdline cleaning, a fake /proc tree (a known holder, a socket with no
 * visible holder, a forking server), and the real /proc with this test's
 * own listening socket; another user's socket in words
 * (proxy/port_stranger.c) and its question to a socket, "are you a
 * wtproxy daemon?", asked of real listeners. Includes the .c files to
 * reach their statics. */
#include "../../host/clock.c"
#include "../../host/port_owner.c"
#include "../../host/proc.c"
#include "../../host/proc_fd.c"
#include "../../proxy/port_stranger.c"
#include "../../proxy/port_taken.c"

#include <arpa/inet.h>
#include <ftw.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "tap.h"

static void test_parse_tcp_line(void)
{
    static const struct {
        const char *line;
        int port, want;
        unsigned long inode;
    } cases[] = {
        {"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
         "timeout inode",
         8000, 0, 0},
        {"   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 "
         "       0 41276 1 0000000000000000 100 0 0 10 0",
         8000, 1, 41276},
        {"   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 "
         "       0 41276 1 0000000000000000 100 0 0 10 0",
         8001, 0, 0},
        {"   1: 0100007F:1F40 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000  1000 "
         "       0 41277 1 0000000000000000 20 4 30 10 -1",
         8000, -1, 0},
        {"   1: 0100007F:1F40 0100007F:D2F0 03 00000000:00000000 00:00000000 00000000  1000 "
         "       0 0 1 0000000000000000 20 4 30 10 -1",
         8000, 0, 0},
        {"   0: 00000000000000000000000001000000:1F40 00000000000000000000000000000000:0000 0A "
         "00000000:00000000 00:00000000 00000000  1000        0 52001 1 0000000000000000 100 0 0 "
         "10 0",
         8000, 1, 52001},
        {"   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 "
         "       0 0 1",
         8000, 0, 0},
        {"   0: 0100007F:1F4G 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 7", 8000,
         0, 0},
        {"   0: 0100007F:1F40 00000000:0000 0A", 8000, 0, 0},
        {"", 8000, 0, 0},
        /* port 0: any port's listener, its port told back */
        {"   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 "
         "       0 41276 1 0000000000000000 100 0 0 10 0",
         0, 1, 41276},
    };
    char line[512];
    unsigned long inode;
    uid_t uid;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int port = cases[i].port;
        snprintf(line, sizeof line, "%s\n", cases[i].line);
        inode = 0;
        is_int(parse_tcp_line(line, &port, &inode, &uid), cases[i].want,
               "tcp line %zu, port %d: %s", i, cases[i].port,
               cases[i].want > 0 ? "listening"
               : cases[i].want   ? "past the listeners"
                                 : "skipped");
        if (cases[i].want > 0) {
            is_int((long long)inode, (long long)cases[i].inode, "  inode");
            is_int(port, 8000, "  its port");
            is_int((long long)uid, 1000, "  its owner's uid");
        }
    }
}

static void test_clean_cmdline(void)
{
    char buf[32];

    memcpy(buf, "python3\0-m\0http.server\0008000", 28); /* as the kernel has it */
    clean_cmdline(buf, 28, sizeof buf, 0);
    is_str(buf, "python3 -m http.server 8000", "NULs become spaces, trailing one dropped");
    memcpy(buf, "a\tb\x1b[31m\0", 10);
    clean_cmdline(buf, 10, sizeof buf, 0);
    is_str(buf, "a?b?[31m", "control characters cannot reach the terminal");
    memset(buf, 'x', sizeof buf - 1);
    clean_cmdline(buf, sizeof buf - 1, sizeof buf, 1);
    is_int((long long)strlen(buf), sizeof buf - 1, "a long cmdline fills the buffer");
    is_str(buf + sizeof buf - 4, "...", "  and ends in ...");
    clean_cmdline(buf, 0, sizeof buf, 0);
    is_str(buf, "", "an unreadable cmdline is empty");
}

static void put(const char *dir, const char *name, const char *data, size_t len)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!(f = fopen(path, "w")) || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static void mk(const char *dir, const char *name, const char *link_target)
{
    char path[512];

    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (link_target ? symlink(link_target, path) : mkdir(path, 0700)) {
        perror(path);
        exit(1);
    }
}

static int rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* A fake /proc: port 8000 held by pid 17 (and its child 18), port 8001 by
 * nobody we can see, port 8002 (IPv6 only) by pid 21 with nothing else
 * readable; pid 9 holds other files. */
static void test_fake_proc(void)
{
    char dir[] = "/tmp/wtp-test-proc-XXXXXX", msg[1024];
    static const char *dirs[] = {"net",   "9",  "9/fd",  "17",   "17/fd",  "18",
                                 "18/fd", "21", "21/fd", "self", "self/fd"};
    const char *tcp_head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
                           "retrnsmt   uid  timeout inode\n";
    struct host_port_owner o;
    char tcp[1024], longcmd[600];

    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        mk(dir, dirs[i], NULL);
    snprintf(tcp, sizeof tcp,
             "%s   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000 "
             "1000 0 700 1\n   1: 0100007F:1F41 00000000:0000 0A 00000000:00000000 00:00000000 "
             "00000000 %ld 0 701 1\n   4: 0100007F:1F44 00000000:0000 0A 00000000:00000000 "
             "00:00000000 00000000 1000 0 705 1\n"
             "   2: 0100007F:1F40 0100007F:D2F0 01 00000000:00000000 "
             "00:00000000 00000000 1000 0 703 1\n   3: 0100007F:1F43 00000000:0000 0A "
             "00000000:00000000 00:00000000 00000000 1000 0 704 1\n",
             tcp_head, (long)geteuid());
    put(dir, "net/tcp", tcp, strlen(tcp));
    snprintf(tcp, sizeof tcp,
             "%s   0: 00000000000000000000000001000000:1F42 00000000000000000000000000000000:0000 "
             "0A 00000000:00000000 00:00000000 00000000 1000 0 702 1\n",
             tcp_head);
    put(dir, "net/tcp6", tcp, strlen(tcp));
    mk(dir, "9/fd/0", "/dev/null");
    mk(dir, "9/fd/1", "socket:[7000]");
    mk(dir, "17/fd/0", "/dev/null");
    mk(dir, "17/fd/3", "socket:[700]");
    put(dir, "17/cmdline", "python3\0-m\0http.server\0008000", 28);
    mk(dir, "17/cwd", "/home/dev/wt-a");
    mk(dir, "18/fd/3", "socket:[700]");
    mk(dir, "21/fd/5", "socket:[702]");
    mk(dir, "21/fd/6", "socket:[704]");
    mk(dir, "30", NULL);
    mk(dir, "30/fd", NULL);
    mk(dir, "30/fd/7", "socket:[705]");
    memset(longcmd, 'a', sizeof longcmd);
    put(dir, "30/cmdline", longcmd, sizeof longcmd);
    mk(dir, "self/fd/5", "socket:[702]");
    host_proc_dir = dir;

    is_int(host_port_owner_find(8000, &o), 1, "fake: port 8000 has a listener");
    is_int(o.pid, 17, "  held by pid 17, the parent of 18");
    ok(o.nholders == 2 && o.holders[0] == 17 && o.holders[1] == 18,
       "  and by 18, which shares its socket: both hold the port");
    is_str(o.cmdline, "python3 -m http.server 8000", "  its cmdline");
    is_str(o.cwd, "/home/dev/wt-a", "  its cwd");
    proxy_port_taken("127.0.0.1", 8000, NULL, 0, msg, sizeof msg);
    is_str(msg,
           "port 8000 on 127.0.0.1 is already in use by pid 17 (python3 -m http.server "
           "8000), cwd /home/dev/wt-a, and by 1 more process sharing its socket; stop them all "
           "with `kill 17 18`, or serve another port: wtproxy serve --listen 8003",
           "  described as in RELAY.md, every holder in its kill (PHP's workers outlive 17), the "
           "port offered the first free one (8001, 8002 held)");
    proxy_port_kill(&o, 1, msg, sizeof msg);
    is_str(msg, "kill 17 18 && for p in 17 18; do tail --pid=$p -f /dev/null; done",
           "  the kill that waits, as doctor prints it, waits for each");

    is_int(host_port_owner_find(8001, &o), 1, "fake: port 8001 has a listener");
    is_int(o.pid, 0, "  but no process we can see");
    is_int((long long)o.uid, (long long)geteuid(), "  though it is this user's");
    proxy_port_taken("127.0.0.1", 8001, NULL, 0, msg, sizeof msg);
    is_str(msg,
           "port 8001 on 127.0.0.1 is already in use by a process this user cannot see; "
           "find it with `ss -ltnp 'sport = :8001'` (as root to see every process), or "
           "serve another port: wtproxy serve --listen 8003",
           "  described as unseen (another pid namespace: its uid is no news)");

    is_int(host_port_owner_find(8002, &o), 1, "fake: port 8002 from tcp6");
    is_int(o.pid, 21, "  held by pid 21 (\"self\" is not a pid)");
    is_int(o.nholders, 1, "  alone");
    proxy_port_kill(&o, 1, msg, sizeof msg);
    is_str(msg, "kill 21 && tail --pid=21 -f /dev/null", "  its kill that waits: one tail");
    ok(o.cmdline[0] == '\0' && o.cwd[0] == '\0', "  whose cmdline and cwd are unreadable");
    proxy_port_taken("::1", 8002, NULL, 0, msg, sizeof msg);
    is_str(msg,
           "port 8002 on ::1 is already in use by pid 21; stop it with `kill 21`, or serve "
           "another port: wtproxy serve --listen 8003",
           "  described without them");
    proxy_port_taken("::1", 8002, (int[]){8002, 8003, 8005}, 3, msg, sizeof msg);
    has_str(msg, "serve another port: wtproxy serve --listen 8006",
            "  never a port it serves besides (another front of its .wtproxy), nor a held one");

    is_int(host_port_owner_find(8004, &o), 1, "fake: port 8004 has a listener");
    ok(strlen(o.cmdline) == sizeof o.cmdline - 1 && strstr(o.cmdline, "aaa..."),
       "  whose long cmdline fills the field, marked cut");
    proxy_port_taken("127.0.0.1", 8004, NULL, 0, msg, 1024);
    has_str(msg, "; stop it with `kill 30`, or serve another port: wtproxy serve --listen 8005",
            "  and the hints still fit in 1 KiB");

    is_int(host_port_owner_find(8003, &o), 0,
           "fake: reading stops at the first line past the listeners");
    struct host_listener l[8];
    size_t n = host_tcp_listeners(l, 8);
    is_int((long long)n, 4, "fake: 4 listeners, the tcp6 one after tcp's 3 before the end");
    ok(n == 4 && l[0].port == 8000 && l[0].inode == 700 && l[1].port == 8001 && l[2].port == 8004 &&
           l[2].inode == 705 && l[3].port == 8002 && l[3].inode == 702,
       "  each with its port and inode, in the files' order");
    is_int((long long)host_tcp_listeners(l, 2), 2, "  at most as many as asked for");
    proxy_port_taken(NULL, 65535, NULL, 0, msg, sizeof msg);
    has_str(msg, "port 65535 is already", "no address: none named");
    has_str(msg, "--listen 65534", "  and the port below 65535 is suggested");

    host_proc_dir = "/proc";
    nftw(dir, rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* A TCP socket on the loopback of family, port chosen by the kernel,
 * listening or only bound; its port goes to *port. -1 when the family is
 * unavailable. */
static int loopback_socket(int family, int listening, int *port)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
    socklen_t len = family == AF_INET ? sizeof *sin : sizeof *sin6;
    int fd = socket(family, SOCK_STREAM, 0);

    ss.ss_family = (sa_family_t)family;
    if (family == AF_INET)
        sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else
        sin6->sin6_addr = in6addr_loopback;
    if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) < 0 || (listening && listen(fd, 4) < 0) ||
        getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(family == AF_INET ? sin->sin_port : sin6->sin6_port);
    return fd;
}

static void test_real_proc(void)
{
    struct host_port_owner o;
    char cwd[4096], msg[8192], want[64];
    int port, bound_port, fd = loopback_socket(AF_INET, 1, &port);
    int bound = loopback_socket(AF_INET, 0, &bound_port), fd6, port6, client;

    if (!ok(fd >= 0 && bound >= 0 && getcwd(cwd, sizeof cwd), "loopback sockets and cwd"))
        return;
    client = socket(AF_INET, SOCK_STREAM, 0);
    ok(connect(client,
               (struct sockaddr *)&(struct sockaddr_in){.sin_family = AF_INET,
                                                        .sin_port = htons((uint16_t)port),
                                                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)},
               sizeof(struct sockaddr_in)) == 0,
       "a client connects (its sockets share the port)");
    is_int(host_port_owner_find(port, &o), 1, "our listener on 127.0.0.1:%d is found", port);
    is_int(o.pid, getpid(), "  held by this process");
    is_str(o.cwd, cwd, "  with our cwd");
    has_str(o.cmdline, "test_port_owner", "  and our cmdline");
    proxy_port_taken("127.0.0.1", port, NULL, 0, msg, sizeof msg);
    snprintf(want, sizeof want, "in use by pid %ld (", (long)getpid());
    has_str(msg, want, "  described with our pid");
    is_int(host_port_owner_find(bound_port, &o), 0,
           "a bound socket that does not listen is no owner");
    close(bound);
    is_int(host_port_owner_find(bound_port, &o), 0, "a port nothing listens on has no owner");
    close(client);
    close(fd);
    is_int(host_port_owner_find(port, &o), 0, "a closed listener has no owner");

    fd6 = loopback_socket(AF_INET6, 1, &port6);
    if (fd6 < 0) {
        tap_skip("no IPv6 loopback");
        return;
    }
    is_int(host_port_owner_find(port6, &o), 1, "our listener on [::1]:%d is found", port6);
    is_int(o.pid, getpid(), "  held by this process");
    close(fd6);
}

/* Another user's socket in words: its user, or its uid alone, and a
 * wtproxy daemon named as one with its user's own stop. */
static void test_stranger_words(void)
{
    struct proxy_port_stranger daemon = {1001, "alice", 4242}, process = {1001, "alice", 0},
                               nameless = {65533, "", 0};
    char buf[1024];

    proxy_port_stranger_who(&daemon, buf, sizeof buf);
    is_str(buf, "user alice's wtproxy daemon (uid 1001, pid 4242)", "a daemon: whose, and its pid");
    proxy_port_stranger_fix(&daemon, 8420, "SERVE", "TESTS", buf, sizeof buf);
    is_str(buf, "as alice: wtproxy stop --daemon; or serve a port of your own: SERVE, and TESTS",
           "  stopped by its user, or a port of one's own");
    proxy_port_stranger_who(&process, buf, sizeof buf);
    is_str(buf, "a process of user alice (uid 1001)", "a process: whose");
    proxy_port_stranger_fix(&process, 8420, "SERVE", "TESTS", buf, sizeof buf);
    is_str(buf,
           "ask alice to stop it (root sees which: sudo ss -ltnp 'sport = :8420'); or serve a "
           "port of your own: SERVE, and TESTS",
           "  its user asked, root's look named");
    proxy_port_stranger_who(&nameless, buf, sizeof buf);
    is_str(buf, "a process of uid 65533", "a uid with no passwd entry: the uid alone");
    nameless.daemon_pid = 7;
    proxy_port_stranger_who(&nameless, buf, sizeof buf);
    is_str(buf, "the wtproxy daemon of uid 65533 (pid 7)", "  and as a daemon");
}

/* A listener on 127.0.0.1 whose one connection a child answers with
 * reply (NULL: never answers, holding it open). Returns the child's pid
 * and the port in *port, or -1. */
static pid_t answering(const char *reply, int *port)
{
    int fd = loopback_socket(AF_INET, 1, port), c;
    char req[1024];
    pid_t pid;

    if (fd < 0 || (pid = fork()) < 0)
        return -1;
    if (pid == 0) {
        if ((c = accept(fd, NULL, NULL)) >= 0 && read(c, req, sizeof req) > 0 && reply) {
            if (write(c, reply, strlen(reply)) < 0)
                _exit(1);
            close(c);
        }
        if (!reply)
            pause();
        _exit(0);
    }
    close(fd);
    return pid;
}

/* The question "are you a wtproxy daemon?" asked of real sockets. */
static void test_probe(void)
{
    int port, status;
    long long t0;
    pid_t child = answering("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"
                            "{\"version\": \"1.0\", \"pid\": 4242, \"fronts\": [8420]}",
                            &port);

    if (!ok(child > 0, "a listener answering as a daemon"))
        return;
    is_int(probe_daemon("127.0.0.1", port), 4242, "  is a daemon, with the pid it says");
    waitpid(child, &status, 0);
    child = answering("HTTP/1.1 404 Not Found\r\n\r\n{\"pid\": 1}", &port);
    is_int(probe_daemon(NULL, port), 0, "a 404 is no daemon");
    waitpid(child, &status, 0);
    child = answering(NULL, &port);
    t0 = host_mono_ms();
    is_int(probe_daemon("127.0.0.1", port), 0, "one that never answers is no daemon");
    ok(host_mono_ms() - t0 < WTP_STRANGER_PROBE_MS + 400, "  said within the probe's bound");
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    is_int(probe_daemon("127.0.0.1", port), 0, "nothing listening: no daemon");
}

int main(void)
{
    test_parse_tcp_line();
    test_clean_cmdline();
    test_fake_proc();
    test_real_proc();
    test_stranger_words();
    test_probe();
    return done_testing();
}
