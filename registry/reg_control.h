/* reg_control.h - the daemon's control socket: an AF_UNIX listener, one
 * peer per CLI connection with its uid from SO_PEERCRED, a JSON line in and
 * a line out (PROTOCOL.md). What a line does is the handler's business
 * (reg_server.c). A reply may come later (an op that waits for the
 * PostgreSQL thread): the peer's next line waits for it, so replies keep
 * the order of the lines. Internal to registry/. */
#ifndef WTP_REG_CONTROL_H
#define WTP_REG_CONTROL_H

#include <event2/event.h>
#include <stddef.h>
#include <sys/types.h>

#define REG_LINE_MAX (64 * 1024) /* one request line, PROTOCOL.md */

struct reg_control;
struct reg_peer;

/* One request line from peer p running as uid: the handler answers with
 * reg_control_reply(p, ...), before it returns or later. */
typedef void (*reg_control_handler)(void *arg, struct reg_peer *p, uid_t uid, const char *line,
                                    size_t len);

/* The reply line to p's current request (no LF, malloc'd, consumed; NULL
 * for out of memory). Exactly once per request line. A peer that went away
 * meanwhile is freed now, its reply dropped. */
void reg_control_reply(struct reg_peer *p, char *line);

/* The pid of p's process when it connected (SO_PEERCRED); 0 for NULL, a
 * request of the daemon's own. */
pid_t reg_peer_pid(const struct reg_peer *p);

/* Listen on path: a socket file left by a dead daemon is replaced, one a
 * live daemon answers on is refused. fd >= 0: serve that listening,
 * non-blocking socket, bound to path by whoever passed it (systemd), and
 * never remove its file. NULL with err filled on failure. */
struct reg_control *reg_control_new(struct event_base *base, const char *path, int fd,
                                    reg_control_handler handler, void *arg, char *err,
                                    size_t errlen);

/* Close every peer and the listener, and remove the socket file (unless
 * it was passed in). No reply may be pending (the PostgreSQL thread's jobs
 * are answered first). */
void reg_control_free(struct reg_control *rc);

#endif
