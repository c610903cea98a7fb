/* client.h - one client connection: read requests, relay them to a backend,
 * relay the responses back, in order. */
#ifndef WTP_CLIENT_H
#define WTP_CLIENT_H

#include <event2/util.h>
#include <sys/socket.h>

struct proxy_server;
struct proxy_listener;
struct proxy_client;

/* Take over an accepted socket. On failure the socket is closed. */
void proxy_client_accept(struct proxy_server *s, struct proxy_listener *l, evutil_socket_t fd,
                         const struct sockaddr *peer);

/* The server is stopping: an idle connection closes now, a busy one after
 * its current response. */
void proxy_client_shutdown(struct proxy_client *c);

/* Close at once, whatever it was doing (the shutdown deadline passed). */
void proxy_client_abort(struct proxy_client *c);

/* Give back the blocks of closed connections and streams kept for reuse
 * (this thread's): when the loop ends, so that nothing is left in use at
 * exit for a memory checker to report. */
void proxy_client_free_spares(void);

#endif
