/* port_taken.h - the sentence for a listen address already in use, naming
 * the process that holds it (host_port_owner_find) and the way out. */
#ifndef WTP_PORT_TAKEN_H
#define WTP_PORT_TAKEN_H

#include <stddef.h>

/* The port to serve in place of port, taken: the first one above it
 * (below it from 65535) that is none of the n ports of serving (the
 * other ports the daemon serves, the fronts a .wtproxy declares: a hint
 * naming one of them drops that service's front too, or takes it) and
 * that no process listens on. */
int proxy_port_other(int port, const int *serving, int n);

/* Write the user-facing sentence for a taken port into buf, e.g.
 * "port 8000 on 127.0.0.1 is already in use by pid 4242 (python3 manage.py
 * runserver 8000), cwd /home/dev/shop/wt-a; stop it with `kill 4242`, or
 * serve another port: wtproxy serve --listen 8001", that port
 * proxy_port_other's with serving (n ports, may be 0). Another user's
 * socket is named with its user and, when it answers as one, as their
 * wtproxy daemon (port_stranger.h): then it blocks up to
 * WTP_STRANGER_PROBE_MS, so never call it on the daemon's loop. addr may
 * be NULL. */
void proxy_port_taken(const char *addr, int port, const int *serving, int n, char *buf, size_t len);

struct host_port_owner;

/* The kill that frees o's port into buf: "kill PID", or for a forking
 * server every process sharing the socket, "kill 16190 16192 16193": its
 * children hold the port after the parent alone is killed. With wait, the
 * wait for each to exit follows, so that a serve pasted after it binds:
 * "kill P && tail --pid=P -f /dev/null", and for several
 * "kill P Q && for p in P Q; do tail --pid=$p -f /dev/null; done". */
void proxy_port_kill(const struct host_port_owner *o, int wait, char *buf, size_t len);

#endif
