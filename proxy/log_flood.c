/* log_flood.c - repeated lines of the daemon's log collapsed (log_flood.h).
 *
 * A fixed table of kinds, looked up by a hash then compared: no
 * allocation per line, and memory bounded whatever the traffic. Kinds past
 * the table's size while it is full share one count ("of other kinds"),
 * so a flood of many kinds is bounded too: at most WTP_LOG_FLOOD_KINDS + 1
 * summaries a window. One timer, set for the earliest window's end. */
#include "log_flood.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "server.h"

struct kind {
    char text[WTP_LOG_FLOOD_KIND_LEN]; /* "" = a free slot */
    unsigned long hash;
    long long since;         /* its window began (monotonic ms) */
    unsigned long long more; /* its lines counted, not written, since then */
};

struct log_flood {
    struct event *timer;
    struct kind kinds[WTP_LOG_FLOOD_KINDS];
    struct kind other; /* lines of kinds that found the table full */
};

static unsigned long hash_of(const char *s)
{
    unsigned long h = 5381;
    while (*s)
        h = h * 33 + (unsigned char)*s++;
    return h;
}

/* n as "1,234,567" into buf. */
static void grouped(unsigned long long n, char *buf, size_t len)
{
    char digits[32];
    int nd = snprintf(digits, sizeof digits, "%llu", n);
    size_t o = 0;
    for (int i = 0; i < nd && o + 2 < len; i++) {
        if (i > 0 && (nd - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
}

/* The count of k, when it has one, written; its window restarts at now. */
static void summarize(struct kind *k, long long now, const char *what)
{
    if (k->more) {
        char count[40];
        grouped(k->more, count, sizeof count);
        long long s = (now - k->since + 500) / 1000;
        proxy_log("... and %s more %s in the last %lld s%s%s%s", count, what, s < 1 ? 1 : s,
                  k->text[0] ? " (" : "", k->text, k->text[0] ? ")" : "");
    }
    k->since = now;
    k->more = 0;
}

/* The end of k's window: its count, if any, written; a kind that had no
 * line in the window ends (a free slot), one that had goes on. */
static void window_end(struct kind *k, long long now)
{
    int repeating = k->more > 0;
    summarize(k, now, "like it");
    if (!repeating)
        k->text[0] = '\0';
}

static void arm(struct log_flood *f, long long now)
{
    long long next = -1;
    for (int i = 0; i < WTP_LOG_FLOOD_KINDS; i++)
        if (f->kinds[i].text[0] && (next < 0 || f->kinds[i].since < next))
            next = f->kinds[i].since;
    if (f->other.more && (next < 0 || f->other.since < next))
        next = f->other.since;
    if (next < 0)
        return;
    long long ms = next + WTP_LOG_FLOOD_WINDOW_MS - now;
    ms = ms < 1 ? 1 : ms;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(f->timer, &tv);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct log_flood *f = arg;
    long long now = host_mono_ms();
    (void)fd;
    (void)what;
    for (int i = 0; i < WTP_LOG_FLOOD_KINDS; i++)
        if (f->kinds[i].text[0] && now - f->kinds[i].since >= WTP_LOG_FLOOD_WINDOW_MS)
            window_end(&f->kinds[i], now);
    if (f->other.more && now - f->other.since >= WTP_LOG_FLOOD_WINDOW_MS)
        summarize(&f->other, now, "lines of other kinds (too many kinds at once)");
    arm(f, now);
}

struct log_flood *log_flood_new(struct event_base *base)
{
    struct log_flood *f = calloc(1, sizeof *f);
    if (f && !(f->timer = evtimer_new(base, timer_cb, f))) {
        free(f);
        f = NULL;
    }
    return f;
}

void log_flood_free(struct log_flood *f)
{
    if (!f)
        return;
    long long now = host_mono_ms();
    for (int i = 0; i < WTP_LOG_FLOOD_KINDS; i++)
        summarize(&f->kinds[i], now, "like it");
    summarize(&f->other, now, "lines of other kinds (too many kinds at once)");
    event_free(f->timer);
    free(f);
}

/* k's slot, a free one (*fresh set), or NULL when the table is full. */
static struct kind *slot_of(struct log_flood *f, const char *kind, unsigned long h, int *fresh)
{
    struct kind *free_slot = NULL;
    for (int i = 0; i < WTP_LOG_FLOOD_KINDS; i++) {
        struct kind *k = &f->kinds[i];
        if (!k->text[0])
            free_slot = free_slot ? free_slot : k;
        else if (k->hash == h && strncmp(k->text, kind, sizeof k->text - 1) == 0)
            return k;
    }
    *fresh = 1;
    return free_slot;
}

void log_flood_vline(struct log_flood *f, const char *kind, const char *fmt, va_list ap)
{
    if (!f) {
        proxy_vlog(fmt, ap);
        return;
    }
    long long now = host_mono_ms();
    unsigned long h = hash_of(kind);
    int fresh = 0;
    struct kind *k = slot_of(f, kind, h, &fresh);
    if (k && !fresh && now - k->since >= WTP_LOG_FLOOD_WINDOW_MS)
        window_end(k, now); /* the timer is late: a busy loop */
    if (k && k->text[0]) {
        k->more++;
        return;
    }
    if (!k) {
        f->other.since = f->other.more ? f->other.since : now;
        f->other.more++;
    } else {
        snprintf(k->text, sizeof k->text, "%s", kind);
        k->hash = h;
        k->since = now;
        k->more = 0;
        proxy_vlog(fmt, ap);
    }
    if (!evtimer_pending(f->timer, NULL))
        arm(f, now);
}

void log_flood_line(struct log_flood *f, const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_flood_vline(f, kind, fmt, ap);
    va_end(ap);
}
