/* load.c - waiting for the machine's load: `wtproxy claim --max-load`. A
 * machine running too much fails tests by timeouts, not bugs; a claim (a
 * test run's first step) can wait until the load per CPU is low enough,
 * as the daemon's on-demand starts do with start_max_load. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "host.h"

#define LOAD_POLL_MS 1000

int cli_load(const char *name, const char *v, unsigned *pct, char *err, size_t errlen)
{
    char *end;
    double x = strtod(v, &end);
    int percent = *end == '%';
    if (end == v || (*end && !(percent && end[1] == '\0')) || x < 0 ||
        x > (percent ? 100000 : 1000)) {
        snprintf(err, errlen, "--%s \"%s\" is not a load per CPU (use e.g. 2, 1.5 or 150%%)", name,
                 v);
        return -1;
    }
    *pct = (unsigned)(percent ? x + 0.5 : x * 100 + 0.5);
    return 0;
}

int cli_wait_load(unsigned max_pct, long long timeout_ms, char *err, size_t errlen)
{
    struct timespec tick = {LOAD_POLL_MS / 1000, (LOAD_POLL_MS % 1000) * 1000000L};
    long long deadline = host_mono_ms() + timeout_ms;
    unsigned pct;
    int told = 0;
    while (host_load_pct(&pct, NULL, NULL) == 0 && pct > max_pct) {
        if (host_mono_ms() >= deadline) {
            snprintf(err, errlen,
                     "the load stayed at %u.%02u per CPU, above --max-load %u.%02u, "
                     "for --load-timeout (%llds): lower the load (top shows what runs), or "
                     "raise --max-load",
                     pct / 100, pct % 100, max_pct / 100, max_pct % 100, timeout_ms / 1000);
            return -1;
        }
        if (!told++)
            fprintf(stderr,
                    "wtproxy: waiting: the load is %u.%02u per CPU, above --max-load "
                    "%u.%02u\n",
                    pct / 100, pct % 100, max_pct / 100, max_pct % 100);
        nanosleep(&tick, NULL);
    }
    return 0;
}
