/* floor_uring.c - the relay benchmark's floor on io_uring: does io_uring
 * move the floor that floor_relay.c measures with read/write on epoll?
 *
 * floor_relay.c's relay (read its top comment): the same two ways of
 * relaying a client, floor_http.h's HTTP work, 16 KiB per read, TCP_NODELAY
 * in the same places, no allocation after start-up. Only how bytes move
 * differs, so that a request makes no syscall of its own: one multishot
 * accept; one multishot recv per relayed socket into a ring of provided
 * 16 KiB buffers; each buffer read is sent to the peer (IORING_OP_SEND)
 * and goes back to the ring once sent; closes are IORING_OP_CLOSE; and the
 * loop makes one io_uring_enter per batch: what handling a batch of
 * completions queued goes in with the wait for the next. Opening a backend
 * (socket, setsockopt) and TCP_NODELAY on a keep-alive client stay
 * syscalls, once per connection as in floor_relay.
 *
 * Sockets are blocking (io_uring polls them itself). A socket with an
 * operation in flight is closed after a cancel (a multishot recv holds the
 * socket open). Every operation's user_data carries its fd's generation, so
 * a completion for an fd closed since (its number maybe reused) is known
 * as stale; its buffer still goes back to the ring. A close client's
 * request must come in one read (the response head too, as in
 * floor_relay): it is not read again, so it closes with nothing to cancel.
 *
 * Usage: bench_floor_uring LISTEN_PORT BACKEND_PORT   (both on 127.0.0.1)
 * FLOOR_URING_SETUP picks the ring's setup flags: `defer` (the default:
 * SINGLE_ISSUER | DEFER_TASKRUN, completions run only when the loop
 * waits), `coop` (COOP_TASKRUN), `plain` (none), `sqpoll` (a kernel thread
 * polls the submission queue: it spins on a CPU). Prints "listening on
 * 127.0.0.1:PORT" once it accepts; runs until killed. */
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "floor_http.h"
#include "floor_setup.h"

#define MAX_FDS 8192 /* fds fit 13 bits of user_data */
#define BUF_BYTES 16384
#define NBUF 2048 /* provided buffers: 4x what the largest shape (500 clients) holds at once */
#define BGID 1
#define NO_BUF (-1)

enum op { OP_ACCEPT, OP_FIRST, OP_RECV, OP_SEND, OP_CONNECT, OP_IGNORE };

enum role {
    R_FREE,   /* not in use */
    R_NEW,    /* accepted client, first request not read yet */
    R_PAIRED, /* either end of a keep-alive forwarding pair */
    R_CLIENT, /* a Connection: close client */
    R_POOLED, /* a backend connection of the pool, busy or idle */
};

struct conn {
    int peer;    /* -1: none (closed, or idle in the pool) */
    int idle_at; /* index in idle[] while idle, else -1 */
    enum role role;
    int reuse;        /* R_POOLED: the current response keeps the connection */
    long long left;   /* R_POOLED: body bytes still to come; -1: head not read */
    unsigned gen;     /* bumped on close: completions of older operations are stale */
    int recving;      /* a recv (first or multishot) is armed */
    int busy;         /* a connect or a send is in flight */
    int qhead, qtail; /* buffers read by the peer, to send here, in order */
};

/* A provided buffer while it holds bytes read and not yet sent. */
struct buf {
    unsigned len, off;
    int next; /* the next buffer queued to the same socket */
};

static struct conn conns[MAX_FDS];
static struct buf bufs[NBUF];
static char (*mem)[BUF_BYTES + CONN_CLOSE_LEN]; /* room for the line a head gains */
static int idle[MAX_FDS], idle_n;
static int starved[MAX_FDS], starved_n; /* multishot recvs that ran out of buffers */
static struct sockaddr_in backend;
static struct io_uring ring;
static struct io_uring_buf_ring *br;

static uint64_t tag(enum op op, int fd, int bid)
{
    return (uint64_t)conns[fd].gen << 32 | (uint64_t)(uint16_t)bid << 16 | (uint64_t)fd << 3 | op;
}

/* A submission queue entry; a full queue is submitted first. */
static struct io_uring_sqe *sqe_for(enum op op, int fd, int bid)
{
    struct io_uring_sqe *e = io_uring_get_sqe(&ring);
    while (!e) {
        io_uring_submit(&ring);
        e = io_uring_get_sqe(&ring);
    }
    io_uring_sqe_set_data64(e, tag(op, fd, bid));
    return e;
}

static void buf_give(int bid)
{
    io_uring_buf_ring_add(br, mem[bid], BUF_BYTES, (unsigned short)bid,
                          io_uring_buf_ring_mask(NBUF), 0);
    io_uring_buf_ring_advance(br, 1);
}

/* A recv into a provided buffer: multishot once the client is relayed, a
 * single one for a new client's first request. */
static void arm_recv(int fd, enum op op)
{
    struct io_uring_sqe *e = sqe_for(op, fd, NO_BUF);
    if (op == OP_RECV)
        io_uring_prep_recv_multishot(e, fd, NULL, 0, 0);
    else
        io_uring_prep_recv(e, fd, NULL, BUF_BYTES, 0);
    e->flags |= IOSQE_BUFFER_SELECT;
    e->buf_group = BGID;
    conns[fd].recving = 1;
}

/* Send the first buffer queued to fd, unless a send or connect is in flight. */
static void send_next(int fd)
{
    struct conn *c = &conns[fd];
    if (c->busy || c->qhead == NO_BUF)
        return;
    struct buf *b = &bufs[c->qhead];
    io_uring_prep_send(sqe_for(OP_SEND, fd, c->qhead), fd, mem[c->qhead] + b->off, b->len - b->off,
                       MSG_NOSIGNAL | MSG_WAITALL);
    c->busy = 1;
}

static void enqueue(int fd, int bid, unsigned len)
{
    struct conn *c = &conns[fd];
    bufs[bid] = (struct buf){.len = len, .next = NO_BUF};
    if (c->qhead == NO_BUF)
        c->qhead = bid;
    else
        bufs[c->qtail].next = bid;
    c->qtail = bid;
    send_next(fd);
}

/* Close fd: its queued buffers go back to the ring (an in-flight send's
 * comes back with its completion), its operations are cancelled, and its
 * generation moves on so their completions are known as stale. */
static void forget(int fd)
{
    struct conn *c = &conns[fd];
    for (int b = c->qhead; b != NO_BUF; b = bufs[b].next)
        if (!(c->busy && b == c->qhead))
            buf_give(b);
    if (c->recving || c->busy) {
        struct io_uring_sqe *e = sqe_for(OP_IGNORE, fd, NO_BUF);
        io_uring_prep_cancel_fd(e, fd, IORING_ASYNC_CANCEL_ALL);
        e->flags |= IOSQE_IO_HARDLINK | IOSQE_CQE_SKIP_SUCCESS;
    }
    struct io_uring_sqe *e = sqe_for(OP_IGNORE, fd, NO_BUF);
    io_uring_prep_close(e, fd);
    e->flags |= IOSQE_CQE_SKIP_SUCCESS;
    *c = (struct conn){.peer = -1, .idle_at = -1, .gen = c->gen + 1, .qhead = NO_BUF};
}

static void close_pair(int fd)
{
    int peer = conns[fd].peer;
    if (conns[fd].idle_at >= 0) {
        int at = conns[fd].idle_at;
        idle[at] = idle[--idle_n];
        conns[idle[at]].idle_at = at;
    }
    forget(fd);
    if (peer >= 0)
        forget(peer);
}

/* The response on backend b is sent: close its client; b goes back to the
 * pool if the response left it open (its multishot recv stays armed, so
 * a backend that closes an idle connection is seen). */
static void finish(int b)
{
    forget(conns[b].peer);
    conns[b].peer = -1;
    conns[b].left = -1;
    if (!conns[b].reuse) {
        forget(b);
        return;
    }
    conns[b].idle_at = idle_n;
    idle[idle_n++] = b;
}

/* A new backend connection, its connect in flight (sends wait for it); -1
 * on failure. */
static int backend_open(void)
{
    int one = 1, b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (b < 0)
        return -1;
    if (b >= MAX_FDS) {
        close(b);
        return -1;
    }
    setsockopt(b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conns[b] = (struct conn){.peer = -1, .idle_at = -1, .gen = conns[b].gen, .qhead = NO_BUF};
    io_uring_prep_connect(sqe_for(OP_CONNECT, b, NO_BUF), b, (struct sockaddr *)&backend,
                          sizeof backend);
    conns[b].busy = 1;
    return b;
}

/* The first read of client c decides how it is relayed, then the request
 * goes to its backend. */
static void on_first(int c, int res, int bid)
{
    conns[c].recving = 0;
    if (res <= 0) {
        if (bid != NO_BUF)
            buf_give(bid);
        forget(c);
        return;
    }
    size_t len = (size_t)res;
    char *cl = request_close_line(mem[bid], len);
    int b, one = 1;
    if (cl) {
        request_cut_line(mem[bid], &len, cl);
        b = idle_n ? idle[--idle_n] : backend_open();
        conns[c].role = R_CLIENT;
    } else {
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        b = backend_open();
        conns[c].role = R_PAIRED;
    }
    if (b < 0) {
        buf_give(bid);
        forget(c);
        return;
    }
    conns[b].role = cl ? R_POOLED : R_PAIRED;
    conns[b].peer = c, conns[b].idle_at = -1, conns[b].left = -1;
    conns[c].peer = b;
    if (!cl)
        arm_recv(c, OP_RECV);
    enqueue(b, bid, (unsigned)len);
}

/* Bytes read by fd (in buffer bid) go to its peer. A pooled backend's
 * response is parsed for its end; one idle in the pool that reads
 * anything (its hang-up included) leaves the pool. */
static void on_recv(int fd, struct io_uring_cqe *cqe, int bid)
{
    struct conn *c = &conns[fd];
    if (!(cqe->flags & IORING_CQE_F_MORE))
        c->recving = 0;
    if (cqe->res == -ENOBUFS) {
        starved[starved_n++] = fd;
        return;
    }
    if (cqe->res <= 0 || c->idle_at >= 0 || (c->role == R_POOLED && c->left == 0)) {
        if (bid != NO_BUF)
            buf_give(bid);
        close_pair(fd);
        return;
    }
    size_t len = (size_t)cqe->res;
    if (c->role == R_POOLED) {
        c->left = c->left < 0 ? response_head(mem[bid], &len, &c->reuse) : c->left - (long long)len;
        if (c->left < 0) {
            buf_give(bid);
            close_pair(fd);
            return;
        }
    }
    enqueue(c->peer, bid, (unsigned)len);
    if (!c->recving)
        arm_recv(fd, OP_RECV); /* the multishot ended (a full CQ): go on */
}

/* A send from the head of fd's queue completed: the rest of a short one is
 * sent, a sent buffer goes back to the ring. A close client whose response
 * is all sent is finished. */
static void on_send(int fd, int res, int bid)
{
    struct conn *c = &conns[fd];
    c->busy = 0;
    if (res <= 0) {
        c->qhead = bufs[bid].next;
        buf_give(bid);
        close_pair(fd);
        return;
    }
    bufs[bid].off += (unsigned)res;
    if (bufs[bid].off == bufs[bid].len) {
        c->qhead = bufs[bid].next;
        buf_give(bid);
    }
    if (c->role == R_CLIENT && c->qhead == NO_BUF && conns[c->peer].left == 0)
        finish(c->peer);
    else
        send_next(fd);
}

static void on_connect(int b, int res)
{
    conns[b].busy = 0;
    if (res < 0) {
        close_pair(b);
        return;
    }
    arm_recv(b, OP_RECV);
    send_next(b);
}

static void on_accept(int lfd, struct io_uring_cqe *cqe)
{
    if (!(cqe->flags & IORING_CQE_F_MORE))
        io_uring_prep_multishot_accept(sqe_for(OP_ACCEPT, 0, NO_BUF), lfd, NULL, NULL,
                                       SOCK_CLOEXEC);
    int c = cqe->res;
    if (c < 0)
        return; /* out of fds: the next accept retries */
    if (c >= MAX_FDS) {
        close(c);
        return;
    }
    conns[c] = (struct conn){.peer = -1, .idle_at = -1, .gen = conns[c].gen, .qhead = NO_BUF};
    conns[c].role = R_NEW;
    arm_recv(c, OP_FIRST);
}

static void on_cqe(int lfd, struct io_uring_cqe *cqe)
{
    uint64_t t = io_uring_cqe_get_data64(cqe);
    enum op op = (enum op)(t & 7);
    int fd = (int)(t >> 3 & (MAX_FDS - 1)), bid = (int)(int16_t)(t >> 16 & 0xffff);
    if (cqe->flags & IORING_CQE_F_BUFFER)
        bid = (int)(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
    if (op == OP_ACCEPT) {
        on_accept(lfd, cqe);
        return;
    }
    if (op == OP_IGNORE || (unsigned)(t >> 32) != conns[fd].gen) {
        if (bid != NO_BUF)
            buf_give(bid); /* stale: its socket is closed, the buffer is not */
        return;
    }
    if (op == OP_FIRST)
        on_first(fd, cqe->res, bid);
    else if (op == OP_RECV)
        on_recv(fd, cqe, bid);
    else if (op == OP_SEND)
        on_send(fd, cqe->res, bid);
    else
        on_connect(fd, cqe->res);
}

/* Recvs that ran out of buffers are armed again once a batch has given
 * buffers back. */
static void rearm_starved(void)
{
    for (int i = 0; i < starved_n; i++)
        if (conns[starved[i]].role != R_FREE && !conns[starved[i]].recving)
            arm_recv(starved[i], OP_RECV);
    starved_n = 0;
}

/* The ring, with FLOOR_URING_SETUP's flags (see the top), and its
 * provided buffers, all given to the kernel. Returns 0, or -errno. */
static int ring_open(const char *setup)
{
    struct io_uring_params p = {.flags = IORING_SETUP_CQSIZE, .cq_entries = 16384};
    if (strcmp(setup, "defer") == 0)
        p.flags |= IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    else if (strcmp(setup, "coop") == 0)
        p.flags |= IORING_SETUP_COOP_TASKRUN;
    else if (strcmp(setup, "sqpoll") == 0)
        p.flags |= IORING_SETUP_SQPOLL, p.sq_thread_idle = 10; /* ms: spin no longer than a cell */
    else if (strcmp(setup, "plain") != 0)
        return -EINVAL;
    int err = io_uring_queue_init_params(4096, &ring, &p);
    if (err < 0)
        return err;
    br = mmap(NULL, NBUF * sizeof(struct io_uring_buf), PROT_READ | PROT_WRITE,
              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mem =
        mmap(NULL, NBUF * sizeof *mem, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (br == MAP_FAILED || mem == MAP_FAILED)
        return -ENOMEM;
    struct io_uring_buf_reg reg = {
        .ring_addr = (unsigned long)br, .ring_entries = NBUF, .bgid = BGID};
    err = io_uring_register_buf_ring(&ring, &reg, 0);
    if (err < 0)
        return err;
    io_uring_buf_ring_init(br);
    for (int bid = 0; bid < NBUF; bid++)
        buf_give(bid);
    return 0;
}

int main(int argc, char **argv)
{
    long lport;
    int bad = floor_args(argc, argv, "bench_floor_uring", MAX_FDS, &lport, &backend);
    if (bad)
        return bad;
    const char *setup = getenv("FLOOR_URING_SETUP") ? getenv("FLOOR_URING_SETUP") : "defer";
    int err = ring_open(setup);
    if (err < 0) {
        fprintf(stderr,
                "bench_floor_uring: no io_uring ring with setup '%s': %s (setup is one of defer, "
                "coop, plain, sqpoll; EPERM: sysctl kernel.io_uring_disabled=0)\n",
                setup, strerror(-err));
        return 1;
    }
    int lfd = floor_listen(lport, 0);
    if (lfd < 0) {
        fprintf(stderr,
                "bench_floor_uring: cannot listen on 127.0.0.1:%ld: %s (pick a free port)\n", lport,
                strerror(errno));
        return 1;
    }
    for (int i = 0; i < MAX_FDS; i++)
        conns[i] = (struct conn){.peer = -1, .idle_at = -1, .qhead = NO_BUF};
    io_uring_prep_multishot_accept(sqe_for(OP_ACCEPT, 0, NO_BUF), lfd, NULL, NULL, SOCK_CLOEXEC);
    fprintf(stderr, "listening on 127.0.0.1:%ld (io_uring, setup %s)\n", lport, setup);
    for (;;) {
        io_uring_submit_and_wait(&ring, 1);
        struct io_uring_cqe *cqe;
        unsigned head, n = 0;
        io_uring_for_each_cqe(&ring, head, cqe)
        {
            on_cqe(lfd, cqe);
            n++;
        }
        io_uring_cq_advance(&ring, n);
        rearm_starved();
    }
}
