/* fuzz_whoami_glob.c - libFuzzer target: a pattern, '\n', a path; matching and
 * pruning must never crash nor take long (patterns come from backends). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "whoami.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    char *nl = memchr(s, '\n', size);
    const char *path = "";
    if (nl) {
        *nl = '\0';
        path = nl + 1;
    }
    char *pats[] = {s};
    struct whoami_patterns p = {pats, 1, pats, 1};
    whoami_glob_match(s, path);
    whoami_patterns_select(&p, path);
    whoami_patterns_prune(&p, path);
    free(s);
    return 0;
}
