/* packages.h - the /__whoami middleware packages a dev server loads
 * (wtproxy-whoami for Node, wtproxy_whoami for Python): where this
 * wtproxy has them, and a server's output that says it could not import
 * them. Here, below both, because `wtproxy doctor` and `wtproxy help
 * whoami` (cli/) and the daemon's 503 (proxy/) must name the same folder
 * and the same command. */
#ifndef WTP_WHOAMI_PACKAGES_H
#define WTP_WHOAMI_PACKAGES_H

#include <stddef.h>

/* What was put before the install prefix when this binary was installed
 * (a DESTDIR: a package's staging folder), into root; "" when it runs
 * where it was installed. -1 when it runs from a build folder. */
int whoami_install_root(char *root, size_t len);

/* The folder this installed wtproxy put the Python package wtproxy_whoami
 * in (its parent: what goes on a path), into out; -1 when it runs from a
 * build folder. */
int whoami_python_dir(char *out, size_t len);

/* The Node package folder wtproxy-whoami of this wtproxy (installed, or
 * its checkout's whoami/node when it runs from a build folder), into out:
 * what an app's node_modules/wtproxy-whoami links to; -1 when it has none
 * (the checkout moved). */
int whoami_node_dir(char *out, size_t len);

/* The command that links this wtproxy's wtproxy-whoami into dir's
 * node_modules (`wtproxy doctor`'s fix), into out; -1 when there is no
 * package to link or the command does not fit (a cut path would link the
 * wrong folder). */
int whoami_node_link(const char *dir, char *out, size_t len);

/* How the python of a dev server that lacks wtproxy_whoami gets this
 * wtproxy's, for this install, into out: from a build folder the
 * checkout's whoami/python on PYTHONPATH, installed where Debian's python3
 * looks the PYTHONPATH a virtualenv needs, else the link into the user
 * site. -1 when it does not fit (a cut path would name the wrong folder). */
int whoami_python_fix(char *out, size_t len);

/* The middleware's lines for a Node server, Express's and node:http's
 * (which has no app.use), as init's note, doctor's fix and the 502
 * no-whoami say them: an ES module's import, or a CommonJS file's
 * require (where an import line is a SyntaxError; require loads the
 * package's ES module from Node 20.19 on, Jest's require never: there it
 * runs under `wtproxy run` only, where WTPROXY_PORT is set). */
#define WHOAMI_NODE_THEN                                                                           \
    "then `app.use(mw)` first (Express, Connect) or `http.createServer((req, res) => mw(req, "     \
    "res, () => handler(req, res)))` (node:http), or `Fastify({ serverFactory: (handler) => "      \
    "http.createServer((req, res) => mw(req, res, () => handler(req, res))) })` (Fastify, "        \
    "which has no app.use; Hono on Node alike, through @hono/node-server's serve({ fetch, "        \
    "createServer: (o, l) => http.createServer(o, ...) }))"
#define WHOAMI_NODE_LINES                                                                          \
    "`import { whoami } from 'wtproxy-whoami'; const mw = whoami();`, " WHOAMI_NODE_THEN
#define WHOAMI_NODE_REQUIRE_LINE                                                                   \
    "`const mw = process.env.WTPROXY_PORT ? require('wtproxy-whoami').whoami() : (req, res, "      \
    "next) => next();`"
#define WHOAMI_NODE_LINES_CJS                                                                      \
    WHOAMI_NODE_REQUIRE_LINE                                                                       \
    " (a CommonJS file, Node 20.19 or later; required under wtproxy "                              \
    "run only, so that Jest, whose require cannot load an ES module, and CI need no "              \
    "wtproxy-whoami), " WHOAMI_NODE_THEN

/* Whether lines, a dev server's last output lines, say it could not
 * import the middleware package because it is not there (Node's "Cannot
 * find package 'wtproxy-whoami'", Python's "No module named
 * 'wtproxy_whoami'"): then out gets a sentence saying so and the one
 * command that makes it importable, never a registry's install (neither
 * npm's nor PyPI's wtproxy-whoami is wtproxy's). worktree is the folder
 * linked into when the lines name no importing file. Returns 1 or 0. */
int whoami_missing_package(const char *lines, const char *worktree, char *out, size_t len);

#endif
