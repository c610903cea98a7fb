/* diag.c - one TCP socket of this machine, looked up in the kernel's socket
 * table through NETLINK_SOCK_DIAG (sock_diag(7)): its inode and owner uid.
 * For the caller identification (the client end of a connection we
 * accepted) and for the /__whoami gate (the listener behind a backend's
 * address, whose inode changes when another server takes the port).
 *
 * One inet_diag_req_v2 names the exact 4-tuple (source = the socket's own
 * end, destination = its peer) and is sent without NLM_F_DUMP, so the
 * kernel looks it up in its connection hash (inet_diag_cmd_exact) instead
 * of walking every TCP socket: about 4 µs. With no peer (0.0.0.0:0) no
 * connection matches and the kernel's lookup falls through to the
 * listener that would accept a connection to the source: the exact one,
 * a wildcard one, or a dual-stack IPv6 one. The kernel answers inside
 * send(): the reply is already queued when send() returns, so reading it
 * never waits. */
#include "host.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DIAG_REPLY_MAX 8192 /* one inet_diag_msg and its attributes: ~100 bytes */

/* One per thread: replies are matched to requests by sequence number, and
 * two threads would read each other's. */
struct host_diag {
    int fd;
    uint32_t seq; /* of the last request; replies to older ones are stale */
};

struct host_diag *host_diag_open(char *err, size_t errlen)
{
    struct host_diag *d;

    if (!(d = calloc(1, sizeof *d))) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (d->fd < 0) {
        snprintf(err, errlen, "NETLINK_SOCK_DIAG socket: %s (the kernel needs CONFIG_INET_DIAG)",
                 strerror(errno));
        free(d);
        return NULL;
    }
    return d;
}

void host_diag_close(struct host_diag *d)
{
    if (!d)
        return;
    close(d->fd);
    free(d);
}

/* One end of the connection as inet_diag wants it: family, port (network
 * order, as in sockaddr) and address words (IPv4 in addr[0]). An IPv4
 * peer of an IPv6 socket arrives as ::ffff:a.b.c.d, but the kernel keeps
 * that connection with the IPv4 ones (the client's own socket is AF_INET,
 * or an IPv6 socket with an IPv4 address), so it is asked as AF_INET.
 * Returns 0, or -1 for a family that is not IP. */
static int diag_endpoint(const struct sockaddr *sa, int *family, uint16_t *port, uint32_t addr[4])
{
    const struct sockaddr_in6 *s6;

    memset(addr, 0, 4 * sizeof addr[0]);
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        *family = AF_INET;
        *port = s4->sin_port;
        addr[0] = s4->sin_addr.s_addr;
        return 0;
    }
    if (sa->sa_family != AF_INET6)
        return -1;
    s6 = (const struct sockaddr_in6 *)sa;
    *port = s6->sin6_port;
    if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
        *family = AF_INET;
        memcpy(&addr[0], &s6->sin6_addr.s6_addr[12], 4);
    } else {
        *family = AF_INET6;
        memcpy(addr, s6->sin6_addr.s6_addr, 16);
    }
    return 0;
}

/* Read until the reply to request d->seq: 0 and *inode, *uid for the
 * socket; -1 for an error reply (no such socket: ENOENT), a socket with no
 * inode (orphaned: the client closed it, FIN-WAIT or TIME-WAIT), or no
 * reply at all. Replies to older requests are skipped. */
static int diag_reply(struct host_diag *d, unsigned long *inode, uid_t *uid)
{
    union {
        struct nlmsghdr align;
        char buf[DIAG_REPLY_MAX];
    } u;
    const struct inet_diag_msg *m;
    const struct nlmsghdr *h;
    size_t off;
    ssize_t n;

    for (;;) {
        n = recv(d->fd, u.buf, sizeof u.buf, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == ENOBUFS))
            continue; /* ENOBUFS: some lost */
        if (n <= 0)
            return -1;
        for (off = 0; off + sizeof *h <= (size_t)n; off += NLMSG_ALIGN(h->nlmsg_len)) {
            h = (const struct nlmsghdr *)(u.buf + off);
            if (h->nlmsg_len < sizeof *h || h->nlmsg_len > (size_t)n - off)
                break;
            if (h->nlmsg_seq != d->seq)
                continue;
            if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
                return -1; /* NLMSG_ERROR */
            if (h->nlmsg_len < NLMSG_LENGTH(sizeof *m))
                return -1;
            m = NLMSG_DATA(h);
            if (m->idiag_inode == 0)
                return -1;
            *inode = m->idiag_inode;
            *uid = (uid_t)m->idiag_uid;
            return 0;
        }
    }
}

int host_diag_socket(struct host_diag *d, const struct sockaddr *local, const struct sockaddr *peer,
                     unsigned long *inode, uid_t *uid)
{
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 req;
    } msg;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    int lfam, pfam;
    ssize_t n;

    memset(&msg, 0, sizeof msg);
    if (diag_endpoint(local, &lfam, &msg.req.id.idiag_sport, msg.req.id.idiag_src) < 0)
        return -1;
    pfam = lfam;
    if (peer && (diag_endpoint(peer, &pfam, &msg.req.id.idiag_dport, msg.req.id.idiag_dst) < 0 ||
                 pfam != lfam))
        return -1;
    msg.nlh.nlmsg_len = sizeof msg;
    msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    msg.nlh.nlmsg_flags = NLM_F_REQUEST; /* no NLM_F_DUMP: one exact lookup */
    msg.nlh.nlmsg_seq = ++d->seq;
    msg.req.sdiag_family = (uint8_t)lfam;
    msg.req.sdiag_protocol = IPPROTO_TCP;
    msg.req.idiag_states = ~0U;
    msg.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    do
        n = sendto(d->fd, &msg, sizeof msg, 0, (const struct sockaddr *)&kernel, sizeof kernel);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof msg)
        return -1;
    return diag_reply(d, inode, uid);
}
