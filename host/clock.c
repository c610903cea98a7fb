/* clock.c - the two clocks, each read in one place (host.h). */
#include "host.h"

#include <time.h>

static long long clock_ms(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long host_wall_ms(void)
{
    return clock_ms(CLOCK_REALTIME);
}

long long host_mono_ms(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}
