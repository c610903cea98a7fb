/* pause.c - the sleep between a wait's polls: a claim's wait for its
 * holder (lease_client.c), a restarted server's verdict (verdict.c), the
 * MCP restart's readiness (mcp_restart.c). A command line just sleeps: a
 * person ends it with Ctrl-C. `wtproxy mcp` reads its stdin meanwhile
 * (mcp_wait.c), since a client there ends a wait with a message
 * (notifications/cancelled) or by closing its end, never with a signal. */
#include "cli.h"

#include <errno.h>
#include <time.h>

static int (*pause_fn)(long ms);

void cli_pause_set(int (*fn)(long ms))
{
    pause_fn = fn;
}

int cli_pause(long ms)
{
    if (pause_fn)
        return pause_fn(ms);
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
    return 0;
}
