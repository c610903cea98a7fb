/* clock.c - the two clocks, each read in one place, and the one way a
 * duration is written for people (host.h). */
#include "host.h"

#include <stdio.h>
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

void host_age(long long ms, char *buf, size_t len)
{
    long long s = ms < 0 ? 0 : ms / 1000;
    if (s < 60)
        snprintf(buf, len, "%llds", s);
    else if (s < 3600)
        snprintf(buf, len, "%lldm", s / 60);
    else if (s < 86400)
        snprintf(buf, len, "%lldh", s / 3600);
    else
        snprintf(buf, len, "%lldd", s / 86400);
}

void host_time_of_day(long long wall_ms, char *buf, size_t len)
{
    time_t t = (time_t)(wall_ms / 1000);
    struct tm tm;
    if (!localtime_r(&t, &tm) || strftime(buf, len, "%H:%M:%S", &tm) == 0)
        snprintf(buf, len, "?");
}
