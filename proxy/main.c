/* main.c - `wtproxy`: subcommand dispatch. */
#include <stdio.h>
#include <string.h>

#include "server.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wtproxy <command> [options]\n"
            "\n"
            "wtproxy owns your app's well-known port (default 8000) and relays each request\n"
            "to the dev server of the caller's git worktree.\n"
            "\n"
            "commands:\n"
            "  serve      run the proxy daemon (wtproxy serve --help)\n"
            "\n"
            "options:\n"
            "  -h, --help     this help\n"
            "  --version      print the version\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("wtproxy %s\n", WTP_VERSION);
        return 0;
    }
    if (strcmp(cmd, "serve") == 0)
        return proxy_serve(argc - 2, argv + 2);
    fprintf(stderr, "wtproxy: unknown command \"%s\" (see wtproxy --help)\n", cmd);
    return 2;
}
