/* fuzz_relay.h - the real relay, in process, for the fuzzers: the proxy's
 * own client and upstream code on one event_base, a client on a
 * socketpair and a fake backend on a loopback port, both driven by the
 * fuzz input. The loop is run without blocking until nothing moves, so a
 * run is deterministic and takes well under a millisecond; no timer ever
 * fires. At the end every stream is re-parsed by fuzz_check.h. */
#ifndef WTP_FUZZ_RELAY_H
#define WTP_FUZZ_RELAY_H

#include <stddef.h>
#include <stdint.h>

enum fz_op {
    FZ_CLIENT_SEND,    /* the client writes bytes */
    FZ_BACKEND_SEND,   /* the backend writes bytes on its newest connection */
    FZ_CLIENT_SHUT,    /* the client half-closes */
    FZ_BACKEND_CLOSE,  /* the backend closes its newest connection */
    FZ_CLIENT_READING, /* the client stops / resumes reading (backpressure) */
    FZ_NOPS
};

/* Set up the loop, the server and the fake backend once. auto_answer: the
 * backend answers every complete request it receives with a 200. */
void fz_relay_init(int auto_answer);

/* One connection's life: ops applied in order, then the client
 * half-closes, everything is checked and torn down. */
struct fz_step {
    enum fz_op op;
    const uint8_t *data;
    size_t len;
};
void fz_relay_run(const struct fz_step *steps, size_t n);

#endif
