/* backend.h - connections to dev servers: connect, and a keep-alive pool
 * of idle connections per backend address. */
#ifndef WTP_BACKEND_H
#define WTP_BACKEND_H

#include <event2/bufferevent.h>
#include <stddef.h>
#include <sys/socket.h>

struct proxy_pool;

struct proxy_pool *proxy_pool_new(void);

/* Close every idle connection and free the pool. */
void proxy_pool_free(struct proxy_pool *pool);

/* An idle connection to addr (the most recently used one, its TCP state is
 * the warmest), or NULL. Its callbacks and timeouts are the caller's to set. */
struct bufferevent *proxy_pool_take(struct proxy_pool *pool, const struct sockaddr *addr,
                                    socklen_t len);

/* Keep a connection whose last response ended cleanly, for reuse; it is
 * closed after idle_ms idle, when the backend closes it, or at once when
 * max_idle connections to that address are kept already. */
void proxy_pool_put(struct proxy_pool *pool, struct bufferevent *bev,
                    const struct sockaddr *addr, socklen_t len, unsigned max_idle,
                    unsigned idle_ms);

/* Start a non-blocking connect to addr. Returns the bufferevent (it reports
 * BEV_EVENT_CONNECTED or an error to the callbacks the caller sets next), or
 * NULL with a message in err. */
struct bufferevent *proxy_backend_connect(struct event_base *base, const struct sockaddr *addr,
                                          socklen_t len, char *err, size_t errlen);

#endif
