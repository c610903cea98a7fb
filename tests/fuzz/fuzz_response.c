/* fuzz_response.c - the backend side of the relay with client and backend
 * bytes interleaved: the input is a list of steps (fuzz_relay.h's ops),
 * each [op byte][length, 2 bytes little-endian][bytes], applied to the
 * real relay (proxy/client.c, proxy/upstream.c, proxy/tunnel.c) in
 * process. The backend answers only what the input makes it send. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_relay.h"

#define FZ_MAX_STEPS 64

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_relay_init(0);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz_step steps[FZ_MAX_STEPS];
    size_t n = 0, i = 0;
    while (n < FZ_MAX_STEPS && i + 3 <= size) {
        size_t len = (size_t)data[i + 1] | (size_t)data[i + 2] << 8;
        steps[n].op = (enum fz_op)(data[i] % FZ_NOPS);
        i += 3;
        if (len > size - i)
            len = size - i;
        steps[n].data = data + i;
        steps[n].len = len;
        i += len;
        n++;
    }
    fz_relay_run(steps, n);
    return 0;
}
