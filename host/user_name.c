/* user_name.c - a uid as people read it, "uid 1000 (alice)", for messages
 * that say whose a daemon, a file or a port is on a machine several users
 * share. The name comes from NSS (getpwuid_r): /etc/passwd, or LDAP over
 * the network, so a daemon asks it once at start, never on its loop. */
#include "host.h"

#include <pwd.h>
#include <stdio.h>

void host_uid_words(uid_t uid, char *out, size_t len)
{
    struct passwd pw, *found = NULL;
    char buf[1024];
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found && found->pw_name[0])
        snprintf(out, len, "uid %u (%s)", (unsigned)uid, found->pw_name);
    else
        snprintf(out, len, "uid %u", (unsigned)uid);
}
