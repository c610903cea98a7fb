/* pool.h - idle keep-alive connections to backends, per backend address. */
#ifndef WTP_POOL_H
#define WTP_POOL_H

#include <event2/event.h>
#include <sys/socket.h>

#include "stream.h"

struct proxy_pool;

struct proxy_pool *proxy_pool_new(struct event_base *base);

/* Close every idle connection and free the pool. */
void proxy_pool_free(struct proxy_pool *pool);

/* An idle connection to addr (the most recently used one: its TCP state is
 * the warmest), or NULL. Its callbacks are the caller's to set. */
struct stream *proxy_pool_take(struct proxy_pool *pool, const struct sockaddr *addr, socklen_t len);

/* Keep a connection whose last response ended cleanly; it is closed once
 * idle for idle_ms, when the backend closes it, or at once when max_idle
 * connections to that address are kept already. now: proxy_now_ms, as the
 * caller read it for its callback (each read takes the loop's lock). */
void proxy_pool_put(struct proxy_pool *pool, struct stream *s, const struct sockaddr *addr,
                    socklen_t len, unsigned max_idle, unsigned idle_ms, unsigned long long now);

#endif
