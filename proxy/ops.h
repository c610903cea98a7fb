/* ops.h - the control ops that act on running servers rather than on the
 * registry's table (registry/PROTOCOL.md, "Ops of the layer above"). The
 * registry's control socket hands every op it does not know to
 * proxy_ops_dispatch (reg_server_set_ext); each op is a function of one
 * file here, on the loop: it answers at once, or (services, start) holds
 * its reply until a worker has read the worktree's .wtproxy
 * (ondemand_read_later), then replies through reg_server_reply. The
 * dashboard's start button (dash_actions.c) holds its HTTP reply the same
 * way, through proxy_op_start's callback. */
#ifndef WTP_OPS_H
#define WTP_OPS_H

#include <jansson.h>
#include <sys/types.h>

#include "registry.h" /* reg_fail: an op's refusal, as the registry's own */

struct proxy_server;

/* Install the ops on s's control socket. */
void proxy_ops_install(struct proxy_server *s);

/* The refusal of an op that needs the .wtproxy reader, which this daemon
 * could not make at its start (ondemand_new failed): "unsupported", what
 * it does not do ("starts no servers on demand") and what to do. */
json_t *proxy_op_no_ondemand(const char *what);

/* {"op":"refusals"[,"worktree":W][,"after":SEQ][,"limit":N]}: the refusals
 * kept (refusal_log.h), oldest first, those after SEQ, only those whose
 * caller or backend is W when given, at most the newest N (default 50). */
json_t *proxy_op_refusals(struct proxy_server *s, uid_t uid, json_t *req);

/* {"op":"services","worktree":W}: the services W's .wtproxy declares, each
 * running or not (ondemand_services_of); errors not-declared,
 * bad-wtproxy-file. The reply comes later, through peer (NULL: an
 * "unsupported" error now). Returns the reply now or reg_server_later(). */
json_t *proxy_op_services(struct proxy_server *s, uid_t uid, json_t *req, struct reg_peer *peer);

/* {"op":"starts"}: the on-demand starts that wait, for those they are
 * started after or for the load (ondemand_pending), with the machine's
 * load per CPU and start_max_load: {"ok":true,"starts":[...],
 * "start_max_load_pct":N,"load_per_cpu":X,"cpus":N}. */
json_t *proxy_op_starts(struct proxy_server *s, uid_t uid, json_t *req);
/* --- ops_servers.c: a worktree's servers, through their wtproxy run wrapper --- */

/* {"op":"restart","worktree":W[,"service":S][,"front":F]}: SIGUSR1 to the
 * wrapper of every selected registration of the caller's (marked
 * restarting first); {"ok":true,"restarted":[entry...]}. Refused whole
 * (nothing signalled) when one selected is another uid's (not-permitted)
 * or has no wrapper (not-restartable); none selected: not-found. */
json_t *proxy_op_restart(struct proxy_server *s, uid_t uid, json_t *req);

/* Restart b through its wrapper as the restart op does (marked
 * restarting, SIGUSR1), in the name of b's owner; 0, or -1 when its pid
 * is not its wrapper's any more. */
int proxy_restart_wrapper(struct proxy_server *s, struct reg_backend *b, const char *why);

/* {"op":"stop",...same selectors}: SIGTERM to each wrapper (it stops its
 * server's whole process tree, then unregisters); {"ok":true,"stopped":[...]}.
 * The dashboard's stop button; proxy_op_stop_asked is the control op's,
 * whose peer (wtproxy stop, an MCP tool) the daemon's log names when each
 * entry goes. */
json_t *proxy_op_stop(struct proxy_server *s, uid_t uid, json_t *req);
json_t *proxy_op_stop_asked(struct proxy_server *s, uid_t uid, json_t *req, struct reg_peer *peer);

/* A reply held while a worker read a .wtproxy: reply is the callee's. */
typedef void (*proxy_op_reply_cb)(void *arg, json_t *reply);

/* {"op":"start","worktree":W[,"service":S|"front":F]}: the on-demand start
 * of W's declared service S, or of its server for F (default 8000), after
 * those it needs (ondemand_ensure); a bad .wtproxy: bad-wtproxy-file;
 * {"ok":true,"worktree","front","running":false,"log"}, or not-declared.
 * One registered already, however started: {"ok":true,...,"running":true,
 * "entry"}, nothing started. Returns the reply when it needs no file
 * (*pending NULL); else NULL, the .wtproxy read on a worker, and cb gets
 * the reply on the loop, never before this returns, unless
 * proxy_op_start_cancel(*pending) comes first (the client went). A read
 * longer than start_timeout (a hung filesystem) starts nothing: the reply
 * is then the refusal "timeout", naming the file and what to do; a daemon
 * that stops meanwhile answers "stopping"; one without its .wtproxy
 * reader, "unsupported". */
json_t *proxy_op_start(struct proxy_server *s, uid_t uid, json_t *req, proxy_op_reply_cb cb,
                       void *arg, void **pending);

/* The dashboard's restart: proxy_op_restart, and when nothing selected
 * runs (not-found), proxy_op_start of what the worktree's .wtproxy
 * declares for the selection instead (as `wtproxy restart` starts a
 * declared service that died), its reply with "started": true; when the
 * file declares none, not-found saying so. Returns and calls back as
 * proxy_op_start; *pending is proxy_op_start_cancel's. */
json_t *proxy_op_restart_or_start(struct proxy_server *s, uid_t uid, json_t *req,
                                  proxy_op_reply_cb cb, void *arg, void **pending);

/* The start's reply is not wanted any more: cb is not called. */
void proxy_op_start_cancel(void *pending);

/* proxy_op_start for the control socket: the reply held, through peer,
 * as proxy_op_services's. */
json_t *proxy_op_start_later(struct proxy_server *s, uid_t uid, json_t *req, struct reg_peer *peer);

#endif
