/* defaults.c - the patterns a server declares when nobody chose others:
 * the Python middleware's (wtproxy_whoami/fingerprint.py) and `wtproxy
 * fingerprint`'s. A server trusted without /__whoami is watched by its
 * command's kind instead (kind.c). */
#include "whoami.h"

/* .env files too: Django, flask run and pydantic-settings read them once at
 * start and no reloader watches them: an edit leaves the settings old. */
static char *default_include[] = {"**/*.py", "**/.env", "**/.env.*"};
static char *default_exclude[] = {"**/.git/**", "**/node_modules/**", "**/.venv/**", "**/venv/**",
                                  "**/__pycache__/**"};

const struct whoami_patterns *whoami_default_patterns(void)
{
    static const struct whoami_patterns p = {
        default_include, sizeof default_include / sizeof *default_include, default_exclude,
        sizeof default_exclude / sizeof *default_exclude};
    return &p;
}
