/* listener.h - the front ports: bind (or adopt systemd's), name the culprit when taken. */
#ifndef WTP_LISTENER_H
#define WTP_LISTENER_H

#include <stddef.h>

struct proxy_server;

/* Bind every listener of s->cfg (a bare port: 127.0.0.1 and ::1) and print
 * "wtproxy: listening on ADDR:PORT" for each. A taken port fails with the
 * holder named (port_taken.h). Under socket activation (s->ninherited > 0)
 * the inherited sockets are served instead and nothing is bound: each one's
 * front port is the port it is bound to (getsockname). Returns 0, or -1
 * with a message in err. */
int listener_open_all(struct proxy_server *s, char *err, size_t errlen);

void listener_close_all(struct proxy_server *s);

/* Stop or resume accepting (max_clients reached / freed). */
void listener_set_accepting(struct proxy_server *s, int on);

/* Set s->max_clients: max_connections, or fewer when the open-file limit
 * cannot hold that many (said once, with the fix). At start and reload. */
void listener_fit_fd_limit(struct proxy_server *s);

#endif
