/* fuzz_request.c - the client side of the relay: the input is what a
 * client sends (in two writes, split where its first byte says), through
 * the real head scanner, llhttp, request checks, body framing and
 * hop-by-hop rewrite (proxy/client.c), to a backend that answers every
 * request it gets. fuzz_relay.c checks what reached the backend parses
 * strictly with one framing, that no extra request got through, and what
 * the client got back. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_relay.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_relay_init(1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t rest = size - 1, split = rest * data[0] / 255;
    struct fz_step steps[2] = {{FZ_CLIENT_SEND, data + 1, split},
                               {FZ_CLIENT_SEND, data + 1 + split, rest - split}};
    fz_relay_run(steps, 2);
    return 0;
}
