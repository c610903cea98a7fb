/* fetch.c - see fetch.h. A fresh connection per fetch, never a pooled one:
 * the answer must come from whatever listens on the port now. */
#include "fetch.h"

#include <errno.h>
#include <fcntl.h>
#include <llhttp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct whoami_fetch {
    struct event *io, *timer;
    evutil_socket_t fd;
    llhttp_t parser;
    llhttp_settings_t settings;
    char request[512];
    size_t sent, request_len;
    char *body;
    size_t len;
    int received; /* any response byte came */
    int complete; /* llhttp saw the whole message */
    int too_large;
    whoami_fetch_cb cb;
    void *arg;
};

static void fetch_free(struct whoami_fetch *f)
{
    if (f->io)
        event_free(f->io);
    if (f->timer)
        event_free(f->timer);
    if (f->fd >= 0)
        close(f->fd);
    free(f->body);
    free(f);
}

void whoami_fetch_cancel(struct whoami_fetch *f)
{
    if (f)
        fetch_free(f);
}

static void finish(struct whoami_fetch *f, enum whoami_fetch_result res, const char *error)
{
    struct whoami_fetch_reply r = {res, llhttp_get_status_code(&f->parser), f->body, f->len, error};
    whoami_fetch_cb cb = f->cb;
    void *arg = f->arg;
    /* Freed before the callback: it may start the next fetch at once. The
     * body outlives it for the callback's sake. */
    f->body = NULL;
    fetch_free(f);
    cb(arg, &r);
    free((void *)r.body);
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
    struct whoami_fetch *f = p->data;
    if (f->len + n > WHOAMI_MAX_ANSWER) {
        f->too_large = 1;
        return HPE_USER;
    }
    char *grown = realloc(f->body, f->len + n + 1);
    if (!grown)
        return HPE_USER;
    memcpy(grown + f->len, at, n);
    f->body = grown;
    f->len += n;
    f->body[f->len] = '\0';
    return HPE_OK;
}

static int on_complete(llhttp_t *p)
{
    ((struct whoami_fetch *)p->data)->complete = 1;
    return HPE_PAUSED; /* stop here: anything after the message is not ours */
}

static void read_response(struct whoami_fetch *f)
{
    char buf[16384];
    ssize_t n = read(f->fd, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        /* The end of the stream ends a response without framing (PHP's
         * php -S: no Content-Length, Connection: close; RFC 9112 6.3), and
         * llhttp_finish then completes it through on_complete, whose pause
         * it returns: complete says so. A Content-Length or chunked answer
         * short of its end is not completed: a cut, or a server that
         * reloads. */
        if (n == 0 && f->received)
            llhttp_finish(&f->parser);
        if (n == 0 && f->complete)
            finish(f, WF_OK, NULL);
        else if (!f->received)
            finish(f, WF_UNREACHABLE,
                   n == 0 ? "closed the connection without answering" : strerror(errno));
        else
            finish(f, WF_CUT, "closed the connection in the middle of its answer");
        return;
    }
    f->received = 1;
    llhttp_errno_t err = llhttp_execute(&f->parser, buf, (size_t)n);
    if (f->complete)
        finish(f, WF_OK, NULL);
    else if (f->too_large)
        finish(f, WF_TOO_LARGE, "its answer is larger than 64 KiB");
    else if (err != HPE_OK)
        finish(f, WF_BAD_HTTP, llhttp_get_error_reason(&f->parser));
}

static void send_request(struct whoami_fetch *f)
{
    ssize_t n = write(f->fd, f->request + f->sent, f->request_len - f->sent);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n < 0) {
        finish(f, WF_UNREACHABLE, strerror(errno));
        return;
    }
    f->sent += (size_t)n;
    if (f->sent == f->request_len) {
        event_del(f->io);
        event_assign(f->io, event_get_base(f->io), f->fd, EV_READ | EV_PERSIST,
                     event_get_callback(f->io), f);
        event_add(f->io, NULL);
    }
}

static void io_cb(evutil_socket_t fd, short what, void *arg)
{
    struct whoami_fetch *f = arg;
    (void)fd;
    if (!(what & EV_WRITE)) {
        read_response(f);
        return;
    }
    int e = 0;
    socklen_t elen = sizeof e;
    if (f->sent == 0 && (getsockopt(f->fd, SOL_SOCKET, SO_ERROR, &e, &elen) < 0 || e != 0)) {
        finish(f, WF_UNREACHABLE, strerror(e ? e : errno));
        return;
    }
    send_request(f);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    finish(arg, WF_TIMEOUT, "no whole answer in time");
}

static int open_socket(struct whoami_fetch *f, const struct sockaddr *addr, socklen_t addrlen)
{
    f->fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (f->fd < 0)
        return -1;
    if (connect(f->fd, addr, addrlen) < 0 && errno != EINPROGRESS)
        return -1;
    return 0;
}

struct whoami_fetch *whoami_fetch_start(struct event_base *base, const struct sockaddr *addr,
                                        socklen_t addrlen, const char *host, unsigned timeout_ms,
                                        whoami_fetch_cb cb, void *arg)
{
    struct whoami_fetch *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->fd = -1;
    f->cb = cb;
    f->arg = arg;
    int n = snprintf(f->request, sizeof f->request,
                     "GET /__whoami HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n"
                     "User-Agent: wtproxy/" WTP_VERSION "\r\nConnection: close\r\n\r\n",
                     host);
    f->request_len = n > 0 && (size_t)n < sizeof f->request ? (size_t)n : 0;
    llhttp_settings_init(&f->settings);
    f->settings.on_body = on_body;
    f->settings.on_message_complete = on_complete;
    llhttp_init(&f->parser, HTTP_RESPONSE, &f->settings);
    f->parser.data = f;
    struct timeval tv = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000};
    if (f->request_len == 0 || open_socket(f, addr, addrlen) < 0 ||
        !(f->io = event_new(base, f->fd, EV_WRITE | EV_PERSIST, io_cb, f)) ||
        !(f->timer = evtimer_new(base, timer_cb, f)) || event_add(f->io, NULL) < 0 ||
        evtimer_add(f->timer, &tv) < 0) {
        int e = errno; /* the caller reports it: "Connection refused" */
        fetch_free(f);
        errno = e;
        return NULL;
    }
    return f;
}
