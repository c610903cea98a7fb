/* main.c - `wtproxy`: the table of subcommands and main, which dispatches
 * through it. Each command is written here once: its name, its line in
 * `wtproxy --help`, its help (what both `wtproxy CMD --help` and `wtproxy
 * help CMD` print) and its exit statuses, with the handler that runs it.
 * A handler asked for help returns CLI_HELP and main prints the table's
 * text, so the two ways to ask cannot drift apart. The help texts
 * themselves are usage.c's. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "host.h"
#include "server.h"
#include "topics.h"
#include "usage.h"

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
    {"run", "run this worktree's dev server and route to it: run -- CMD {port}", cli_usage_run,
     NULL, cli_run_main,
     "CMD's status (128+N when signal N ended it)\n" NO_DAEMON
     ", or CMD could not be started\n" USAGE_ERR
     ", or the .wtproxy's services are on several fronts and CMD is none's start"},
    {"register", "route to a dev server started some other way", cli_usage_register, NULL,
     cli_register_main,
     "0 registered: verified, trusted, not checked, or not answering yet\n" NO_DAEMON
     ", or the /__whoami gate refuses the registered server (it stays registered)\n" USAGE_ERR
     ", or the .wtproxy's services are on several fronts and none is named"},
    {"unregister", "stop routing to this worktree's dev server", cli_usage_unregister, NULL,
     cli_unregister_main,
     "0 unregistered\n"
     "1 nothing was registered, or the daemon refused or cannot be reached\n" USAGE_ERR
     ", or the .wtproxy's services are on several fronts and none is named"},
    {"ls", "list the registered dev servers", cli_usage_ls, NULL, cli_ls_main,
     "0 listed\n" NO_DAEMON "\n" USAGE_ERR},
    {"logs", "print (or follow, -f) the log of this worktree's dev server", cli_usage_logs, NULL,
     cli_logs_main,
     "0 printed (with -f: interrupted)\n"
     "1 nothing registered, no log, or no daemon answers\n"
     "2 bad usage, or several servers match (choose with --service or --front)"},
    {"refusals", "what wtproxy refused lately of this worktree's requests, with each fix",
     cli_usage_refusals, NULL, cli_refusals_main,
     "0 printed (none, too)\n" NO_DAEMON "\n" USAGE_ERR},
    {"restart", "restart this worktree's dev servers and wait until they are ready",
     cli_usage_restart, NULL, cli_restart_main,
     "0 restarted and ready (verified, when the daemon checks /__whoami)\n"
     "1 refused (not wtproxy run's, not yours, none), a server did not come back, one "
     "came back stale or refused by /__whoami, no daemon\n" USAGE_ERR},
    {"stop", "stop this worktree's dev servers", cli_usage_stop, NULL, cli_stop_main,
     "0 stopped (--daemon: also when none ran)\n"
     "1 refused (not wtproxy run's, not yours, none), still running, or no daemon; --daemon: "
     "still running, or under systemd\n" USAGE_ERR},
    {"dashboard", "print the URL of the live dashboard (/__wtproxy/)", cli_usage_dashboard, NULL,
     cli_dashboard_main, "0 printed\n" NO_DAEMON ", or did not say where it listens\n" USAGE_ERR},
    {"why", "explain where a process's requests are routed, and why", cli_usage_why, NULL,
     cli_why_main,
     "0 placed, with a backend\n"
     "1 not placed, no backend, no such process, or no daemon answers\n" USAGE_ERR},
    {"fingerprint", "the code fingerprint a dev server's /__whoami reports", cli_usage_fingerprint,
     NULL, cli_fingerprint_main,
     "0 printed\n1 the folder cannot be read, or --unknown-after-start's process does not "
     "run\n" USAGE_ERR},
    {"claim", "lease a named resource: claim RESOURCE --ttl D | -- CMD", cli_usage_claim, NULL,
     cli_claim_main,
     "0 claimed\n"
     "1 held by another, the store failed, or the load stayed above --max-load\n" USAGE_ERR "\n"
     "with -- CMD: CMD's status (128+N when signal N ended it)"},
    {"release", "release a lease: release RESOURCE", cli_usage_release, NULL, cli_release_main,
     "0 released\n1 not held, held by another, or the store failed\n" USAGE_ERR},
    {"leases", "list the leases", cli_usage_leases, NULL, cli_leases_main,
     "0 listed\n1 the store failed\n" USAGE_ERR},
    {"db", "this worktree's databases: db claim --base test_shop --dev shop", cli_usage_db, NULL,
     cli_db_main, "0 done\n1 refused (naming the owner), or failed\n" USAGE_ERR},
    {"init", "adopt wtproxy in an app: print (or --apply) the edits", cli_usage_init, NULL,
     cli_init_main,
     "0 printed, applied, or nothing to change\n"
     "1 a file could not be written (nothing else was)\n"
     "2 bad usage, or an app layout it does not know (subfolder apps only: it names their inits)"},
    {"doctor", "check this worktree's setup: ok or problem, with the fix", cli_usage_doctor, NULL,
     cli_doctor_main, "0 every check ok\n1 a check found a problem\n" USAGE_ERR},
    {"mcp", "the agent interface: an MCP server on stdio (tools for agents)", cli_usage_mcp, NULL,
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

/* The commands and their summaries, the summaries in one column past the
 * longest name. */
static void list(FILE *f)
{
    int width = 0;
    for (size_t i = 0; i < NCOMMANDS; i++)
        if ((int)strlen(commands[i].name) > width)
            width = (int)strlen(commands[i].name);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-*s %s\n", width, commands[i].name, commands[i].summary);
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
          "  help TOPIC     a guide (below)\n"
          "  help --list    the commands' names, one a line\n"
          "  help --topics  the guides' names, one a line\n"
          "  --version      print the version and build (the git commit it was built from)\n"
          "\n"
          "guides:\n",
          f);
    cli_topics_list(f, 1);
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
    fprintf(stderr, "wtproxy: unknown command \"%s\" (see wtproxy --help); the commands:\n", name);
    list(stderr);
    return 2;
}

/* `wtproxy help NAME` for no command and no guide: both lists. */
static int unknown_help(const char *name)
{
    unknown(name);
    fputs("and the guides (wtproxy help TOPIC):\n", stderr);
    cli_topics_list(stderr, 1);
    return 2;
}

/* `wtproxy help [CMD | TOPIC | --list | --topics]`: the overview, CMD's
 * help, a guide (topics.c), or the command or guide names one per line
 * (for scripts and tests that walk the table; doc/ makes a manual of each
 * command --list names). */
static int help(int argc, char **argv)
{
    if (argc < 3) {
        usage(stdout);
        return 0;
    }
    if (argc > 3) {
        fprintf(stderr, "wtproxy help: give one command or guide (see wtproxy --help)\n");
        return 2;
    }
    if (strcmp(argv[2], "--list") == 0) {
        for (size_t i = 0; i < NCOMMANDS; i++)
            printf("%s\n", commands[i].name);
        return 0;
    }
    if (strcmp(argv[2], "--topics") == 0) {
        cli_topics_list(stdout, 0);
        return 0;
    }
    const struct command *c = find(argv[2]);
    if (c)
        help_of(c, stdout);
    else if (cli_topic_print(argv[2], stdout) < 0)
        return unknown_help(argv[2]);
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
        printf("wtproxy %s\n", host_build());
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
