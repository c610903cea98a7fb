/* run_ready.c - when `wtproxy run` calls its server ready: something it
 * started listens on the port (found by sock_diag, microseconds a poll),
 * and with `--health /PATH` the question the wrapper then asks it: one
 * GET on loopback, answered within a deadline, read up to its status
 * line: no client library for a dozen bytes. */
#include "cli.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host.h"

#define MAX_ANCESTRY 64     /* ppid hops from a listener up to the wrapper */
#define FULL_LOOK_EVERY 100 /* polls: a listener on another address is seen within ~5 s */
#define READY_ASK_MS 2000   /* a server slower than this to answer is not ready yet */
#define ANSWER_ASK_MS 1000  /* a listening port silent this long: nobody accepts */

/* Wait until deadline (host_mono_ms) for fd to be ready for events. */
static int wait_fd(int fd, short events, long long deadline)
{
    struct pollfd p = {fd, events, 0};
    int r;
    do {
        long long left = deadline - host_mono_ms();
        r = left > 0 ? poll(&p, 1, (int)left) : 0;
    } while (r < 0 && errno == EINTR);
    return r > 0 ? 0 : -1;
}

/* The first line of the body of answer (a head and what came of its
 * body), printable, into out ("" when none came): a health path that
 * refuses usually says why (a whoami route's 501 names its fix), and the
 * wrapper's line is what a user reads. A chunked body's first line is its
 * size: skipped. */
static void body_line(const char *answer, char *out, size_t len)
{
    const char *b = strstr(answer, "\r\n\r\n");
    out[0] = '\0';
    if (!b)
        return;
    b += 4;
    size_t hex = strspn(b, "0123456789abcdefABCDEF");
    if (hex && strncmp(b + hex, "\r\n", 2) == 0 && strcasestr(answer, "chunked"))
        b += hex + 2;
    size_t n = strcspn(b, "\r\n"), i;
    n = n < len - 1 ? n : len - 1;
    for (i = 0; i < n; i++)
        out[i] = b[i] >= 0x20 && b[i] < 0x7f ? b[i] : '?';
    out[n] = '\0';
}

/* Read more of fd's answer into buf, which holds got bytes: up to its
 * status line (want_body 0), or up to two lines of its body (a chunked
 * one's size, then its text); stops sooner at its end (the request said
 * Connection: close), or the buffer's. Returns the bytes buf holds. */
static size_t read_answer(int fd, char *buf, size_t size, size_t got, int want_body,
                          long long deadline)
{
    for (;;) {
        buf[got] = '\0';
        const char *b = strstr(buf, "\r\n\r\n");
        const char *nl = b ? strchr(b + 4, '\n') : NULL; /* a chunk's size, or the line */
        if (got >= 12 && (!want_body || (nl && strchr(nl + 1, '\n'))))
            break;
        ssize_t r = got < size - 1 && wait_fd(fd, POLLIN, deadline) == 0
                        ? recv(fd, buf + got, size - 1 - got, 0)
                        : 0;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got;
}

/* The status GET path answers on 127.0.0.1:port within ms, -1 when none;
 * for a 4xx or 5xx, the first line of its body into said. */
static int ask(int port, const char *path, int ms, char *said, size_t saidlen)
{
    long long deadline = host_mono_ms() + ms;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    char req[512], answer[2048];
    int status = -1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                     "Connection: close\r\nUser-Agent: wtproxy-run-ready\r\n\r\n",
                     path, port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    said[0] = '\0';
    if (fd < 0 || n < 0 || (size_t)n >= sizeof req)
        goto done;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 &&
        (errno != EINPROGRESS || wait_fd(fd, POLLOUT, deadline) < 0))
        goto done;
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 || soerr ||
        send(fd, req, (size_t)n, MSG_NOSIGNAL) != n)
        goto done;
    size_t got = read_answer(fd, answer, sizeof answer, 0, 0, deadline); /* "HTTP/1.1 200" */
    int code;
    if (got < 12 || sscanf(answer, "HTTP/1.%*1[01] %3d", &code) != 1 || code < 100)
        goto done;
    status = code;
    if (code >= 400) { /* not ready: what it says of it, for the line that says so */
        read_answer(fd, answer, sizeof answer, got, 1, deadline);
        body_line(answer, said, saidlen);
    }
done:
    if (fd >= 0)
        close(fd);
    return status;
}

int cli_http_status(int port, const char *path, char *said, size_t saidlen)
{
    return ask(port, path, READY_ASK_MS, said, saidlen);
}

int cli_port_answers(int port)
{
    char said[64];
    return ask(port, "/__whoami", ANSWER_ASK_MS, said, sizeof said) >= 0;
}

/* The inode of a listener on port bound to an address dev servers use
 * (127.0.0.1, 0.0.0.0, ::1, ::), 0 when none: one sock_diag lookup each,
 * microseconds. Reading /proc/net/tcp, as host_port_owner_find does, costs
 * milliseconds on a machine with thousands of sockets, and the wrapper asks
 * every WTP_CLIENT_POLL_MS while its server starts. */
static unsigned long listener_seen(struct host_diag *d, int port)
{
    struct sockaddr_in v4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in6 v6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    unsigned long inode;
    uid_t uid;
    for (int any = 0; any < 2; any++) {
        v4.sin_addr.s_addr = htonl(any ? INADDR_ANY : INADDR_LOOPBACK);
        v6.sin6_addr = any ? in6addr_any : in6addr_loopback;
        if (host_diag_socket(d, (struct sockaddr *)&v4, NULL, &inode, &uid) == 0 ||
            host_diag_socket(d, (struct sockaddr *)&v6, NULL, &inode, &uid) == 0)
            return inode;
    }
    return 0;
}

int cli_port_listened(int port)
{
    char err[256];
    struct host_diag *d = host_diag_open(err, sizeof err);
    int seen = !d || listener_seen(d, port) != 0; /* no sock_diag: not known, maybe */
    host_diag_close(d);
    return seen;
}

/* Whether something listens on port and is CMD or one of its descendants
 * (Django's autoreloader serves from a grandchild). With d (may be NULL)
 * the listener is found by sock_diag and its holder looked for only once
 * it is there; the socket tables are read in full only every
 * FULL_LOOK_EVERY polls, for a listener on another address. */
int cli_cmd_listens(int port, pid_t self, struct host_diag *d, unsigned poll_no,
                    unsigned long *inode_out)
{
    struct host_port_owner owner;
    unsigned long inode = d ? listener_seen(d, port) : 0;
    pid_t p = inode ? host_socket_holder(&inode, 1, HOST_ANY_UID) : 0;
    if (inode_out)
        *inode_out = inode;
    if (!inode && (!d || poll_no % FULL_LOOK_EVERY == 0))
        p = host_port_owner_find(port, &owner) ? owner.pid : 0;
    if (p <= 0)
        return 0;
    for (int hops = 0; p > 1 && hops < MAX_ANCESTRY; hops++) {
        p = host_pid_parent(p);
        if (p == self)
            return 1;
    }
    return 0;
}
