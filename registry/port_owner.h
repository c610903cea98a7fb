/* port_owner.h - who already listens on a local TCP port. Used to turn
 * "address in use" into a message that names the culprit. */
#ifndef WTP_PORT_OWNER_H
#define WTP_PORT_OWNER_H

#include <stddef.h>
#include <sys/types.h>

struct reg_port_owner {
    pid_t pid;            /* 0 when the socket was found but no process (other uid, or gone) */
    char cmdline[512];    /* argv joined by spaces, "" when unreadable */
    char cwd[4096];       /* "" when unreadable */
};

/* Find the process holding a TCP listener on `port` (any address, IPv4 or
 * IPv6) from /proc/net/tcp{,6} and /proc/<pid>/fd. Returns 1 when a
 * listening socket was found (owner->pid may still be 0), 0 when none. */
int reg_port_owner_find(int port, struct reg_port_owner *owner);

/* Write the user-facing sentence for a taken port into buf, e.g.
 * "port 8000 on 127.0.0.1 is already in use by pid 4242 (python3 manage.py
 * runserver 8000), cwd /home/dev/shop/wt-a; stop it with `kill 4242`, or
 * serve another port: wtproxy serve --listen 8001". */
void reg_port_owner_describe(const char *addr, int port, char *buf, size_t len);

#endif
