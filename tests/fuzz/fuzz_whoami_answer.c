/* fuzz_whoami_answer.c - a backend's /__whoami answer, parsed by
 * whoami_answer_parse (whoami/whoami.h) exactly as the gate gets it: the
 * input is the response body. Checked: a refusal has a reason; an answer
 * that parses holds a hash of the promised form, NUL-terminated strings,
 * a taking_in no earlier than its start, a reloads of false or not, as
 * many patterns as it says, and frees cleanly (LeakSanitizer). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whoami.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void violated(const char *what)
{
    fprintf(stderr, "fuzz invariant violated: %s\n", what);
    abort();
}

static int is_hash(const char *h)
{
    if (strncmp(h, "sha256:", 7) != 0 || strlen(h) != 71)
        return 0;
    return strspn(h + 7, "0123456789abcdef") == 64;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct whoami_answer a;
    char err[512] = "";
    if (whoami_answer_parse((const char *)data, size, &a, err, sizeof err) < 0) {
        if (!err[0])
            violated("a refusal without a reason");
        return 0;
    }
    if (!is_hash(a.hash))
        violated("an accepted hash is not sha256: and 64 hex digits");
    if (!memchr(a.checkout, '\0', sizeof a.checkout) ||
        !memchr(a.started_at, '\0', sizeof a.started_at))
        violated("a string without its NUL");
    if (a.taking_in_ms && a.taking_in_ms < a.started_ms)
        violated("an accepted taking_in.since before started_at");
    if (a.no_reloader != 0 && a.no_reloader != 1)
        violated("reloads neither said false nor not");
    for (size_t i = 0; i < a.patterns.n_include; i++)
        if (!a.patterns.include[i])
            violated("fewer include patterns than counted");
    for (size_t i = 0; i < a.patterns.n_exclude; i++)
        if (!a.patterns.exclude[i])
            violated("fewer exclude patterns than counted");
    whoami_answer_free(&a);
    return 0;
}
