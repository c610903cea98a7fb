/* test_reg_pg.c - registry/reg_pg.c's connect: libpq's errors sorted into
 * timeouts (tried once more) and the rest (final), and the retry itself
 * against a real listener on 127.0.0.1 that accepts connections and never
 * answers (as an overloaded PostgreSQL does), counted by the connections
 * the kernel queued for it. */
#include "../../registry/reg_pg.c"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

static void classify(void)
{
    ok(reg_pg_connect_timed_out("connection to server at \"127.0.0.1\", port 5432 failed: "
                                "timeout expired\n"),
       "libpq 16's connect_timeout message is a timeout");
    ok(reg_pg_connect_timed_out("timeout expired\n"), "libpq 13's is one too");
    ok(!reg_pg_connect_timed_out("connection to server at \"127.0.0.1\", port 1 failed: "
                                 "Connection refused\n\tIs the server running on that host "
                                 "and accepting TCP/IP connections?\n"),
       "a refused connect is not");
    ok(!reg_pg_connect_timed_out("connection to server at \"127.0.0.1\", port 5432 failed: "
                                 "FATAL:  password authentication failed for user \"u\"\n"),
       "an authentication error is not");
    ok(!reg_pg_connect_timed_out("FATAL:  sorry, too many clients already\n"),
       "a full server is not (it answered: waiting cannot help within the deadline)");
    ok(!reg_pg_connect_timed_out(""), "an empty message is not");
    ok(!reg_pg_connect_timed_out(NULL), "no message is not");
}

/* A listener that never accepts: the kernel completes each handshake and
 * queues it, libpq sends its startup packet and waits for the reply. */
static int silent_listener(int *port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    socklen_t len = sizeof sin;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof sin) < 0 || listen(fd, 8) < 0 ||
        getsockname(fd, (struct sockaddr *)&sin, &len) < 0)
        return -1;
    *port = ntohs(sin.sin_port);
    return fd;
}

/* How many connections wait in fd's accept queue (accepting them). */
static int queued(int fd)
{
    int n = 0, c;
    while ((c = accept(fd, NULL, NULL)) >= 0) {
        close(c);
        n++;
    }
    return n;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void retry_on_timeout(void)
{
    char uri[128], err[2048];
    int port, fd = silent_listener(&port);
    if (!ok(fd >= 0, "a silent listener on 127.0.0.1"))
        return;
    snprintf(uri, sizeof uri, "postgresql://u@127.0.0.1:%d/db?sslmode=disable&gssencmode=disable",
             port);
    double t0 = now_s();
    PGconn *c = reg_pg_dial(uri, "the registry", err, sizeof err);
    double took = now_s() - t0;
    ok(c == NULL, "a server that never answers: no connection");
    is_int(queued(fd), 2, "it was asked twice: the timed-out connect is retried once");
    ok(took >= 2.0 * (double)strtol(REG_PG_CONNECT_TIMEOUT, NULL, 10) - 1,
       "after two deadlines (%.1f s)", took);
    ok(strstr(err, "timed out twice after " REG_PG_CONNECT_TIMEOUT " s") != NULL &&
           strstr(err, "overloaded") != NULL,
       "the error says it timed out twice and asks whether PostgreSQL is overloaded: %s", err);
    ok(strstr(err, "127.0.0.1") != NULL, "and names the host");
    close(fd);
}

static void no_retry_on_refusal(void)
{
    char uri[128], err[2048];
    int port, fd = silent_listener(&port);
    if (!ok(fd >= 0, "a free port (a listener, closed)"))
        return;
    close(fd); /* nothing listens there now: the connect is refused */
    snprintf(uri, sizeof uri, "postgresql://u@127.0.0.1:%d/db?sslmode=disable", port);
    double t0 = now_s();
    PGconn *c = reg_pg_dial(uri, "the registry", err, sizeof err);
    ok(c == NULL && now_s() - t0 < 2, "a refused connect fails at once");
    ok(strstr(err, "twice") == NULL && strstr(err, "refused") != NULL,
       "and says refused, not timed out twice: %s", err);
}

int main(void)
{
    classify();
    no_retry_on_refusal();
    retry_on_timeout();
    return done_testing();
}
