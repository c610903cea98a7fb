/* route.h - which backend a request goes to. */
#ifndef WTP_ROUTE_H
#define WTP_ROUTE_H

#include <stddef.h>

#include "error_page.h"
#include "http_msg.h"
#include "identify.h"
#include "server.h"

/* The worktree a request names itself, by X-Wtproxy-Worktree (a path or a
 * folder name) or by a Host of <name>.localhost[:port], into name ("" for
 * none). Call inside m's headers_complete. */
void route_hint(const struct http_msg *m, char *name, size_t len);

/* Whether this request's route depends on who calls: it names no worktree,
 * and worktrees are registered or may start servers (.wtproxy). */
int route_needs_caller(struct proxy_server *s, const char *hint);

/* The backend for a request on front port `front`: the worktree it names
 * (hint), else the caller's worktree (who placed: never another worktree's
 * server, never the default), else the default backend, but never for a
 * caller of another user than the daemon's, which it could not place
 * (PE_OTHER_USER): wtproxy runs a daemon per user. Returns a new
 * reference, or NULL with *e (PE_NO_BACKEND, PE_AMBIGUOUS_WORKTREE,
 * PE_OTHER_USER). who may be NULL (not identified). */
struct reg_backend *route_pick(struct proxy_server *s, int front, const char *hint,
                               const struct identify_kept *who, enum proxy_error *e);

/* A routing refusal's own Fix line into fix: for a caller of another user
 * than the daemon's (whose own fix would start a server here, on a port
 * this daemon holds), how the two users share the port; for a caller in a
 * removed folder (a worktree removed under it), to run it from one that
 * exists, never a default backend, which would serve it another
 * worktree's code. Returns 1, or 0 when the page's own fix is right. */
int route_fix(struct proxy_server *s, int front, enum proxy_error e,
              const struct identify_kept *who, char *fix, size_t len);

/* The detail and Fix line of a request whose worktree has no server and
 * was removed (git worktree remove): named by hint (an absolute
 * X-Wtproxy-Worktree), or who's, placed there before (a connection kept
 * open across the removal keeps its caller's place). Never "start yours
 * from its worktree": that folder is gone. */
void route_explain_gone(struct proxy_server *s, int front, const char *hint,
                        const struct identify_kept *who, char *buf, size_t len, char *fix,
                        size_t fixlen);

/* The detail of a routing refusal: the caller as found, what is registered
 * on front (the candidates, for an ambiguous name), how to start a server;
 * or note (not ""), why the worktree's .wtproxy starts none, in its place. */
void route_explain(struct proxy_server *s, int front, enum proxy_error e, const char *hint,
                   const struct identify_kept *who, const char *note, char *buf, size_t len);

/* For the identification walk on its worker (struct identify_known):
 * route_known_snap, on the loop, copies the registered worktrees of the
 * server arg (NULL: out of memory; free() the copy); route_known_repo, on
 * any thread, says whether a worktree's repository (by its git common dir)
 * declares servers (ondemand_declared) or has a registration in one of the
 * copy's worktrees;
 * route_known_version, on the loop, changes whenever a copy taken now would
 * differ from one taken before. */
void *route_known_snap(void *arg);
int route_known_repo(const char *worktree, const char *common_dir, void *copy);
unsigned long route_known_version(void *arg);

#endif
