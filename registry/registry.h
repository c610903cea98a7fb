/* registry.h - what the proxy routes to.
 *
 * A backend is a dev server's address, resolved once, with the counters the
 * dashboard shows. This routing is static (one configured default
 * backend); registrations per worktree (issue #3) extend this model.
 * Backends are reference-counted: a config reload swaps the default while
 * requests in flight still hold the old one. */
#ifndef WTP_REGISTRY_H
#define WTP_REGISTRY_H

#include <stddef.h>
#include <sys/socket.h>

struct reg_backend {
    char name[320];                /* "HOST:PORT" as configured */
    struct sockaddr_storage addr;  /* resolved at creation */
    socklen_t addrlen;
    unsigned long requests;        /* requests relayed to it */
    int refs;
};

/* Create a backend from "HOST:PORT" or "[V6]:PORT". The host must be an
 * address literal or a name that resolves locally (localhost); the first
 * address wins. Returns the backend with one reference, or NULL with a
 * message in err. */
struct reg_backend *reg_backend_new(const char *hostport, char *err, size_t errlen);

struct reg_backend *reg_backend_ref(struct reg_backend *b);
void reg_backend_unref(struct reg_backend *b);

/* Split "HOST:PORT" / "[V6]:PORT" into host and port. Returns 0 or -1. */
int reg_split_hostport(const char *s, char *host, size_t hostlen, int *port);

#endif
