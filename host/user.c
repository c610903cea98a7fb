/* user.c - a uid's user name, for the messages that say whose something
 * is. Read from /etc/passwd only, never through NSS (getpwuid): the
 * daemon asks on its event loop, where an LDAP or sssd lookup could take
 * seconds, and /etc/passwd is one small local file. A user only NSS
 * knows is named by the caller with its uid alone. */
#include "host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *host_passwd_file = "/etc/passwd";

/* Whether line ("name:x:uid:...") is uid's entry; its name into buf. */
static int entry_of(const char *line, uid_t uid, char *buf, size_t len)
{
    const char *pw = strchr(line, ':');
    const char *id = pw ? strchr(pw + 1, ':') : NULL;
    char *end;
    if (!id || pw == line || id[1] < '0' || id[1] > '9')
        return 0;
    unsigned long v = strtoul(id + 1, &end, 10);
    if (*end != ':' || v != (unsigned long)uid)
        return 0;
    snprintf(buf, len, "%.*s", (int)(pw - line), line);
    return 1;
}

int host_user_name(uid_t uid, char *buf, size_t len)
{
    FILE *f = fopen(host_passwd_file, "re");
    char *line = NULL;
    size_t cap = 0;
    int found = 0;
    if (!f)
        return -1;
    while (!found && getline(&line, &cap, f) >= 0)
        found = entry_of(line, uid, buf, len);
    free(line);
    fclose(f);
    return found ? 0 : -1;
}

void host_uid_words(uid_t uid, char *buf, size_t len)
{
    char name[64];
    if (host_user_name(uid, name, sizeof name) == 0)
        snprintf(buf, len, "%s (uid %u)", name, (unsigned)uid);
    else
        snprintf(buf, len, "uid %u", (unsigned)uid);
}
