/* usage.c - the help text of each command, as `wtproxy CMD --help` and
 * `wtproxy help CMD` print it (and the man pages are made from): what the
 * command does and its flags. Apart from the command table (main.c) so
 * that the table, which names every command once with its handler and exit
 * statuses, reads on one screen; the exit statuses stay in the table. */
#include "usage.h"

const char cli_usage_run[] =
    "usage: wtproxy run [--front PORT] [--worktree DIR] [--service NAME] [--health /PATH]\n"
    "                   [--restart-on-stale] [--no-autostart] -- CMD ARGS...\n"
    "\n"
    "Run this worktree's dev server on a port the daemon reserves, and route the\n"
    "front port's requests for this worktree to it. Every {port} in ARGS becomes\n"
    "that port; PORT, WTPROXY_PORT and WTPROXY_WORKTREE are set (WTPROXY_SERVICE\n"
    "too, with --service). Exits with CMD's status.\n"
    "\n"
    "  --front PORT      the proxy port it serves (default: the one port the daemon\n"
    "                    listens on, else 8000)\n"
    "  --worktree DIR    default: the git worktree enclosing the current folder\n"
    "  --service NAME    the `.wtproxy` service this server is (a-z, 0-9, -, _): shown\n"
    "                    by ls, and what logs/restart/stop --service NAME act on\n"
    "  --health /PATH    ready once CMD listens and GET /PATH answers 2xx or 3xx\n"
    "                    (for a server whose / is 404); default: once it listens\n"
    "  --restart-on-stale  when the code on disk changes and CMD has not reloaded it,\n"
    "                    wtproxy restarts CMD (same port) and holds requests meanwhile\n"
    "  --no-autostart    fail instead of starting a daemon when none answers\n"
    "\n"
    "example: wtproxy run -- python3 manage.py runserver 127.0.0.1:{port}\n";

const char cli_usage_register[] =
    "usage: wtproxy register --port P (--pid PID | --ttl DURATION) [options]\n"
    "\n"
    "Register a dev server started some other way, so the proxy routes this\n"
    "worktree's requests to it. It is registered ready at once.\n"
    "\n"
    "  --port P          the port the server listens on (required)\n"
    "  --pid PID         the server's pid: the entry goes when it exits\n"
    "  --ttl DURATION    how long the entry lives (30s, 10m, 2h, 1d); required\n"
    "                    without --pid\n"
    "  --front PORT      the proxy port it serves (default: the one port the daemon\n"
    "                    listens on, else 8000)\n"
    "  --worktree DIR    default: the git worktree enclosing the current folder\n"
    "  --host H          the server's address (default 127.0.0.1)\n"
    "  --service NAME    the `.wtproxy` service this server is (a-z, 0-9, -, _)\n"
    "  --no-autostart    fail instead of starting a daemon when none answers\n";

const char cli_usage_unregister[] =
    "usage: wtproxy unregister [--worktree DIR] [--front PORT]\n"
    "\n"
    "Remove this worktree's entry (yours, or any as root).\n"
    "\n"
    "  --worktree DIR    default: the git worktree enclosing the current folder\n"
    "  --front PORT      default: the one port the daemon listens on, else 8000\n";

const char cli_usage_ls[] =
    "usage: wtproxy ls [--json]\n"
    "\n"
    "List the registered dev servers: worktree, branch, front port, backend\n"
    "port, pid, state, what the /__whoami gate last found (verified, stale,\n"
    "mismatch, no-whoami, invalid; - before its first request), age and\n"
    "requests served. With a PostgreSQL registry, every machine's, with a\n"
    "MACHINE column (only this machine's route here). A SERVICE column when\n"
    "some server is a named `.wtproxy` service (wtproxy run --service).\n"
    "\n"
    "  --json    the entries as the daemon has them (PROTOCOL.md)\n";

const char cli_usage_dashboard[] =
    "usage: wtproxy dashboard [--no-autostart]\n"
    "\n"
    "Print the URL of the dashboard (/__wtproxy/ on every front port): the\n"
    "registered dev servers, their state and what wtproxy refused lately,\n"
    "live. Open it in a browser on this machine.\n"
    "\n"
    "  --no-autostart    fail instead of starting a daemon when none answers\n";

const char cli_usage_why[] =
    "usage: wtproxy why [--pid PID] [--front PORT]\n\n"
    "Explain which worktree the requests of process PID (default: this command,\n"
    "placed as a curl run here would be) are routed to, and why: the processes walked,\n"
    "the one that decided (WTPROXY_WORKTREE in its environment, or its cwd), the backend.\n\n"
    "  --front PORT     the front port (default: the .wtproxy's, else the one port the\n"
    "                   daemon listens on, else 8000)\n";

const char cli_usage_fingerprint[] =
    "usage: wtproxy fingerprint [DIR] [--include GLOB]... [--exclude GLOB]... [--no-exclude]\n"
    "                           [--json | --list]\n\n"
    "The code fingerprint (wtproxy-fp-v1, whoami/PROTOCOL.md) of the files below DIR\n"
    "(default .) that match an --include and no --exclude: what a dev server with the\n"
    "wtproxy_whoami middleware reports in /__whoami when it starts.\n"
    "  --include GLOB  select paths matching GLOB; repeatable; replaces the default\n"
    "                  **/*.py\n"
    "  --exclude GLOB  leave out paths matching GLOB; repeatable; replaces the defaults\n"
    "                  **/.git/**, **/node_modules/**, **/.venv/**, **/venv/**,\n"
    "                  **/__pycache__/**\n"
    "  --no-exclude    no default excludes (only those given with --exclude)\n"
    "  --json          print {\"algorithm\", \"include\", \"exclude\", \"files\", \"hash\"}\n"
    "  --list          print every record (type, SHA-256, path), then the hash\n";

const char cli_usage_claim[] =
    "usage: wtproxy claim RESOURCE [--ttl D] [--purpose TEXT] [--worktree DIR]\n"
    "                     [--max-load LOAD [--load-timeout D]] [-- CMD ARGS...]\n"
    "\n"
    "Lease RESOURCE (any name: an emulator, a device, a port range) for this\n"
    "worktree. Without CMD the claim is manual and needs --ttl (it ends then, or\n"
    "at wtproxy release). With -- CMD the lease is held while CMD runs and\n"
    "released when it ends, however it ends; exits with CMD's status.\n"
    "A held resource is refused (exit 1) naming its holder and how to free it.\n"
    "\n"
    "  --ttl D           30s, 10m, 2h, 1d\n"
    "  --purpose TEXT    what it is for, shown to whoever is refused\n"
    "  --worktree DIR    default: the git worktree enclosing the current folder\n"
    "  --max-load LOAD   first wait while the machine's 1-minute load per CPU is\n"
    "                    above LOAD (2, 1.5 or 150%): an overloaded machine fails\n"
    "                    tests by timeouts, not bugs\n"
    "  --load-timeout D  give up waiting after D (default 10m): exit 1\n"
    "\n"
    "Store: $WTPROXY_REGISTRY (a libpq URI or conninfo), else `registry =` in\n"
    "$WTPROXY_CONFIG, else the daemon's embedded store (this machine only).\n";

const char cli_usage_release[] =
    "usage: wtproxy release RESOURCE [--force] [--worktree DIR]\n"
    "\n"
    "Release this worktree's lease of RESOURCE; --force releases it whoever holds it.\n";

const char cli_usage_leases[] =
    "usage: wtproxy leases [--json]\n\nList the leases of the store in use.\n";

const char cli_usage_db[] =
    "usage: wtproxy db claim [--base NAME] [--dev NAME] [options]\n"
    "       wtproxy db release [--base NAME | --name DB] [--dev NAME] [--abandoned]\n"
    "       wtproxy db names [--base NAME] [--dev NAME] [--print-env]\n"
    "       wtproxy db template --base NAME [--migrations-dir DIR] [-- MIGRATE...]\n"
    "       wtproxy db copy --base NAME SUFFIX...\n"
    "       wtproxy db ls [--json]\n"
    "\n"
    "claim makes this worktree's databases exist on the database server and be\n"
    "ours: NAME_<machine>_<worktree> (slugs: lowercase, runs of other characters\n"
    "one '_'; 8 bytes of the machine id, 20 of the folder name). Each is stamped\n"
    "COMMENT 'wtproxy:<machine>:<worktree>|<kind or migrations hash>'. A worktree\n"
    "of this machine whose folder is gone: reclaimed. Anyone else's: refused,\n"
    "naming the owner (--force takes it). Creators serialise on an advisory lock.\n"
    "  test (--base/--name): the name must contain \"test\", match ^[a-z0-9_]+$ and\n"
    "    leave room for \"_NN\" of parallel test workers within 63 bytes; dropped\n"
    "    and created again when the migrations hash changes.\n"
    "  dev (--dev/--dev-name): ^[a-z0-9_]+$, 63 bytes, never NAME itself; never\n"
    "    dropped for a migrations change (the dev server migrates forward): only\n"
    "    by release or --reset. --from DB creates it as a copy of DB.\n"
    "release drops only the exact databases stamped as ours (all of this\n"
    "worktree's kinds when no name is given); --abandoned: those of every\n"
    "worktree of this machine whose folder is gone. names prints the env a claim\n"
    "would give, touching no server. template claims a migrated template (runs\n"
    "MIGRATE with WTPROXY_TEMPLATE_DB and PGDATABASE naming it when it is\n"
    "new or its hash changed); copy makes <template>_<SUFFIX> afresh from it\n"
    "(CREATE DATABASE ... TEMPLATE). ls lists every database wtproxy stamped.\n"
    "Before a claim, template or copy, fewer than --min-free-connections free\n"
    "connections on the server: refused, naming who holds them.\n"
    "\n"
    "  --base NAME              the test database (or template), e.g. test_shop\n"
    "  --name DB                this exact test database name instead (same rules)\n"
    "  --dev NAME               the dev database, e.g. shop: shop_<machine>_<wt>\n"
    "  --dev-name DB            this exact dev database name instead\n"
    "  --from DB                create the dev database as a copy of DB (TEMPLATE)\n"
    "  --reset                  drop and create again even when it would be kept\n"
    "  --server URI             libpq URI or conninfo of the app's server\n"
    "                           (default $WTPROXY_DB_SERVER, else PG* variables)\n"
    "  --migrations-hash H      recreate a test database or template when it changes\n"
    "  --migrations-dir DIR     ... the SHA-256 of the files under DIR\n"
    "  --min-free-connections N refuse when fewer are free (default 5; 0: no check)\n"
    "  --force                  take a database stamped by another owner\n"
    "  --print-env              print the env: test only: WT_DB, WT_TEST_DB (both the\n"
    "                           test database), WT_BACKEND_PORT; with a dev database:\n"
    "                           WTPROXY_DEV_DB, WTPROXY_TEST_DB, WT_DB (the dev one),\n"
    "                           WT_TEST_DB, WT_BACKEND_PORT; template/copy:\n"
    "                           WTPROXY_TEMPLATE_DB, WTPROXY_COPY_DBS (space-\n"
    "                           separated)\n"
    "  --write-env FILE         write them to FILE (e.g. .env.wt), mode 0600\n"
    "  --abandoned              release: every worktree of this machine that is gone\n"
    "  --json                   ls: a JSON array\n"
    "  --worktree DIR           default: the git worktree enclosing the folder\n";

const char cli_usage_init[] =
    "usage: wtproxy init [DIR] [--apply] [--recipe url|port] [--front PORT]\n"
    "                    [--databases | --no-databases] [--json]\n"
    "\n"
    "Adopt wtproxy in an app's checkout (DIR, default: the worktree of the current\n"
    "folder). Detects the app (Django: manage.py and its settings module; Node:\n"
    "package.json with next, vite, or a `node FILE` script in scripts.dev/start) and\n"
    "its Playwright config, and prints as a unified diff exactly what it would\n"
    "change: a new .wtproxy (the start command with {port}, front from the\n"
    "baseURL's port), the whoami middleware as MIDDLEWARE's first entry, with\n"
    "--databases the claiming TEST_RUNNER and DATABASES = claimed_databases(...),\n"
    "and with recipe url the webServer command through `wtproxy run`. Every added\n"
    "line carries a comment saying why it must stay. A file that is not in the\n"
    "form it can edit safely (no literal `MIDDLEWARE = [`, a .wtproxy already\n"
    "there) is left alone with a note saying what to do by hand. A second run\n"
    "prints \"nothing to change\".\n"
    "\n"
    "  --apply          write those changes, and nothing else\n"
    "  --recipe R       url (webServer.command runs `wtproxy run`) or port (the\n"
    "                   config stays; .wtproxy starts the server); default: what\n"
    "                   the config's webServer uses\n"
    "  --front PORT     the front port (default: an existing .wtproxy's, else the\n"
    "                   Playwright baseURL's, else 8000)\n"
    "  --databases      add the dev-database edits (default: on when the settings\n"
    "                   use PostgreSQL)\n"
    "  --no-databases   leave DATABASES and TEST_RUNNER alone\n"
    "  --json           the plan (changes with their diffs, notes) as JSON\n";

const char cli_usage_doctor[] =
    "usage: wtproxy doctor [--front PORT] [--json]\n"
    "\n"
    "Check this worktree's setup and print each check as ok or problem, with the\n"
    "one command that fixes it: the daemon is up and owns the front port (else who\n"
    "holds it); this worktree is known and has a .wtproxy or a registered server;\n"
    "that server answers /__whoami with this checkout and its current fingerprint;\n"
    "the inotify limits against this tree's folders; the Playwright config's\n"
    "recipe; this worktree's leases and test databases, and the database server's\n"
    "connection headroom; the load per CPU. A check that cannot run (no daemon, no\n"
    "PostgreSQL) says so and the others still run; each is bounded in time.\n"
    "\n"
    "  --front PORT     the front port (default: the .wtproxy's, else the one port the\n"
    "                   daemon listens on, else 8000)\n"
    "  --json           {\"ok\": bool, \"checks\": [{\"name\", \"status\", \"detail\", "
    "\"fix\"}]}\n";

const char cli_usage_mcp[] =
    "usage: wtproxy mcp [--worktree DIR] [--front PORT]\n"
    "\n"
    "The agent interface: a Model Context Protocol server on stdin/stdout (one\n"
    "JSON-RPC 2.0 message a line; messages for people on stderr), for a coding\n"
    "agent to start. Its tools: servers (this worktree's dev servers and their\n"
    "state), why (where a process's or a folder's requests go, and why),\n"
    "refusals (what wtproxy refused lately), logs (a server's last lines),\n"
    "restart (this worktree's server), claim and release (leases). Every call\n"
    "is about this worktree; the read-only ones may name another, the others\n"
    "refuse another worktree's servers. Ends at EOF on stdin. How to register\n"
    "it with Claude Code, Codex, Gemini CLI and Cursor: conf/MCP.md.\n"
    "\n"
    "  --worktree DIR    default: the git worktree enclosing the current folder\n"
    "  --front PORT      the tools' default proxy port (default 8000)\n"
    "\n"
    "example: claude mcp add wtproxy -- wtproxy mcp\n";

const char cli_usage_logs[] =
    "usage: wtproxy logs [WORKTREE] [--service NAME] [--front PORT] [-n N] [-f]\n"
    "\n"
    "Print the last lines of the log of a worktree's server: what its command\n"
    "printed (wtproxy run and on-demand servers keep one under the state\n"
    "folder's servers/; ls --json names it as \"log\"). Once no server of the\n"
    "worktree is registered (it exited, or died at start), its last log. A log\n"
    "past 16 MiB ($WTPROXY_LOG_MAX_BYTES) is renamed to LOG.1 and a new one\n"
    "started: the last lines are read across it, and -f follows on into the new file\n"
    "(when it rotated more than twice in 200 ms, -f says how many bytes it missed).\n"
    "\n"
    "  WORKTREE          default: the git worktree enclosing the current folder\n"
    "  --service NAME    the server of that service, when the worktree has several\n"
    "  --front PORT      the server of that front port, when the worktree has several\n"
    "  -n N, --lines N   the last N lines (default 50)\n"
    "  -f, --follow      then print what it appends, until interrupted (as tail -F)\n";

const char cli_usage_restart[] =
    "usage: wtproxy restart [WORKTREE] [--service NAME] [--front PORT]\n"
    "\n"
    "Restart a worktree's servers (every one, or that service's or front's) on\n"
    "the same port, and wait until they are ready again; requests wait for them\n"
    "meanwhile. Only servers started by wtproxy run (or on demand from .wtproxy)\n"
    "can be restarted. A server that does not come back is named, with the last\n"
    "lines of its log.\n"
    "\n"
    "  WORKTREE          default: the git worktree enclosing the current folder\n"
    "  --service NAME    only that service's server\n"
    "  --front PORT      only the server of that front port\n";

const char cli_usage_stop[] =
    "usage: wtproxy stop [WORKTREE] [--service NAME] [--front PORT]\n"
    "\n"
    "Stop a worktree's servers (every one, or that service's or front's): their\n"
    "wtproxy run wrapper stops the server's whole process tree (SIGTERM, SIGKILL\n"
    "after 5 s) and unregisters it. Waits until they are gone.\n"
    "\n"
    "  WORKTREE          default: the git worktree enclosing the current folder\n"
    "  --service NAME    only that service's server\n"
    "  --front PORT      only the server of that front port\n";
