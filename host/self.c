/* self.c - how a shell names this binary. The fixes wtproxy prints name
 * its commands as `wtproxy ...`, which is right for an install and wrong
 * for the binary the README's first command runs from its build folder:
 * there a bare `wtproxy` is not found, or is another install. */
#include "host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int host_which(const char *name, size_t n, char *out, size_t len)
{
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p; p += *p == ':') {
        size_t dn = strcspn(p, ":");
        int w = dn > 0 ? snprintf(out, len, "%.*s/%.*s", (int)dn, p, (int)n, name) : -1;
        p += dn;
        if (w > 0 && (size_t)w < len && access(out, X_OK) == 0)
            return 0;
    }
    return -1;
}

int host_self_program(char *out, size_t len, char *other, size_t otherlen)
{
    char self[PATH_MAX], cand[PATH_MAX], real[PATH_MAX];
    snprintf(out, len, "wtproxy");
    if (other && otherlen)
        other[0] = '\0';
    if (!realpath("/proc/self/exe", self))
        return -1;
    if (host_which("wtproxy", 7, cand, sizeof cand) == 0 && realpath(cand, real)) {
        if (strcmp(real, self) == 0)
            return 0;
        if (other && otherlen)
            snprintf(other, otherlen, "%s", cand);
    }
    snprintf(out, len, "%s", self);
    return 1;
}
