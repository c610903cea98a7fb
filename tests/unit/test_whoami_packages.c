/* test_whoami_packages.c - a failed server's last lines read for the
 * /__whoami middleware package it could not import (whoami/packages.c):
 * Node's import and require errors, Vite's bundled config, Python's
 * ModuleNotFoundError. The link named goes into the folder Node resolves
 * from, the app's (never node_modules/.vite-temp), and is the command
 * `wtproxy doctor` prints; other errors are left to their own message. */
#include "../../whoami/packages.c"
#include "tap.h"

#include <stdlib.h>
#include <sys/stat.h>

static char out[16384];

static void missing(const char *lines, const char *dir, const char *what, int line)
{
    char want[8192];
    snprintf(want, sizeof want,
             "mkdir -p %s/node_modules && ln -sfn " WTP_SOURCE_DIR "/whoami/node "
             "%s/node_modules/wtproxy-whoami",
             dir, dir);
    out[0] = '\0';
    int got = whoami_missing_package(lines, "/w/app", out, sizeof out);
    if (!tap_ok(got == 1 && strstr(out, want) && !strstr(out, "npm install wtproxy"), __FILE__,
                line, "%s: links into %s", what, dir))
        printf("#   got %d: %s\n", got, out);
}

static void not_missing(const char *lines, const char *what, int line)
{
    out[0] = '\0';
    int got = whoami_missing_package(lines, "/w/app", out, sizeof out);
    if (!tap_ok(got == 0, __FILE__, line, "%s: not the middleware's package", what))
        printf("#   got: %s\n", out);
}

int main(void)
{
    missing("Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'wtproxy-whoami' imported from "
            "/w/app/server.mjs\n    at packageResolve (node:internal)\n",
            "/w/app", "import", __LINE__);
    missing("Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'wtproxy-whoami' imported from "
            "/w/app/web/node_modules/.vite-temp/vite.config.js.timestamp-1-2.mjs\n",
            "/w/app/web", "Vite's bundled config", __LINE__);
    missing("Error: Cannot find module 'wtproxy-whoami/vite'\nRequire stack:\n- "
            "/w/app/api/src/server.cjs\n    at Module._resolveFilename\n",
            "/w/app/api/src", "require of a subpath", __LINE__);
    missing("Error: Cannot find package 'wtproxy-whoami'\n", "/w/app",
            "no importer named: the worktree", __LINE__);
    /* a real app: its package.json one folder above the importing file */
    char app[64] = "/tmp/wtp-pkgs-XXXXXX", lines[512], sub[128];
    if (mkdtemp(app)) {
        snprintf(sub, sizeof sub, "%s/src", app);
        mkdir(sub, 0755);
        snprintf(sub, sizeof sub, "%s/package.json", app);
        fclose(fopen(sub, "w"));
        snprintf(lines, sizeof lines,
                 "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'wtproxy-whoami' imported "
                 "from %s/src/server.mjs\n",
                 app);
        missing(lines, app, "a file below its package.json: the app's folder", __LINE__);
        snprintf(sub, sizeof sub, "rm -rf %s", app);
        if (system(sub) != 0)
            return 1;
    }
    not_missing("Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'wtproxy-whoami-extra' "
                "imported from /w/app/server.mjs\n",
                "another package", __LINE__);
    not_missing("Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'express' imported from "
                "/w/app/server.mjs\n",
                "express", __LINE__);

    out[0] = '\0';
    int py = whoami_missing_package("Traceback (most recent call last):\n  File \"manage.py\"\n"
                                    "ModuleNotFoundError: No module named 'wtproxy_whoami'",
                                    "/w/app", out, sizeof out);
    tap_ok(py == 1 && strstr(out, "lacks the wtproxy_whoami package") &&
               strstr(out, "PYTHONPATH=" WTP_SOURCE_DIR "/whoami/python"),
           __FILE__, __LINE__, "python: its path named, from a build folder");
    not_missing("ModuleNotFoundError: No module named 'wtproxy_whoami.flask'", "a submodule",
                __LINE__);
    not_missing("ModuleNotFoundError: No module named 'django'", "django", __LINE__);
    return done_testing();
}
