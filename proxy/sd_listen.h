/* sd_listen.h - listening sockets handed over by systemd (socket activation),
 * read with the sd_listen_fds(3) protocol and without libsystemd. */
#ifndef WTP_SD_LISTEN_H
#define WTP_SD_LISTEN_H

#include <stddef.h>
#include <sys/socket.h>

#include "proxy_limits.h"

#define WTP_SD_FIRST_FD 3                   /* SD_LISTEN_FDS_START */
#define WTP_SD_MAX_FDS (WTP_MAX_LISTEN * 2) /* as many as the daemon has listeners */

struct proxy_sd_socket {
    int fd;
    char name[64];                /* its LISTEN_FDNAMES entry ("wtproxy.socket"), "" when none */
    struct sockaddr_storage addr; /* the address it is bound to */
    socklen_t addrlen;
};

/* Take the sockets systemd passed to this process: read LISTEN_PID,
 * LISTEN_FDS and LISTEN_FDNAMES, then unset all three (so no child of the
 * daemon mistakes them for its own). Variables meant for another pid are
 * ignored, with a line in note saying so (note is "" otherwise). Each fd
 * taken is marked close-on-exec, checked and made non-blocking: each must
 * be a listening TCP socket (a front; they go to out), except at most one
 * listening Unix stream socket, the control socket (to *control; its fd
 * is -1 when none came). Returns the number of TCP sockets in out (0: the
 * configured listen addresses apply), or -1 with a message in err naming
 * the fd, what it is and the fix. */
int proxy_sd_listen_fds(struct proxy_sd_socket *out, int max, struct proxy_sd_socket *control,
                        char *note, size_t notelen, char *err, size_t errlen);

#endif
