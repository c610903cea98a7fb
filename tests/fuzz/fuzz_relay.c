/* fuzz_relay.c - see fuzz_relay.h. */
#include "fuzz_relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"
#include "config.h"
#include "fuzz_check.h"
#include "server.h"

#define FZ_MAX_BACKENDS 8
#define FZ_CAPTURE (1024 * 1024) /* bytes kept per stream for the check */
#define FZ_IDLE_ROUNDS 3         /* loop passes with nothing moved: settled */

struct capture {
    char *buf;
    size_t len;
    int truncated;
};

struct fake_backend {
    int fd;
    struct capture in; /* what the proxy sent */
    size_t answered;
};

static struct proxy_server srv;
static struct proxy_listener front;
static int backend_listen_fd = -1;
static int auto_answer;

static struct {
    int cfd;
    int reading;
    int closing;              /* tearing down: backend connections are refused */
    struct capture sent, got; /* client -> proxy, proxy -> client */
    struct fake_backend be[FZ_MAX_BACKENDS];
    size_t nbe;
} run;

static void die(const char *what)
{
    perror(what);
    abort();
}

static void capture_add(struct capture *c, const char *p, size_t n)
{
    if (c->len + n > FZ_CAPTURE) {
        c->truncated = 1;
        return;
    }
    if (!c->buf && !(c->buf = malloc(FZ_CAPTURE)))
        die("malloc");
    memcpy(c->buf + c->len, p, n);
    c->len += n;
}

static void set_limit(const char *key, const char *value)
{
    char err[256];
    if (proxy_config_set(&srv.cfg, key, value, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
}

void fz_relay_init(int answer)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t salen = sizeof sa;
    char name[64], err[256];
    auto_answer = answer;
    if (!getenv("FZ_RELAY_DUMP"))
        fz_quiet_logs();
    signal(SIGPIPE, SIG_IGN);
    TAILQ_INIT(&srv.clients);
    proxy_config_defaults(&srv.cfg);
    /* Small limits so the fuzzer reaches them and backpressure in a few
     * hundred bytes. */
    set_limit("max_head_size", "2k");
    set_limit("max_request_line", "512");
    set_limit("max_header_count", "16");
    set_limit("max_response_head", "2k");
    set_limit("buffer_size", "1k");
    srv.accepting = 1;
    if (!(srv.base = event_base_new()) || !(srv.pool = proxy_pool_new(srv.base)))
        die("event_base_new");
    backend_listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (backend_listen_fd < 0 || bind(backend_listen_fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        listen(backend_listen_fd, 64) < 0 ||
        getsockname(backend_listen_fd, (struct sockaddr *)&sa, &salen) < 0)
        die("fake backend");
    snprintf(name, sizeof name, "127.0.0.1:%d", ntohs(sa.sin_port));
    if (!(srv.backend = reg_backend_new(name, err, sizeof err)))
        die(err);
    srv.backend->state = REG_READY;
    front.srv = &srv;
    front.port = 8000;
    snprintf(front.name, sizeof front.name, "127.0.0.1:8000");
}

static size_t drain_fd(int fd, struct capture *c)
{
    char buf[16384];
    size_t total = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        capture_add(c, buf, (size_t)n);
        total += (size_t)n;
    }
    return total;
}

static void write_fd(int fd, const void *p, size_t n)
{
    if (fd >= 0 && n > 0 && write(fd, p, n) < 0 && errno != EAGAIN && errno != EPIPE &&
        errno != ECONNRESET)
        die("write");
}

static int accept_backends(void)
{
    int moved = 0, fd;
    while ((fd = accept4(backend_listen_fd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
        if (run.nbe == FZ_MAX_BACKENDS || run.closing) {
            close(fd);
            continue;
        }
        run.be[run.nbe++] = (struct fake_backend){.fd = fd};
        moved = 1;
    }
    return moved;
}

/* The auto-answering backend: one 200 per complete request it holds. */
static int answer(struct fake_backend *b)
{
    static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    struct head_scan_limits lim = {64 * 1024, 1024 * 1024, 1024};
    struct fz_msgs m;
    fz_parse_requests(b->in.buf, b->in.len, &lim, 1, &m);
    int moved = 0;
    for (; b->answered < m.n; b->answered++, moved = 1)
        write_fd(b->fd, ok, sizeof ok - 1);
    return moved;
}

static void pump(void)
{
    for (int rounds = 0, idle = 0; rounds < 1000 && idle < FZ_IDLE_ROUNDS; rounds++) {
        event_base_loop(srv.base, EVLOOP_NONBLOCK);
        int moved = accept_backends();
        for (size_t i = 0; i < run.nbe; i++) {
            if (run.be[i].fd >= 0 && drain_fd(run.be[i].fd, &run.be[i].in))
                moved = 1;
            if (auto_answer && run.be[i].fd >= 0 && answer(&run.be[i]))
                moved = 1;
        }
        if (run.reading && run.cfd >= 0 && drain_fd(run.cfd, &run.got))
            moved = 1;
        idle = moved ? 0 : idle + 1;
    }
}

static struct fake_backend *newest_backend(void)
{
    for (size_t i = run.nbe; i > 0; i--)
        if (run.be[i - 1].fd >= 0)
            return &run.be[i - 1];
    return NULL;
}

static void apply(const struct fz_step *s)
{
    struct fake_backend *b = newest_backend();
    switch (s->op) {
    case FZ_CLIENT_SEND:
        write_fd(run.cfd, s->data, s->len);
        capture_add(&run.sent, (const char *)s->data, s->len);
        break;
    case FZ_BACKEND_SEND:
        if (b)
            write_fd(b->fd, s->data, s->len);
        break;
    case FZ_CLIENT_SHUT:
        shutdown(run.cfd, SHUT_WR);
        break;
    case FZ_BACKEND_CLOSE:
        if (b) {
            close(b->fd);
            b->fd = -1;
        }
        break;
    default:
        run.reading = !run.reading;
    }
    pump();
}

/* What every run must satisfy: each backend got well-formed requests with
 * one framing (strict parse aborts otherwise); no more requests reached
 * backends than the client sent whole (no smuggled second request); the
 * client got well-formed responses. */
static void dump(const char *what, const struct capture *c)
{
    fprintf(stdout, "--- %s (%zu bytes) ---\n%.*s\n", what, c->len, (int)c->len,
            c->buf ? c->buf : "");
}

static void check(void)
{
    if (getenv("FZ_RELAY_DUMP")) { /* to read what a reproducer did */
        dump("client sent", &run.sent);
        for (size_t i = 0; i < run.nbe; i++)
            dump("backend got", &run.be[i].in);
        dump("client got", &run.got);
    }
    struct head_scan_limits lim = {srv.cfg.max_request_line, srv.cfg.max_head_size,
                                   srv.cfg.max_header_count};
    struct fz_msgs creq, breq, resp;
    size_t forwarded = 0, connections = 0;
    /* What reaches a backend carries the fields the proxy adds (Host,
     * X-Forwarded-*, Transfer-Encoding, Connection: upgrade), and
     * X-Forwarded-Host repeats the Host value: room for those. */
    struct head_scan_limits blim = {lim.max_start_line, 2 * lim.max_head + 512, lim.max_fields + 6};
    fz_parse_requests(run.sent.buf, run.sent.len, &lim, 0, &creq);
    for (size_t i = 0; i < run.nbe; i++) {
        fz_parse_requests(run.be[i].in.buf, run.be[i].in.len, &blim, 1, &breq);
        forwarded += breq.n;
        connections += run.be[i].in.len > 0;
    }
    /* A request may be sent again once on a fresh connection when a pooled
     * one turned out closed (upstream.c): allow one per extra connection. */
    size_t retries = connections > 1 ? connections - 1 : 0;
    if (!run.sent.truncated && !creq.asked_upgrade && forwarded > creq.n + retries) {
        char what[128];
        snprintf(what, sizeof what, "%zu requests reached backends, the client sent %zu whole",
                 forwarded, creq.n);
        fz_violated(what, run.sent.buf, run.sent.len);
    }
    if (!run.got.truncated)
        fz_parse_responses(run.got.buf, run.got.len, &creq, &resp);
}

static void teardown(void)
{
    if (run.cfd >= 0)
        close(run.cfd);
    for (size_t i = 0; i < run.nbe; i++) {
        if (run.be[i].fd >= 0)
            close(run.be[i].fd);
        free(run.be[i].in.buf);
    }
    run.cfd = -1;
    run.nbe = 0;
    run.closing = 1;
    pump();
    while (!TAILQ_EMPTY(&srv.clients))
        proxy_client_abort(TAILQ_FIRST(&srv.clients));
    /* A fresh pool each run: no connection carries over to the next input. */
    proxy_pool_free(srv.pool);
    if (!(srv.pool = proxy_pool_new(srv.base)))
        die("proxy_pool_new");
    free(run.sent.buf);
    free(run.got.buf);
    memset(&run, 0, sizeof run);
}

void fz_relay_run(const struct fz_step *steps, size_t n)
{
    int sv[2];
    struct sockaddr_in peer = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0)
        die("socketpair");
    memset(&run, 0, sizeof run);
    run.cfd = sv[0];
    run.reading = 1;
    proxy_client_accept(&srv, &front, sv[1], (struct sockaddr *)&peer);
    for (size_t i = 0; i < n; i++)
        apply(&steps[i]);
    if (run.cfd >= 0)
        shutdown(run.cfd, SHUT_WR);
    run.reading = 1;
    pump();
    check();
    teardown();
}
