/* reg_diag.h - one TCP socket of this machine, looked up in the kernel's
 * socket table through NETLINK_SOCK_DIAG (sock_diag(7)): its inode and
 * owner uid. For the caller identification (proxy/identify.c: the client
 * end of a connection we accepted) and for the /__whoami gate (whoami/
 * gate.c: the listener behind a backend's address, whose inode changes
 * when another server takes the port). */
#ifndef WTP_REG_DIAG_H
#define WTP_REG_DIAG_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

struct reg_diag; /* an open NETLINK_SOCK_DIAG socket; one per thread */

/* NULL with err filled ("NETLINK_SOCK_DIAG socket: ...") when the kernel
 * offers no sock_diag. */
struct reg_diag *reg_diag_open(char *err, size_t errlen);
void reg_diag_close(struct reg_diag *d);

/* The socket whose own address is local and whose peer is peer (IPv4 or
 * IPv6; an IPv4-mapped IPv6 address is asked as IPv4); with peer NULL, the
 * listener that accepts connections to local. Returns 0 with *inode and
 * *uid, or -1 when the kernel has no such socket or reports inode 0 (a
 * connection already closing: unknown, never a guess). */
int reg_diag_socket(struct reg_diag *d, const struct sockaddr *local,
                    const struct sockaddr *peer, unsigned long *inode, uid_t *uid);

#endif
