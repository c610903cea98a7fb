/* tap.h - the Test Anything Protocol for C unit tests, without a plan up
 * front: each check prints "ok N - what", or "not ok N - what" and "# "
 * diagnostics; tap_skip() marks a check that cannot run here; and
 * done_testing() prints "1..N" last and gives the exit status (1 when any
 * check failed). Meson reads it with protocol: 'tap'. */
#ifndef WTP_TAP_H
#define WTP_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_run, tap_failed;

/* Print one result line; on failure, where it was. Returns pass. */
__attribute__((format(printf, 4, 0))) static inline int
tap_vok(int pass, const char *file, int line, const char *fmt, va_list ap)
{
    printf("%sok %d - ", pass ? "" : "not ", ++tap_run);
    vprintf(fmt, ap);
    printf("\n");
    if (!pass) {
        printf("#   Failed test at %s line %d.\n", file, line);
        tap_failed++;
    }
    fflush(stdout);
    return pass;
}

__attribute__((format(printf, 4, 5))) static inline int tap_ok(int pass, const char *file, int line,
                                                               const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tap_vok(pass, file, line, fmt, ap);
    va_end(ap);
    return pass;
}

__attribute__((format(printf, 5, 6))) static inline int
tap_is_int(long long got, long long want, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tap_vok(got == want, file, line, fmt, ap);
    va_end(ap);
    if (got != want)
        printf("#          got: %lld\n#     expected: %lld\n", got, want);
    return got == want;
}

/* NULL is a value here: is_str(NULL, NULL) passes, is_str(NULL, "") fails. */
__attribute__((format(printf, 5, 6))) static inline int
tap_is_str(const char *got, const char *want, const char *file, int line, const char *fmt, ...)
{
    int pass = got && want ? strcmp(got, want) == 0 : got == want;
    va_list ap;
    va_start(ap, fmt);
    tap_vok(pass, file, line, fmt, ap);
    va_end(ap);
    if (!pass)
        printf("#          got: %s%s%s\n#     expected: %s%s%s\n", got ? "\"" : "",
               got ? got : "NULL", got ? "\"" : "", want ? "\"" : "", want ? want : "NULL",
               want ? "\"" : "");
    return pass;
}

/* Passes when got contains needle. */
__attribute__((format(printf, 5, 6))) static inline int
tap_has_str(const char *got, const char *needle, const char *file, int line, const char *fmt, ...)
{
    int pass = got && strstr(got, needle);
    va_list ap;
    va_start(ap, fmt);
    tap_vok(pass, file, line, fmt, ap);
    va_end(ap);
    if (!pass)
        printf("#          got: \"%s\"\n#      lacking: \"%s\"\n", got ? got : "NULL", needle);
    return pass;
}

/* A check that cannot run here: TAP counts it as passed, and says why. */
static inline void tap_skip(const char *why)
{
    printf("ok %d # SKIP %s\n", ++tap_run, why);
    fflush(stdout);
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, ...) tap_is_int((got), (want), __FILE__, __LINE__, __VA_ARGS__)
#define is_str(got, want, ...) tap_is_str((got), (want), __FILE__, __LINE__, __VA_ARGS__)
#define has_str(got, needle, ...) tap_has_str((got), (needle), __FILE__, __LINE__, __VA_ARGS__)

static inline int done_testing(void)
{
    printf("1..%d\n", tap_run);
    if (tap_failed)
        printf("# Looks like %d of %d tests failed.\n", tap_failed, tap_run);
    return tap_failed ? 1 : 0;
}

#endif
