/* route.h - which backend a request goes to. */
#ifndef WTP_ROUTE_H
#define WTP_ROUTE_H

#include <stddef.h>

#include "error_page.h"
#include "http_msg.h"
#include "server.h"

/* The backend for a request whose head m arrived on front port `front`:
 * the worktree named by X-Wtproxy-Worktree (a path or a folder name) or by
 * a Host of <name>.localhost[:port]; else the configured default backend.
 * Returns a new reference, or NULL with *e set (PE_NO_BACKEND,
 * PE_AMBIGUOUS_WORKTREE) and the name the request gave (or "") in name.
 * Call inside m's headers_complete. */
struct reg_backend *route_request(struct proxy_server *s, int front, const struct http_msg *m,
                                  enum proxy_error *e, char *name, size_t namelen);

/* The detail of a routing refusal: what is registered on front (the
 * candidates, for an ambiguous name) and how to start a server. */
void route_explain(struct proxy_server *s, int front, enum proxy_error e, const char *name,
                   char *buf, size_t len);

#endif
