/* floor_setup.h - what the relay benchmark's two floors (floor_relay.c on
 * epoll, floor_uring.c on io_uring) do alike before their loops: read the
 * two ports, raise the fd limit, listen on loopback. Shared so that the
 * floors differ only in how they move bytes. */
#ifndef FLOOR_SETUP_H
#define FLOOR_SETUP_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>

/* argv's LISTEN_PORT and BACKEND_PORT: *lport and *backend (127.0.0.1),
 * and the fd limit raised to max_fds (or as far as the hard limit lets).
 * Returns 0, or 2 (the exit status) after the usage line. */
static inline int floor_args(int argc, char **argv, const char *name, int max_fds, long *lport,
                             struct sockaddr_in *backend)
{
    char *end1 = NULL, *end2 = NULL;
    *lport = argc == 3 ? strtol(argv[1], &end1, 10) : 0;
    long bport = argc == 3 ? strtol(argv[2], &end2, 10) : 0;
    if (argc != 3 || *end1 || *end2 || *lport < 1 || *lport > 65535 || bport < 1 || bport > 65535) {
        fprintf(stderr, "usage: %s LISTEN_PORT BACKEND_PORT (both on 127.0.0.1)\n", name);
        return 2;
    }
    *backend = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)bport)};
    backend->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max < (rlim_t)max_fds ? rl.rlim_max : (rlim_t)max_fds;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    return 0;
}

/* A listening socket on 127.0.0.1:port (type adds e.g. SOCK_NONBLOCK), or
 * -1 with errno set. */
static inline int floor_listen(long port, int type)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | type, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 4096) < 0)
        return -1;
    return fd;
}

#endif
