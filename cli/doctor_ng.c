/* doctor_ng.c - the proxy config of an Angular dev server (`ng serve`),
 * for doctor's vite-proxy check: the file its start's --proxy-config
 * names, else angular.json's serve.options.proxyConfig. An agent pointed
 * `/api` at a port no service owned, where another worktree's API ran by
 * hand: its tests ran on that code and wrote into that worktree's
 * database, while doctor said "no Vite config". Read with jansson: a
 * plain JSON file (a proxy.conf.js, built in code, is not read). */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "doctor.h"

/* The --proxy-config value in start into out; 0 when it has none. */
static int flag_of(const char *start, char *out, size_t len)
{
    const char *p = strstr(start, "--proxy-config");
    if (!p)
        return 0;
    p += 14;
    p += *p == '=' ? 1 : strspn(p, " \t");
    size_t n = strcspn(p, " \t;&|'\"");
    if (n == 0 || n >= len)
        return 0;
    snprintf(out, len, "%.*s", (int)n, p);
    return 1;
}

/* angular.json's first project's serve.options.proxyConfig in dir. */
static int configured(const char *dir, char *out, size_t len)
{
    json_t *ng = cli_json_in(dir, "angular.json"), *project;
    const char *name, *file = NULL;
    json_object_foreach(json_object_get(ng, "projects"), name, project) {
        json_t *serve = json_object_get(json_object_get(project, "architect"), "serve");
        file = json_string_value(json_object_get(json_object_get(serve, "options"), "proxyConfig"));
        if (file)
            break;
    }
    int ok = file && snprintf(out, len, "%s", file) < (int)len;
    json_decref(ng);
    return ok;
}

/* Whether start runs the Angular CLI: a word ng, or one ending in /ng. */
static int runs_ng(const char *start)
{
    for (const char *p = start; *p;) {
        p += strspn(p, " \t");
        size_t n = strcspn(p, " \t");
        if ((n == 2 && strncmp(p, "ng", 2) == 0) || (n > 3 && strncmp(p + n - 3, "/ng", 3) == 0))
            return 1;
        p += n;
    }
    return 0;
}

int doc_ng_proxy_ports(const char *dir, const char *start, int *ports, int max, char *name,
                       size_t len)
{
    char file[512];
    if (!runs_ng(start))
        return 0;
    if (!flag_of(start, file, sizeof file) && !configured(dir, file, sizeof file))
        return 0;
    json_t *conf = cli_json_in(dir, file), *entry;
    const char *path;
    int n = 0;
    snprintf(name, len, "%s", file);
    json_object_foreach(conf, path, entry) {
        const char *target = json_string_value(json_object_get(entry, "target"));
        int port = target ? cli_url_port(target) : 0;
        if (port > 0 && n < max)
            ports[n++] = port;
    }
    json_decref(conf);
    return n;
}
