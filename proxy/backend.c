/* backend.c - see backend.h. */
#include "backend.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

struct pool_bucket;

struct pool_conn {
    struct bufferevent *bev;
    struct pool_bucket *bucket;
    TAILQ_ENTRY(pool_conn) link;
};

struct pool_bucket {
    struct sockaddr_storage addr;
    socklen_t len;
    unsigned nidle;
    TAILQ_HEAD(pool_idle, pool_conn) idle; /* head = most recently put */
    struct pool_bucket *next;
};

struct proxy_pool {
    struct pool_bucket *buckets;
};

struct proxy_pool *proxy_pool_new(void) { return calloc(1, sizeof(struct proxy_pool)); }

static void drop(struct pool_conn *pc)
{
    TAILQ_REMOVE(&pc->bucket->idle, pc, link);
    pc->bucket->nidle--;
    bufferevent_free(pc->bev);
    free(pc);
}

void proxy_pool_free(struct proxy_pool *pool)
{
    if (!pool)
        return;
    struct pool_bucket *b = pool->buckets;
    while (b) {
        struct pool_bucket *next = b->next;
        while (!TAILQ_EMPTY(&b->idle))
            drop(TAILQ_FIRST(&b->idle));
        free(b);
        b = next;
    }
    free(pool);
}

static struct pool_bucket *bucket_for(struct proxy_pool *pool, const struct sockaddr *addr,
                                      socklen_t len, int create)
{
    for (struct pool_bucket *b = pool->buckets; b; b = b->next)
        if (b->len == len && memcmp(&b->addr, addr, len) == 0)
            return b;
    if (!create)
        return NULL;
    struct pool_bucket *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    memcpy(&b->addr, addr, len);
    b->len = len;
    TAILQ_INIT(&b->idle);
    b->next = pool->buckets;
    pool->buckets = b;
    return b;
}

/* An idle connection that becomes readable was closed by the backend, or
 * sent bytes nobody asked for: either way it cannot carry a request. */
static void idle_read_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    drop(arg);
}

static void idle_event_cb(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    (void)what;
    drop(arg);
}

struct bufferevent *proxy_pool_take(struct proxy_pool *pool, const struct sockaddr *addr,
                                    socklen_t len)
{
    struct pool_bucket *b = bucket_for(pool, addr, len, 0);
    if (!b || TAILQ_EMPTY(&b->idle))
        return NULL;
    struct pool_conn *pc = TAILQ_FIRST(&b->idle);
    struct bufferevent *bev = pc->bev;
    TAILQ_REMOVE(&b->idle, pc, link);
    b->nidle--;
    free(pc);
    bufferevent_set_timeouts(bev, NULL, NULL);
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    return bev;
}

void proxy_pool_put(struct proxy_pool *pool, struct bufferevent *bev,
                    const struct sockaddr *addr, socklen_t len, unsigned max_idle,
                    unsigned idle_ms)
{
    struct pool_bucket *b = max_idle ? bucket_for(pool, addr, len, 1) : NULL;
    struct pool_conn *pc = b ? calloc(1, sizeof *pc) : NULL;
    if (!pc || evbuffer_get_length(bufferevent_get_input(bev)) > 0) {
        free(pc);
        bufferevent_free(bev);
        return;
    }
    if (b->nidle >= max_idle)
        drop(TAILQ_LAST(&b->idle, pool_idle));
    pc->bev = bev;
    pc->bucket = b;
    TAILQ_INSERT_HEAD(&b->idle, pc, link);
    b->nidle++;
    struct timeval tv = {idle_ms / 1000, (idle_ms % 1000) * 1000};
    bufferevent_setwatermark(bev, EV_READ, 0, 0);
    bufferevent_setcb(bev, idle_read_cb, NULL, idle_event_cb, pc);
    bufferevent_set_timeouts(bev, &tv, NULL);
    bufferevent_enable(bev, EV_READ);
}

struct bufferevent *proxy_backend_connect(struct event_base *base, const struct sockaddr *addr,
                                          socklen_t len, char *err, size_t errlen)
{
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!bev) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (bufferevent_socket_connect(bev, (struct sockaddr *)addr, (int)len) < 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        bufferevent_free(bev);
        return NULL;
    }
    int one = 1;
    setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return bev;
}
