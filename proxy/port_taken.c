/* port_taken.c - see port_taken.h. The facts come from host/; the words
 * (and the `wtproxy serve` hint) are the daemon's. */
#include "port_taken.h"

#include <stdio.h>

#include "host.h"

void proxy_port_taken(const char *addr, int port, char *buf, size_t len)
{
    struct host_port_owner o;
    char on[96] = "";
    int other = port < 65535 ? port + 1 : port - 1;

    if (addr && addr[0])
        snprintf(on, sizeof on, " on %s", addr);
    /* cmdline and cwd are cut short so that the hints after them fit in a
     * 1 KiB message, however long the holder's arguments. */
    if (host_port_owner_find(port, &o) && o.pid > 0)
        snprintf(buf, len,
                 "port %d%s is already in use by pid %ld%s%.200s%s%s%.500s; "
                 "stop it with `kill %ld`, or serve another port: wtproxy serve --listen %d",
                 port, on, (long)o.pid, o.cmdline[0] ? " (" : "", o.cmdline,
                 o.cmdline[0] ? ")" : "", o.cwd[0] ? ", cwd " : "", o.cwd, (long)o.pid, other);
    else
        snprintf(buf, len,
                 "port %d%s is already in use by a process this user cannot see; find it with "
                 "`ss -ltnp 'sport = :%d'` (as root to see every process), or serve another "
                 "port: wtproxy serve --listen %d",
                 port, on, port, other);
}
