/* port_stranger.h - another user's listener on a port, whose process this
 * user cannot see: whose it is, whether it is a wtproxy daemon, and the
 * way out, for every message about a taken port. */
#ifndef WTP_PORT_STRANGER_H
#define WTP_PORT_STRANGER_H

#include <stddef.h>
#include <sys/types.h>

#include "host.h"

/* How long the question "are you a wtproxy daemon?" may take: a daemon
 * answers its dashboard's /api/daemon from memory in a millisecond, so
 * past this the holder is a hung daemon or another program, said as a
 * process. A fixed constant, not a key: it runs before any config matters
 * to the user, when a start or doctor already failed. */
#define WTP_STRANGER_PROBE_MS 500

struct proxy_port_stranger {
    uid_t uid;
    char user[64];   /* its name, "" when the uid has no passwd entry */
    long daemon_pid; /* > 0: a wtproxy daemon answered on the port, this is its pid */
};

/* Whether o (host_port_owner_find's, with no process found) is another
 * uid's socket: then 1 and *s, asking addr:port (NULL or "": 127.0.0.1)
 * whether a wtproxy daemon answers there. Blocks up to
 * WTP_STRANGER_PROBE_MS: never call it on the daemon's loop. 0 when o has
 * a process or is this uid's (then /proc hides it: another pid namespace,
 * or it is gone). */
int proxy_port_stranger(const char *addr, int port, const struct host_port_owner *o,
                        struct proxy_port_stranger *s);

/* Who holds the port, for a sentence: "user alice's wtproxy daemon (uid
 * 1001, pid 4242)", "a process of user alice (uid 1001)", or with no name
 * "the wtproxy daemon of uid 1001 (pid 4242)", "a process of uid 1001". */
void proxy_port_stranger_who(const struct proxy_port_stranger *s, char *buf, size_t len);

/* The way out, given serve (the command that serves another port) and
 * tests (what the app's tests must change to use it): "as alice: wtproxy
 * stop --daemon; or serve a port of your own: SERVE, and TESTS" for a
 * daemon, or "ask alice to stop it (root sees it: ss -ltnp 'sport =
 * :PORT'); or serve a port of your own: SERVE, and TESTS". */
void proxy_port_stranger_fix(const struct proxy_port_stranger *s, int port, const char *serve,
                             const char *tests, char *buf, size_t len);

#endif
