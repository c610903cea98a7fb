/* main.c - `wtproxy`: subcommand dispatch. */
#include <stdio.h>
#include <string.h>

#include "registry.h"
#include "server.h"
#include "whoami.h"
#include "why.h"

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
            "  run        run this worktree's dev server and route to it: run -- CMD {port}\n"
            "  register   route to a dev server started some other way\n"
            "  unregister stop routing to this worktree's dev server\n"
            "  ls         list the registered dev servers\n"
            "  dashboard  print the URL of the live dashboard (/__wtproxy/)\n"
            "  why        explain where a process's requests are routed, and why\n"
            "  fingerprint the code fingerprint a dev server's /__whoami reports\n"
            "  claim      lease a named resource: claim RESOURCE --ttl D | -- CMD\n"
            "  release    release a lease: release RESOURCE\n"
            "  leases     list the leases\n"
            "  db         this worktree's test database: db claim --base test_shop\n"
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
    if (strcmp(cmd, "why") == 0)
        return proxy_why_main(argc - 1, argv + 1);
    if (strcmp(cmd, "fingerprint") == 0)
        return whoami_fingerprint_main(argc - 1, argv + 1);
    if (strcmp(cmd, "run") == 0 || strcmp(cmd, "register") == 0 ||
        strcmp(cmd, "unregister") == 0 || strcmp(cmd, "ls") == 0 ||
        strcmp(cmd, "dashboard") == 0 ||
        strcmp(cmd, "claim") == 0 || strcmp(cmd, "release") == 0 || strcmp(cmd, "leases") == 0 ||
        strcmp(cmd, "db") == 0)
        return reg_cli_main(argc - 1, argv + 1);
    fprintf(stderr, "wtproxy: unknown command \"%s\" (see wtproxy --help)\n", cmd);
    return 2;
}
