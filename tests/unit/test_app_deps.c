/* test_app_deps.c - a dev server's last lines read for its app's own
 * dependencies not installed where it runs (host/app_deps.c), in real
 * folders: a shell's "not found" and Node's "Cannot find module/package"
 * told as the install in the start's `cd` folder, by its lockfile, when
 * that folder's package.json has them not installed (no node_modules, one
 * holding only a link, one without the program or the package); Python's
 * "No module named" as the python that lacks it (with no requirements,
 * only for the framework the start command runs); the middleware's own
 * package, a folder with everything installed, a package or module the
 * app does not declare (a misspelt import, its own code) and other errors
 * left to the other readers. */
#include "../../host/app_deps.c"
#include "tap.h"

#include <unistd.h>

static char wt[PATH_MAX], out[4096];

static void put(const char *rel, const char *text)
{
    char p[2 * PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", wt, rel);
    if (text) {
        FILE *f = fopen(p, "w");
        fputs(text, f);
        fclose(f);
    } else {
        mkdir(p, 0755);
    }
}

static void says(const char *lines, const char *command, const char *want, int line)
{
    out[0] = '\0';
    int got = host_deps_missing(lines, command, wt, out, sizeof out);
    char w[4096];
    snprintf(w, sizeof w, want, wt, wt);
    const char *l = lines + strspn(lines, "\n");
    if (!tap_ok(got == 1 && strcmp(out, w) == 0, __FILE__, line, "%.*s", (int)strcspn(l, "\n"), l))
        printf("#   got %d: %s\n#  want: %s\n", got, out, w);
}

static void silent(const char *lines, const char *command, int line)
{
    out[0] = '\0';
    int got = host_deps_missing(lines, command, wt, out, sizeof out);
    if (!tap_ok(got == 0, __FILE__, line, "not the app's dependencies: %.*s",
                (int)strcspn(lines, "\n"), lines))
        printf("#   got: %s\n", out);
}

/* An npm workspace: one lockfile at its root, its members' installs
 * hoisted into the root's node_modules, none in the member's folder. */
static void workspaces(void)
{
    const char *sh = "/bin/sh -c cd apps/web && npm run dev";
    put("ws", NULL);
    snprintf(wt + strlen(wt), sizeof wt - strlen(wt), "/ws");
    put("package.json", "{\"workspaces\": [\"apps/*\"]}");
    put("package-lock.json", "{}");
    put("apps", NULL);
    put("apps/web", NULL);
    put("apps/web/package.json", "{\"devDependencies\": {\"vite\": \"^5\"}}");
    says("sh: 1: vite: not found", sh,
         "this worktree has no node_modules in %s (a new worktree starts without them); install "
         "them, by its lockfile: cd %s && npm ci",
         __LINE__);
    put("node_modules", NULL);
    put("node_modules/.bin", NULL);
    put("node_modules/.package-lock.json", "{}");
    says("Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'vite' imported from /x/a.js", sh,
         "%s/node_modules has no vite: its dependencies are not all installed; install them, by "
         "its lockfile: cd %s && npm ci",
         __LINE__);
    put("node_modules/vite", NULL);
    put("node_modules/.bin/vite", "");
    silent("sh: 1: vite: not found", sh, __LINE__); /* hoisted: installed */
    silent("Error: Cannot find package 'vite' imported from /x/a.js", sh, __LINE__);
    wt[strlen(wt) - 3] = '\0';
}

int main(void)
{
    snprintf(wt, sizeof wt, "/tmp/wtp-app-deps-XXXXXX");
    if (!mkdtemp(wt))
        return 1;
    const char *sh = "/bin/sh -c cd web && npm run dev -- --port 18011";
    silent("sh: 1: vite: not found", sh, __LINE__); /* no web/package.json */
    put("web", NULL);
    put("web/package.json", "{\"devDependencies\": {\"@vitejs/plugin-react\": \"^4\"}}");
    says("\n> vite --port 18011\n\nsh: 1: vite: not found\n", sh,
         "this worktree has no node_modules in %s/web (a new worktree starts without them); "
         "install them, by its lockfile: cd %s/web && npm install",
         __LINE__);
    put("web/package-lock.json", "{}");
    put("web/node_modules", NULL);
    put("web/node_modules/wtproxy-whoami", NULL);
    says("sh: 1: node_modules/.bin/vite: not found", sh,
         "%s/web/node_modules holds no installed dependencies (only what was linked there); "
         "install them, by its lockfile: cd %s/web && npm ci",
         __LINE__);
    put("web/node_modules/.bin", NULL);
    says("bash: vite: command not found", "FOO=1 /bin/sh -c cd web && vite",
         "%s/web/node_modules has no .bin/vite: its dependencies are not all installed; install "
         "them, by its lockfile: cd %s/web && npm ci",
         __LINE__);
    says("Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@vitejs/plugin-react' imported "
         "from /x/web/vite.config.js",
         sh,
         "%s/web/node_modules has no @vitejs/plugin-react: its dependencies are not all "
         "installed; install them, by its lockfile: cd %s/web && npm ci",
         __LINE__);
    /* not in its package.json: a misspelt import, or never added */
    silent("Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'left-pad' imported from /x/a.js", sh,
           __LINE__);
    put("web/node_modules/.bin/vite", "");
    put("web/node_modules/next", NULL);
    silent("sh: 1: vite: not found", sh, __LINE__); /* installed: another cause */
    silent("Error: Cannot find module 'next'\nRequire stack:\n- /x/web/a.js", sh, __LINE__);
    silent("Error: Cannot find module './routes'", sh, __LINE__);
    silent("Error: Cannot find package 'wtproxy-whoami' imported from /x/web/a.js", sh, __LINE__);
    silent("Error: listen EADDRINUSE: address already in use 127.0.0.1:5173", sh, __LINE__);
    put("package.json", "{}");
    put("yarn.lock", "");
    says("Error: Cannot find module 'next'\nRequire stack:\n- /x/a.js", "next dev -p 3000",
         "this worktree has no node_modules in %s (a new worktree starts without them); install "
         "them, by its lockfile: cd %s && yarn install",
         __LINE__);
    says("ModuleNotFoundError: No module named 'django.core'",
         "/usr/bin/python3 manage.py runserver",
         "/usr/bin/python3, the python that ran this server, has no module django: the app's "
         "Python dependencies are not installed for it; install them (/usr/bin/python3 -m pip "
         "install <the package of django>), or start it with a python that has them (on Debian, "
         "/usr/bin/python3 imports Django from the python3-django package)",
         __LINE__);
    silent("ModuleNotFoundError: No module named 'wtproxy_whoami'", "python3 manage.py", __LINE__);
    /* no requirements: only the framework the start runs is an install;
     * any other module may be the code's misspelt import */
    silent("ModuleNotFoundError: No module named 'no_such_module'",
           "/usr/bin/python3 -m uvicorn main:app --port 8001", __LINE__);
    silent("ModuleNotFoundError: No module named 'django'", "uvicorn main:app --reload", __LINE__);
    says("ModuleNotFoundError: No module named 'uvicorn'",
         "/usr/bin/python3 -m uvicorn main:app --port 8001",
         "/usr/bin/python3, the python that ran this server, has no module uvicorn: the app's "
         "Python dependencies are not installed for it; install them (/usr/bin/python3 -m pip "
         "install <the package of uvicorn>), or start it with a python that has them",
         __LINE__);
    says("ModuleNotFoundError: No module named 'flask'", "/bin/sh -c cd . && flask run -p 8002",
         "python3, the python that ran this server, has no module flask: the app's Python "
         "dependencies are not installed for it; install them (python3 -m pip install <the "
         "package of flask>), or start it with a python that has them",
         __LINE__);
    /* the app's own module, broken by an edit: its code's error */
    put("shop", NULL);
    silent("ModuleNotFoundError: No module named 'shop.views_new'", "python3 manage.py", __LINE__);
    put("helpers.py", "");
    silent("ModuleNotFoundError: No module named 'helpers'", "python3 manage.py", __LINE__);
    /* requirements that do not name it: a misspelt import */
    put("requirements.txt", "Django>=4.2\ndjango-environ==0.11\nrequests==2.31\n");
    silent("ModuleNotFoundError: No module named 'reqeusts'", "python3 manage.py", __LINE__);
    silent("ModuleNotFoundError: No module named 'environ'", "python3 manage.py", __LINE__);
    says("ModuleNotFoundError: No module named 'requests'", "/usr/bin/python3 manage.py runserver",
         "/usr/bin/python3, the python that ran this server, has no module requests: the app's "
         "Python dependencies are not installed for it; install them (cd %s && /usr/bin/python3 "
         "-m pip install -r requirements.txt), or start it with a python that has them",
         __LINE__);
    workspaces();
    char dir[PATH_MAX];
    host_command_dir("/bin/sh -c cd /abs/web && vite", wt, dir, sizeof dir);
    tap_ok(strcmp(dir, "/abs/web") == 0, __FILE__, __LINE__, "an absolute cd: %s", dir);
    host_command_dir("node server.mjs", wt, dir, sizeof dir);
    tap_ok(strcmp(dir, wt) == 0, __FILE__, __LINE__, "no cd: the worktree");
    char rm[PATH_MAX + 16];
    snprintf(rm, sizeof rm, "rm -rf %s", wt);
    if (system(rm) != 0)
        return 1;
    return done_testing();
}
