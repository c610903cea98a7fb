/* test_whoami_fetch.c - whoami/fetch.c against a server on loopback that
 * answers GET /__whoami with canned bytes and closes: an answer whose body
 * ends at the close (PHP's php -S sends no Content-Length) is whole, a 404
 * so too (no whoami, not a broken one); one short of its Content-Length or
 * of its last chunk is cut; one past 64 KiB is too large. Includes the .c
 * to build from its source alone. */
#include "../../whoami/fetch.c"

#include <arpa/inet.h>
#include <signal.h>
#include <sys/wait.h>

#include "tap.h"

struct got {
    int done;
    enum whoami_fetch_result result;
    int status;
    char *body;
    size_t len;
};

static void on_reply(void *arg, const struct whoami_fetch_reply *r)
{
    struct got *g = arg;
    g->done = 1;
    g->result = r->result;
    g->status = r->status;
    g->len = r->len;
    g->body = r->body ? strndup(r->body, r->len) : NULL;
}

/* The child's side: one connection, the request read to its blank line,
 * then the answer, then the close. */
static void answer_once(int l, const char *answer, size_t len)
{
    int c = accept(l, NULL, NULL);
    char req[4096];
    size_t got = 0;
    ssize_t n;
    while (got < sizeof req - 1 && (n = read(c, req + got, sizeof req - 1 - got)) > 0) {
        got += (size_t)n;
        req[got] = '\0';
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    for (size_t off = 0; off < len && (n = write(c, answer + off, len - off)) > 0;)
        off += (size_t)n;
    close(c);
    _exit(0);
}

/* Fetch /__whoami from a child that answers with answer's len bytes. */
static struct got fetch(const char *answer, size_t len)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&a, &alen)) {
        perror("listen");
        exit(1);
    }
    pid_t child = fork();
    if (child == 0)
        answer_once(l, answer, len);
    close(l);
    struct got g = {0};
    struct event_base *base = event_base_new();
    struct whoami_fetch *f =
        whoami_fetch_start(base, (struct sockaddr *)&a, alen, "127.0.0.1", 5000, on_reply, &g);
    while (f && !g.done)
        event_base_loop(base, EVLOOP_ONCE);
    event_base_free(base);
    waitpid(child, NULL, 0);
    return g;
}

static void check(const char *what, const char *answer, enum whoami_fetch_result result, int status,
                  const char *body)
{
    struct got g = fetch(answer, strlen(answer));
    is_int(g.result, result, "%s: result", what);
    if (result == WF_OK) {
        is_int(g.status, status, "%s: status", what);
        is_str(g.body ? g.body : "", body, "%s: body", what);
    }
    free(g.body);
}

#define JSON "{\"wtproxy_whoami\": 1}"

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    check("a 200 that ends at the close (php -S)",
          "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\n\r\n" JSON,
          WF_OK, 200, JSON);
    check("a 404 that ends at the close", "HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\nnf",
          WF_OK, 404, "nf");
    check("an empty 200 that ends at the close", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n",
          WF_OK, 200, "");
    check("an HTTP/1.0 200 that ends at the close", "HTTP/1.0 200 OK\r\n\r\n" JSON, WF_OK, 200,
          JSON);
    check("a 200 with its Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 21\r\n\r\n" JSON,
          WF_OK, 200, JSON);
    check("a 200 short of its Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n" JSON,
          WF_CUT, 0, NULL);
    check("a chunked 200 without its last chunk",
          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n15\r\n" JSON "\r\n", WF_CUT, 0,
          NULL);
    check("a head cut before its blank line", "HTTP/1.1 200 OK\r\nContent-Type: app", WF_CUT, 0,
          NULL);

    size_t head = strlen("HTTP/1.1 200 OK\r\n\r\n"), big = WHOAMI_MAX_ANSWER + 1;
    char *large = malloc(head + big + 1);
    memcpy(large, "HTTP/1.1 200 OK\r\n\r\n", head);
    memset(large + head, 'x', big);
    large[head + big] = '\0';
    check("a body past 64 KiB that ends at the close", large, WF_TOO_LARGE, 0, NULL);
    free(large);
    return done_testing();
}
