/* pool.c - see pool.h. */
#include "pool.h"

#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/time.h>

/* How often idle connections are checked for their deadline. */
#define POOL_SWEEP_MS 500

/* Entries of taken connections kept for the next put: a keep-alive request
 * puts its backend connection back and the next takes it, a malloc and a
 * free each time (about 125 instructions). Under AddressSanitizer none is
 * kept, as with client.c's and stream.c's spare blocks: a stale pointer to
 * an entry must land in freed memory, where ASan catches it. */
#define POOL_SPARE_MAX 64
/* A variable, not a macro: compared with a literal 0 the compiler warns
 * that the test is always false. */
#ifdef __SANITIZE_ADDRESS__
static const unsigned spare_kept = 0;
#else
static const unsigned spare_kept = POOL_SPARE_MAX;
#endif

struct pool_bucket;

struct pool_conn {
    struct proxy_pool *pool;
    struct stream *s;
    struct pool_bucket *bucket;
    unsigned long long deadline_ms; /* the loop's cached clock (proxy_now_ms) */
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
    struct event_base *base;
    struct event *sweep;
    unsigned nidle;
    struct pool_bucket *buckets;
    struct pool_conn *spare[POOL_SPARE_MAX];
    unsigned nspare;
};

static void sweep_cb(evutil_socket_t fd, short what, void *arg);

struct proxy_pool *proxy_pool_new(struct event_base *base)
{
    struct proxy_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    pool->base = base;
    pool->sweep = evtimer_new(base, sweep_cb, pool);
    if (!pool->sweep) {
        free(pool);
        return NULL;
    }
    return pool;
}

/* malloc, not calloc: glibc's calloc skips its per-thread cache, and
 * proxy_pool_put sets every field. */
static struct pool_conn *entry_get(struct proxy_pool *pool)
{
    return pool->nspare ? pool->spare[--pool->nspare] : malloc(sizeof(struct pool_conn));
}

static void entry_put(struct proxy_pool *pool, struct pool_conn *pc)
{
    if (pool->nspare < spare_kept)
        pool->spare[pool->nspare++] = pc;
    else
        free(pc);
}

static struct pool_conn *unlink_conn(struct pool_conn *pc)
{
    TAILQ_REMOVE(&pc->bucket->idle, pc, link);
    pc->bucket->nidle--;
    return pc;
}

static void drop(struct proxy_pool *pool, struct pool_conn *pc)
{
    unlink_conn(pc);
    pool->nidle--;
    stream_free(pc->s);
    entry_put(pool, pc);
}

void proxy_pool_free(struct proxy_pool *pool)
{
    if (!pool)
        return;
    struct pool_bucket *b = pool->buckets;
    while (b) {
        struct pool_bucket *next = b->next;
        while (!TAILQ_EMPTY(&b->idle))
            drop(pool, TAILQ_FIRST(&b->idle));
        free(b);
        b = next;
    }
    while (pool->nspare)
        free(pool->spare[--pool->nspare]);
    event_free(pool->sweep);
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

/* An idle connection that turns readable was closed by the backend, or
 * sent bytes nobody asked for: either way it can carry no request. */
static void idle_read_cb(struct stream *s, void *arg)
{
    struct pool_conn *pc = arg;
    (void)s;
    drop(pc->pool, pc);
}

static void idle_event_cb(struct stream *s, short what, void *arg)
{
    (void)what;
    idle_read_cb(s, arg);
}

static void arm_sweep(struct proxy_pool *pool)
{
    struct timeval tv = {0, POOL_SWEEP_MS * 1000};
    if (pool->nidle && !evtimer_pending(pool->sweep, NULL))
        evtimer_add(pool->sweep, &tv);
}

static void sweep_cb(evutil_socket_t fd, short what, void *arg)
{
    struct proxy_pool *pool = arg;
    struct timeval tv;
    (void)fd;
    (void)what;
    event_base_gettimeofday_cached(pool->base, &tv);
    unsigned long long now = (unsigned long long)tv.tv_sec * 1000 + (unsigned)tv.tv_usec / 1000;
    for (struct pool_bucket *b = pool->buckets; b; b = b->next) {
        /* Oldest at the tail: stop at the first one still in time. */
        struct pool_conn *pc;
        while ((pc = TAILQ_LAST(&b->idle, pool_idle)) && pc->deadline_ms <= now)
            drop(pool, pc);
    }
    arm_sweep(pool);
}

struct stream *proxy_pool_take(struct proxy_pool *pool, const struct sockaddr *addr, socklen_t len)
{
    struct pool_bucket *b = bucket_for(pool, addr, len, 0);
    if (!b || TAILQ_EMPTY(&b->idle))
        return NULL;
    struct pool_conn *pc = unlink_conn(TAILQ_FIRST(&b->idle));
    struct stream *s = pc->s;
    pool->nidle--;
    entry_put(pool, pc);
    stream_setcb(s, NULL, NULL, NULL, NULL);
    return s;
}

void proxy_pool_put(struct proxy_pool *pool, struct stream *s, const struct sockaddr *addr,
                    socklen_t len, unsigned max_idle, unsigned idle_ms, unsigned long long now)
{
    struct pool_bucket *b = max_idle ? bucket_for(pool, addr, len, 1) : NULL;
    struct pool_conn *pc = NULL;
    if (!b || evbuffer_get_length(stream_input(s)) > 0 || !(pc = entry_get(pool))) {
        stream_free(s);
        return;
    }
    if (b->nidle >= max_idle)
        drop(pool, TAILQ_LAST(&b->idle, pool_idle));
    pc->deadline_ms = now + idle_ms;
    pc->pool = pool;
    pc->s = s;
    pc->bucket = b;
    TAILQ_INSERT_HEAD(&b->idle, pc, link);
    b->nidle++;
    pool->nidle++;
    stream_setcb(s, idle_read_cb, NULL, idle_event_cb, pc);
    stream_set_read_high(s, 0);
    stream_enable_read(s);
    arm_sweep(pool);
}
