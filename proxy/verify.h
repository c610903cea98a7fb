/* verify.h - the /__whoami gate's memory of each registration (verify.c):
 * its handle, its target, its status copied where ls and the dashboard
 * read it, and a new server behind a registration verified by the daemon
 * itself once it is ready: registered ready, its wrapper's `ready`, or
 * found ready in the state file at the daemon's start. */
#ifndef WTP_VERIFY_H
#define WTP_VERIFY_H

#include "gate.h"
#include "registry.h"

struct proxy_server;

/* b's handle in s's gate, made on first need; NULL without a gate (whoami
 * = off), for the default backend (no worktree), or when out of memory. */
struct whoami_server *proxy_backend_gate(struct proxy_server *s, struct reg_backend *b);

/* b as the gate sees it. Its strings stay with b, which outlives its gate
 * handle (released with it). Whether its worktree's .wtproxy declares a
 * server on its front is as the daemon last read the file (never read on
 * the loop: ondemand_cache.h). */
struct whoami_target proxy_backend_target(struct proxy_server *s, const struct reg_backend *b);

/* Copy the gate's status of b's server into b (reg_whoami) when it
 * changed: a verified server's requests copy nothing. */
void proxy_backend_show(struct reg_backend *b);

/* Have the registry tell us of ready and restarting (reg_server_on_state),
 * and verify the ready registrations the state file gave back. After the
 * gate is made (s->gate; none with whoami = off). */
void proxy_verify_install(struct proxy_server *s);

#endif
