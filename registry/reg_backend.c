/* reg_backend.c - the backend model: parse, resolve once, count, refcount. */
#include "registry.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int reg_split_hostport(const char *s, char *host, size_t hostlen, int *port)
{
    const char *colon, *hstart = s, *hend;
    if (*s == '[') {
        hend = strchr(s, ']');
        if (!hend || hend[1] != ':')
            return -1;
        hstart = s + 1;
        colon = hend + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return -1;
        hend = colon;
    }
    size_t n = (size_t)(hend - hstart);
    if (n == 0 || n >= hostlen)
        return -1;
    memcpy(host, hstart, n);
    host[n] = '\0';
    char *end;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || p < 0 || p > 65535)
        return -1;
    *port = (int)p;
    return 0;
}

struct reg_backend *reg_backend_new(const char *hostport, char *err, size_t errlen)
{
    char host[256], portstr[8];
    int port;
    if (reg_split_hostport(hostport, host, sizeof host, &port) < 0 || port == 0) {
        snprintf(err, errlen, "backend \"%s\" is not HOST:PORT (e.g. 127.0.0.1:8001)", hostport);
        return NULL;
    }
    snprintf(portstr, sizeof portstr, "%d", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "backend \"%s\": cannot resolve %s: %s", hostport, host,
                 gai_strerror(rc));
        return NULL;
    }
    struct reg_backend *b = calloc(1, sizeof *b);
    if (!b) {
        freeaddrinfo(res);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(b->name, sizeof b->name, "%s", hostport);
    memcpy(&b->addr, res->ai_addr, res->ai_addrlen);
    b->addrlen = res->ai_addrlen;
    b->refs = 1;
    b->start_load_pct = -1;
    freeaddrinfo(res);
    return b;
}

void reg_backend_set_port(struct reg_backend *b, int port)
{
    char host[256];
    int old;
    if (reg_split_hostport(b->name, host, sizeof host, &old) == 0)
        snprintf(b->name, sizeof b->name, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    if (b->addr.ss_family == AF_INET)
        ((struct sockaddr_in *)&b->addr)->sin_port = htons((uint16_t)port);
    else if (b->addr.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&b->addr)->sin6_port = htons((uint16_t)port);
    b->port = port;
}

struct reg_backend *reg_backend_ref(struct reg_backend *b)
{
    if (b)
        b->refs++;
    return b;
}

void reg_backend_unref(struct reg_backend *b)
{
    if (!b || --b->refs > 0)
        return;
    if (b->gate_release)
        b->gate_release(b->gate);
    free(b);
}

int reg_service_name_ok(const char *name, char *err, size_t errlen)
{
    size_t n = strlen(name);
    int good = n > 0 && n < REG_SERVICE_MAX && name[0] != '-' && name[0] != '_';
    for (size_t i = 0; good && i < n; i++)
        good = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
               name[i] == '-' || name[i] == '_';
    if (!good)
        snprintf(err, errlen,
                 "the service name \"%.64s\" is not 1-%d of a-z, 0-9, '-' and '_' "
                 "starting with a letter or digit",
                 name, REG_SERVICE_MAX - 1);
    return good;
}
