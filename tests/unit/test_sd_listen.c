/* test_sd_listen.c - proxy/sd_listen.c: the LISTEN_PID / LISTEN_FDS /
 * LISTEN_FDNAMES arithmetic (another pid, garbage, too many, names that do
 * not match the count), the check of each inherited fd against real fds (a
 * listening TCP socket on IPv4 and IPv6, a listening Unix socket, a pipe, a
 * bound but not listening socket, UDP, Unix sockets of other kinds, a closed
 * fd), and the whole hand-over with sockets really placed at fd 3..:
 * variables unset, close-on-exec and non-blocking set, the Unix socket split
 * off as the control socket. Includes the .c to reach its statics. */
#include "../../proxy/sd_listen.c"

#include <arpa/inet.h>
#include <sys/un.h>

#include "tap.h"

#define SELF 4242L

static struct proxy_sd_socket socks[WTP_SD_MAX_FDS];
static struct proxy_sd_socket control;
static char note[256], err[1024];

static int parse(const char *pid, const char *fds, const char *names)
{
    err[0] = '\0';
    return parse_env(pid, fds, names, SELF, socks, WTP_SD_MAX_FDS, note, sizeof note, err,
                     sizeof err);
}

static void test_parse_env(void)
{
    is_int(parse(NULL, NULL, NULL), 0, "no variables: no activation");
    is_str(note, "", "  and nothing to say");
    is_int(parse(NULL, "2", NULL), 0, "LISTEN_FDS without LISTEN_PID: ignored");
    has_str(note, "without LISTEN_PID", "  and the note says so");
    is_int(parse("4243", "2", NULL), 0, "LISTEN_PID of another process: ignored");
    has_str(note, "LISTEN_PID=4243 is another process (this is 4242)", "  note names both pids");
    is_int(parse("4242", NULL, NULL), 0, "our LISTEN_PID without LISTEN_FDS: none");
    is_int(parse("4242", "0", NULL), 0, "LISTEN_FDS=0: none");
    is_int(parse("4242", "2", NULL), 2, "LISTEN_FDS=2: two sockets");
    is_int(socks[0].fd, 3, "  the first is fd 3");
    is_int(socks[1].fd, 4, "  the second fd 4");
    is_str(socks[1].name, "", "  no names given: none");
    is_int(parse("4242", "32", NULL), 32, "LISTEN_FDS at the limit (%d)", WTP_SD_MAX_FDS);
    is_int(parse("4242", "33", NULL), -1, "LISTEN_FDS over the limit: refused");
    has_str(err, "at most 32 sockets", "  err says the limit");
    is_int(parse("abc", "1", NULL), -1, "LISTEN_PID not a number: refused");
    has_str(err, "unset LISTEN_PID LISTEN_FDS LISTEN_FDNAMES", "  err says how to start without");
    is_int(parse("0", "1", NULL), -1, "LISTEN_PID=0: refused");
    is_int(parse("-4242", "1", NULL), -1, "LISTEN_PID with a sign: refused");
    is_int(parse("4242 ", "1", NULL), -1, "LISTEN_PID with a trailing space: refused");
    is_int(parse("4242", "x", NULL), -1, "LISTEN_FDS not a number: refused");
    has_str(err, "LISTEN_FDS=\"x\"", "  err quotes it");
    is_int(parse("4242", "99999999999999999999", NULL), -1, "LISTEN_FDS overflowing: refused");
}

static void test_names(void)
{
    is_int(parse("4242", "2", "wtproxy.socket:v6"), 2, "two fds, two names");
    is_str(socks[0].name, "wtproxy.socket", "  first name");
    is_str(socks[1].name, "v6", "  second name");
    is_int(parse("4242", "3", "a:b"), 3, "three fds, two names");
    is_str(socks[0].name, "", "  names not matching the count are not used");
    is_int(parse("4242", "2", ":b"), 2, "an empty name");
    is_str(socks[0].name, "", "  stays empty");
    is_str(socks[1].name, "b", "  the next is read");
    char longname[200];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    is_int(parse("4242", "1", longname), 1, "a 199-byte name");
    is_int((long long)strlen(socks[0].name), (long long)sizeof socks[0].name - 1,
           "  is cut to the buffer");
}

/* A socket of family/type, bound to loopback port 0; listening if asked. */
static int tcp_socket(int family, int type, int listening)
{
    int fd = socket(family, type, 0);
    struct sockaddr_in in4 = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    int r = family == AF_INET ? bind(fd, (struct sockaddr *)&in4, sizeof in4)
                              : bind(fd, (struct sockaddr *)&in6, sizeof in6);
    if (r < 0) {
        close(fd);
        return -1;
    }
    if (listening)
        listen(fd, 8);
    return fd;
}

static char unix_path[64];

/* A Unix socket of type bound to unix_path (replaced); listening if asked. */
static int unix_socket(int type, int listening)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    snprintf(unix_path, sizeof unix_path, "/tmp/wtp-sd-test-%d.sock", (int)getpid());
    unlink(unix_path);
    snprintf(un.sun_path, sizeof un.sun_path, "%s", unix_path);
    int fd = socket(AF_UNIX, type, 0);
    bind(fd, (struct sockaddr *)&un, sizeof un);
    if (listening)
        listen(fd, 8);
    return fd;
}

/* check_fd on fd: its result, err in the global. */
static int check(int fd)
{
    struct proxy_sd_socket s = {.fd = fd};
    snprintf(s.name, sizeof s.name, "wtproxy.socket");
    err[0] = '\0';
    return check_fd(&s, err, sizeof err);
}

static void test_check_fd(void)
{
    int fd = tcp_socket(AF_INET, SOCK_STREAM, 1);
    is_int(check(fd), 0, "a listening TCP socket on 127.0.0.1 is taken");
    ok(fcntl(fd, F_GETFL) & O_NONBLOCK, "  and made non-blocking");
    struct proxy_sd_socket s = {.fd = fd};
    check_fd(&s, err, sizeof err);
    is_int(s.addr.ss_family, AF_INET, "  its address is read");
    ok(ntohs(((struct sockaddr_in *)&s.addr)->sin_port) > 0, "  with its port");
    close(fd);

    fd = tcp_socket(AF_INET6, SOCK_STREAM, 1);
    if (fd < 0) {
        tap_skip("no IPv6 loopback here");
    } else {
        is_int(check(fd), 0, "a listening TCP socket on ::1 is taken");
        close(fd);
    }

    fd = tcp_socket(AF_INET, SOCK_STREAM, 0);
    is_int(check(fd), -1, "a bound TCP socket that is not listening is refused");
    has_str(err, "fd ", "  err names the fd");
    has_str(err, "(wtproxy.socket)", "  and its name");
    has_str(err, "not listening", "  and what it is");
    has_str(err, "Accept=no", "  and the fix");
    close(fd);

    fd = tcp_socket(AF_INET, SOCK_DGRAM, 0);
    is_int(check(fd), -1, "a UDP socket is refused");
    has_str(err, "a UDP socket", "  err says UDP");
    close(fd);

    int p[2];
    if (pipe(p) == 0) {
        is_int(check(p[0]), -1, "a pipe is refused");
        has_str(err, "a pipe", "  err says pipe");
        close(p[0]);
        close(p[1]);
    }

    fd = unix_socket(SOCK_STREAM, 1);
    is_int(check(fd), 0, "a listening Unix socket with a path is taken (the control socket)");
    close(fd);
    fd = unix_socket(SOCK_STREAM, 0);
    is_int(check(fd), -1, "a Unix socket that is not listening is refused");
    has_str(err, "a Unix socket that is not listening", "  err says so");
    close(fd);
    fd = unix_socket(SOCK_DGRAM, 0);
    is_int(check(fd), -1, "a Unix datagram socket is refused");
    has_str(err, "a Unix datagram socket", "  err says so");
    close(fd);
    unlink(unix_path);

    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    /* Linux's abstract namespace: a socket no path names. */
    snprintf(un.sun_path + 1, sizeof un.sun_path - 1, "wtp-sd-test-%d", (int)getpid());
    bind(fd, (struct sockaddr *)&un, sizeof un);
    listen(fd, 8);
    is_int(check(fd), -1, "an abstract Unix socket is refused");
    has_str(err, "without a path", "  err says it has no path");
    close(fd);

    fd = open("/dev/null", O_RDONLY);
    is_int(check(fd), -1, "/dev/null is refused");
    has_str(err, "character device", "  err says what it is");
    is_int(check(fd + 100), -1, "a closed fd is refused");
    has_str(err, "not open", "  err says not open");
    close(fd);
}

/* Move fd to target (which it may already be). */
static void place(int fd, int target)
{
    if (fd != target) {
        dup2(fd, target);
        close(fd);
    }
}

/* The whole hand-over, with a listening socket really at fd 3. */
static void test_listen_fds(void)
{
    char pid[32];
    place(tcp_socket(AF_INET, SOCK_STREAM, 1), 3);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    setenv("LISTEN_PID", pid, 1);
    setenv("LISTEN_FDS", "1", 1);
    setenv("LISTEN_FDNAMES", "wtproxy.socket", 1);
    int n =
        proxy_sd_listen_fds(socks, WTP_SD_MAX_FDS, &control, note, sizeof note, err, sizeof err);
    is_int(n, 1, "a socket at fd 3 for this pid is taken (%s)", err);
    is_str(socks[0].name, "wtproxy.socket", "  with its name");
    is_int(control.fd, -1, "  no control socket came");
    ok(!getenv("LISTEN_PID") && !getenv("LISTEN_FDS") && !getenv("LISTEN_FDNAMES"),
       "  the three variables are unset");
    ok(fcntl(3, F_GETFD) & FD_CLOEXEC, "  fd 3 is close-on-exec");
    ok(fcntl(3, F_GETFL) & O_NONBLOCK, "  and non-blocking");

    /* A control socket between two TCP ones: split off, the rest in order. */
    place(unix_socket(SOCK_STREAM, 1), 4);
    place(tcp_socket(AF_INET, SOCK_STREAM, 1), 5);
    setenv("LISTEN_PID", pid, 1);
    setenv("LISTEN_FDS", "3", 1);
    setenv("LISTEN_FDNAMES", "a:control:b", 1);
    n = proxy_sd_listen_fds(socks, WTP_SD_MAX_FDS, &control, note, sizeof note, err, sizeof err);
    is_int(n, 2, "TCP, Unix, TCP: two fronts (%s)", err);
    ok(socks[0].fd == 3 && socks[1].fd == 5 && !strcmp(socks[1].name, "b"),
       "  fds 3 and 5, in order");
    is_int(control.fd, 4, "  fd 4 is the control socket");
    is_str(((struct sockaddr_un *)&control.addr)->sun_path, unix_path, "  with its path");

    place(unix_socket(SOCK_STREAM, 1), 5);
    setenv("LISTEN_PID", pid, 1);
    setenv("LISTEN_FDS", "3", 1);
    n = proxy_sd_listen_fds(socks, WTP_SD_MAX_FDS, &control, note, sizeof note, err, sizeof err);
    is_int(n, -1, "two Unix sockets: refused");
    has_str(err, "fd 4 and fd 5 passed by socket activation (LISTEN_FDS) are both Unix sockets",
            "  err names both");
    close(4);
    close(5);
    unlink(unix_path);

    setenv("LISTEN_PID", "1", 1);
    setenv("LISTEN_FDS", "1", 1);
    fcntl(3, F_SETFD, 0);
    n = proxy_sd_listen_fds(socks, WTP_SD_MAX_FDS, &control, note, sizeof note, err, sizeof err);
    is_int(n, 0, "sockets for pid 1 are not taken");
    ok(!getenv("LISTEN_PID") && !getenv("LISTEN_FDS"), "  the variables are unset all the same");
    is_int(fcntl(3, F_GETFD) & FD_CLOEXEC, 0, "  and fd 3, not ours, is left as it was");
    close(3);

    setenv("LISTEN_PID", pid, 1);
    setenv("LISTEN_FDS", "1", 1);
    n = proxy_sd_listen_fds(socks, WTP_SD_MAX_FDS, &control, note, sizeof note, err, sizeof err);
    is_int(n, -1, "LISTEN_FDS=1 with fd 3 closed: refused");
    has_str(err, "fd 3", "  err names fd 3");
    has_str(err, "not open", "  and says it is not open");
}

int main(void)
{
    test_parse_env();
    test_names();
    test_check_fd();
    test_listen_fds();
    return done_testing();
}
