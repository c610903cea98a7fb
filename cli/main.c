/* main.c - `wtproxy`: the table of subcommands and main, which dispatches
 * through it. Each command is written here once: its name, its line in
 * `wtproxy --help`, its help (what both `wtproxy CMD --help` and `wtproxy
 * help CMD` print) and its exit statuses, with the handler that runs it.
 * A handler asked for help returns CLI_HELP and main prints the table's
 * text, so the two ways to ask cannot drift apart. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "server.h"

static const char run_usage[] =
    "usage: wtproxy run [--front PORT] [--worktree DIR] [--service NAME] [--health /PATH]\n"
    "                   [--restart-on-stale] [--no-autostart] -- CMD ARGS...\n"
    "\n"
    "Run this worktree's dev server on a port the daemon reserves, and route the\n"
    "front port's requests for this worktree to it. Every {port} in ARGS becomes\n"
    "that port; PORT, WTPROXY_PORT and WTPROXY_WORKTREE are set (WTPROXY_SERVICE\n"
    "too, with --service). Exits with CMD's status.\n"
    "\n"
    "  --front PORT      the proxy port it serves (default 8000)\n"
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

static const char register_usage[] =
    "usage: wtproxy register --port P (--pid PID | --ttl DURATION) [options]\n"
    "\n"
    "Register a dev server started some other way, so the proxy routes this\n"
    "worktree's requests to it. It is registered ready at once.\n"
    "\n"
    "  --port P          the port the server listens on (required)\n"
    "  --pid PID         the server's pid: the entry goes when it exits\n"
    "  --ttl DURATION    how long the entry lives (30s, 10m, 2h, 1d); required\n"
    "                    without --pid\n"
    "  --front PORT      the proxy port it serves (default 8000)\n"
    "  --worktree DIR    default: the git worktree enclosing the current folder\n"
    "  --host H          the server's address (default 127.0.0.1)\n"
    "  --service NAME    the `.wtproxy` service this server is (a-z, 0-9, -, _)\n"
    "  --no-autostart    fail instead of starting a daemon when none answers\n";

static const char unregister_usage[] =
    "usage: wtproxy unregister [--worktree DIR] [--front PORT]\n"
    "\n"
    "Remove this worktree's entry (yours, or any as root).\n"
    "\n"
    "  --worktree DIR    default: the git worktree enclosing the current folder\n"
    "  --front PORT      default 8000\n";

static const char ls_usage[] =
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

static const char dashboard_usage[] =
    "usage: wtproxy dashboard [--no-autostart]\n"
    "\n"
    "Print the URL of the dashboard (/__wtproxy/ on every front port): the\n"
    "registered dev servers, their state and what wtproxy refused lately,\n"
    "live. Open it in a browser on this machine.\n"
    "\n"
    "  --no-autostart    fail instead of starting a daemon when none answers\n";

static const char why_usage[] =
    "usage: wtproxy why [--pid PID] [--front PORT]\n\n"
    "Explain which worktree the requests of process PID (default: this command,\n"
    "placed as a curl run here would be) are routed to, and why: the processes walked,\n"
    "the one that decided (WTPROXY_WORKTREE in its environment, or its cwd), the backend.\n";

static const char fingerprint_usage[] =
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

static const char claim_usage[] =
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

static const char release_usage[] =
    "usage: wtproxy release RESOURCE [--force] [--worktree DIR]\n"
    "\n"
    "Release this worktree's lease of RESOURCE; --force releases it whoever holds it.\n";

static const char leases_usage[] =
    "usage: wtproxy leases [--json]\n\nList the leases of the store in use.\n";

static const char db_usage[] =
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

static const char init_usage[] =
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

static const char doctor_usage[] =
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
    "  --front PORT     the front port (default: the .wtproxy's, else 8000)\n"
    "  --json           {\"ok\": bool, \"checks\": [{\"name\", \"status\", \"detail\", \"fix\"}]}\n";
static const char mcp_usage[] =
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
static const char logs_usage[] =
    "usage: wtproxy logs [WORKTREE] [--service NAME] [--front PORT] [-n N] [-f]\n"
    "\n"
    "Print the last lines of the log of a worktree's server: what its command\n"
    "printed (wtproxy run and on-demand servers keep one under the state\n"
    "folder's servers/; ls --json names it as \"log\").\n"
    "\n"
    "  WORKTREE          default: the git worktree enclosing the current folder\n"
    "  --service NAME    the server of that service, when the worktree has several\n"
    "  --front PORT      the server of that front port, when the worktree has several\n"
    "  -n N, --lines N   the last N lines (default 50)\n"
    "  -f, --follow      then print what it appends, until interrupted (as tail -F)\n";

static const char restart_usage[] =
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

static const char stop_usage[] =
    "usage: wtproxy stop [WORKTREE] [--service NAME] [--front PORT]\n"
    "\n"
    "Stop a worktree's servers (every one, or that service's or front's): their\n"
    "wtproxy run wrapper stops the server's whole process tree (SIGTERM, SIGKILL\n"
    "after 5 s) and unregisters it. Waits until they are gone.\n"
    "\n"
    "  WORKTREE          default: the git worktree enclosing the current folder\n"
    "  --service NAME    only that service's server\n"
    "  --front PORT      only the server of that front port\n";

/* `wtproxy serve`: the daemon (proxy/server.c), whose flags and help come
 * from the config key table (proxy/config.c). Help is answered here, like
 * every other command's. */
static int serve(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return CLI_HELP;
    return proxy_serve(argc - 1, argv + 1);
}

struct command {
    const char *name;
    const char *summary;               /* its line in wtproxy --help */
    const char *usage;                 /* its help; NULL: print_usage writes it */
    void (*print_usage)(FILE *out);    /* a help generated from a table of flags */
    int (*run)(int argc, char **argv); /* argv[0] is the name; the exit status */
    const char *exits;                 /* what each exit status means, one a line */
};

#define USAGE_ERR "2 bad usage"
#define NO_DAEMON "1 the daemon refused or cannot be reached"

static const struct command commands[] = {
    {"serve", "run the proxy daemon (wtproxy serve --help)", NULL, proxy_config_usage, serve,
     "0 stopped by SIGTERM or SIGINT\n"
     "1 it could not start (a port taken, the registry unreachable)\n"
     "2 bad usage or a bad config"},
    {"run", "run this worktree's dev server and route to it: run -- CMD {port}", run_usage,
     NULL, cli_run_main,
     "CMD's status (128+N when signal N ended it)\n"
     NO_DAEMON ", or CMD could not be started\n" USAGE_ERR},
    {"register", "route to a dev server started some other way", register_usage, NULL,
     cli_register_main, "0 registered\n" NO_DAEMON "\n" USAGE_ERR},
    {"unregister", "stop routing to this worktree's dev server", unregister_usage, NULL,
     cli_unregister_main,
     "0 unregistered\n"
     "1 nothing was registered, or the daemon refused or cannot be reached\n" USAGE_ERR},
    {"ls", "list the registered dev servers", ls_usage, NULL, cli_ls_main,
     "0 listed\n" NO_DAEMON "\n" USAGE_ERR},
    {"logs", "print (or follow, -f) the log of this worktree's dev server", logs_usage, NULL,
     cli_logs_main,
     "0 printed (with -f: interrupted)\n"
     "1 nothing registered, no log, or no daemon answers\n"
     "2 bad usage, or several servers match (choose with --service or --front)"},
    {"restart", "restart this worktree's dev servers and wait until they are ready",
     restart_usage, NULL, cli_restart_main,
     "0 restarted and ready\n"
     "1 refused (not wtproxy run's, not yours, none), a server did not come back, no daemon\n"
     USAGE_ERR},
    {"stop", "stop this worktree's dev servers", stop_usage, NULL, cli_stop_main,
     "0 stopped\n"
     "1 refused (not wtproxy run's, not yours, none), still running, or no daemon\n" USAGE_ERR},
    {"dashboard", "print the URL of the live dashboard (/__wtproxy/)", dashboard_usage, NULL,
     cli_dashboard_main,
     "0 printed\n" NO_DAEMON ", or did not say where it listens\n" USAGE_ERR},
    {"why", "explain where a process's requests are routed, and why", why_usage, NULL,
     cli_why_main,
     "0 placed, with a backend\n"
     "1 not placed, no backend, no such process, or no daemon answers\n" USAGE_ERR},
    {"fingerprint", "the code fingerprint a dev server's /__whoami reports", fingerprint_usage,
     NULL, cli_fingerprint_main, "0 printed\n1 the folder cannot be read\n" USAGE_ERR},
    {"claim", "lease a named resource: claim RESOURCE --ttl D | -- CMD", claim_usage, NULL,
     cli_claim_main,
     "0 claimed\n"
     "1 held by another, the store failed, or the load stayed above --max-load\n" USAGE_ERR "\n"
     "with -- CMD: CMD's status (128+N when signal N ended it)"},
    {"release", "release a lease: release RESOURCE", release_usage, NULL, cli_release_main,
     "0 released\n1 not held, held by another, or the store failed\n" USAGE_ERR},
    {"leases", "list the leases", leases_usage, NULL, cli_leases_main,
     "0 listed\n1 the store failed\n" USAGE_ERR},
    {"db", "this worktree's databases: db claim --base test_shop --dev shop", db_usage, NULL,
     cli_db_main, "0 done\n1 refused (naming the owner), or failed\n" USAGE_ERR},
    {"init", "adopt wtproxy in an app: print (or --apply) the edits", init_usage, NULL,
     cli_init_main,
     "0 printed, applied, or nothing to change\n"
     "1 a file could not be written (nothing else was)\n"
     "2 bad usage, or an app layout it does not know"},
    {"doctor", "check this worktree's setup: ok or problem, with the fix", doctor_usage,
     NULL, cli_doctor_main, "0 every check ok\n1 a check found a problem\n" USAGE_ERR},
    {"mcp", "the agent interface: an MCP server on stdio (tools for agents)", mcp_usage, NULL,
     cli_mcp_main, "0 stdin ended\n1 stdin could not be read\n" USAGE_ERR},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const struct command *find(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void list(FILE *f)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

static void usage(FILE *f)
{
    fputs("usage: wtproxy <command> [options]\n"
          "\n"
          "wtproxy owns your app's well-known port (default 8000) and relays each request\n"
          "to the dev server of the caller's git worktree.\n"
          "\n"
          "commands:\n",
          f);
    list(f);
    fputs("\n"
          "options:\n"
          "  -h, --help     this help\n"
          "  help CMD       the help of CMD (as wtproxy CMD --help)\n"
          "  help --list    the commands' names, one a line\n"
          "  --version      print the version\n",
          f);
}

/* The help of c: its usage, then its exit statuses. */
static void help_of(const struct command *c, FILE *f)
{
    if (c->usage)
        fputs(c->usage, f);
    else
        c->print_usage(f);
    fputs("\nexit status:\n", f);
    for (const char *line = c->exits, *nl; *line; line = nl + (*nl != '\0')) {
        nl = line + strcspn(line, "\n");
        fprintf(f, "  %.*s\n", (int)(nl - line), line);
    }
}

static int unknown(const char *name)
{
    fprintf(stderr, "wtproxy: unknown command \"%s\" (see wtproxy --help); the commands:\n",
            name);
    list(stderr);
    return 2;
}

/* `wtproxy help [CMD | --list]`: the overview, CMD's help, or the command
 * names one per line (for scripts and tests that walk the table). */
static int help(int argc, char **argv)
{
    if (argc < 3) {
        usage(stdout);
        return 0;
    }
    if (argc > 3) {
        fprintf(stderr, "wtproxy help: give one command (see wtproxy --help)\n");
        return 2;
    }
    if (strcmp(argv[2], "--list") == 0) {
        for (size_t i = 0; i < NCOMMANDS; i++)
            printf("%s\n", commands[i].name);
        return 0;
    }
    const struct command *c = find(argv[2]);
    if (!c)
        return unknown(argv[2]);
    help_of(c, stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "help") == 0)
        return help(argc, argv);
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("wtproxy %s\n", WTP_VERSION);
        return 0;
    }
    const struct command *c = find(name);
    if (!c)
        return unknown(name);
    int r = c->run(argc - 1, argv + 1);
    if (r == CLI_HELP || r == CLI_USAGE)
        help_of(c, r == CLI_HELP ? stdout : stderr);
    return r == CLI_HELP ? 0 : r == CLI_USAGE ? 2 : r;
}
