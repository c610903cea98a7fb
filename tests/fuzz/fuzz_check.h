/* fuzz_check.h - the oracle of the relay fuzzers: re-parse a byte stream
 * with the proxy's own strict pipeline (head_scan, then llhttp through
 * http_msg) and say what it holds. What the proxy emits must always pass
 * it; what a client sends is only measured with it. */
#ifndef WTP_FUZZ_CHECK_H
#define WTP_FUZZ_CHECK_H

#include <stddef.h>

#include "head_scan.h"

#define FZ_MAX_MSGS 64

struct fz_msgs {
    size_t n;              /* complete messages */
    int head[FZ_MAX_MSGS]; /* request i was HEAD (requests only) */
    int upgraded;          /* the stream switched protocols (101 / upgrade) */
    int asked_upgrade;     /* a client's request asked to (parsing went on) */
    size_t consumed;       /* bytes of the complete messages */
    const char *error;     /* why parsing stopped early, NULL if it did not */
};

/* Send what the code under test logs on stderr to /dev/null (the relay
 * logs every refusal: thousands a second), keeping the real stderr for
 * the invariant reports and the sanitizers. */
void fz_quiet_logs(void);

/* Report a broken invariant with the stream that broke it, and abort. */
void fz_violated(const char *what, const char *buf, size_t len);

/* Parse requests from buf. strict: abort() with a message on a malformed
 * request or one with ambiguous framing (Content-Length and
 * Transfer-Encoding, two Content-Lengths, two Hosts) — for bytes the
 * proxy sent. Otherwise stop quietly at the first error. */
void fz_parse_requests(const char *buf, size_t len, const struct head_scan_limits *lim, int strict,
                       struct fz_msgs *out);

/* Parse responses the proxy sent to a client that sent the requests in
 * req (their HEAD flags decide which responses have no body). Aborts on
 * anything malformed; stops at a 101. */
void fz_parse_responses(const char *buf, size_t len, const struct fz_msgs *req,
                        struct fz_msgs *out);

#endif
