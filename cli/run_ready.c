/* run_ready.c - `wtproxy run --health /PATH`: the question the wrapper asks
 * a server that listens before it calls it ready. One GET on loopback,
 * answered within a deadline, read up to its status line: no client
 * library for a dozen bytes. */
#include "cli.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define READY_ASK_MS 2000 /* a server slower than this to answer is not ready yet */

/* Wait up to READY_ASK_MS for fd to be ready for events. */
static int wait_fd(int fd, short events)
{
    struct pollfd p = {fd, events, 0};
    int r;
    while ((r = poll(&p, 1, READY_ASK_MS)) < 0 && errno == EINTR)
        ;
    return r > 0 ? 0 : -1;
}

int cli_http_status(int port, const char *path)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    char req[512], head[64];
    int status = -1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                     "Connection: close\r\nUser-Agent: wtproxy-run-ready\r\n\r\n", path, port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || n < 0 || (size_t)n >= sizeof req)
        goto done;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 &&
        (errno != EINPROGRESS || wait_fd(fd, POLLOUT) < 0))
        goto done;
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 || soerr ||
        send(fd, req, (size_t)n, MSG_NOSIGNAL) != n)
        goto done;
    size_t got = 0;
    while (got < 12 && wait_fd(fd, POLLIN) == 0) { /* "HTTP/1.1 200" */
        ssize_t r = recv(fd, head + got, sizeof head - 1 - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    head[got] = '\0';
    int code;
    if (got >= 12 && sscanf(head, "HTTP/1.%*1[01] %3d", &code) == 1 && code >= 100)
        status = code;
done:
    if (fd >= 0)
        close(fd);
    return status;
}
