/* fuzz_answer.c - libFuzzer target: whoami_answer_parse on any bytes must
 * return 0 or -1, never crash, never leak (see README.md here). */
#include <stddef.h>
#include <stdint.h>

#include "whoami.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct whoami_answer a;
    char err[256];
    if (whoami_answer_parse((const char *)data, size, &a, err, sizeof err) == 0)
        whoami_answer_free(&a);
    return 0;
}
