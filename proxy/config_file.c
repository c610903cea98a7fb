/* config_file.c - the config file: `key = value` lines, comments, and the
 * file's listen lines replacing the default listener. Apart from the
 * values (config_value.c) because a line's grammar is not a value's.
 *
 * File grammar, one setting per line (a line is at most MAX_LINE bytes):
 *   line     = *WSP [ key *WSP "=" *WSP value *WSP ] [ comment ]
 *   comment  = "#" *CHAR        ; at line start, or after whitespace */
#include "config_int.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#define MAX_LINE 4096 /* longest config file line, newline excluded */

/* Cut s to its first and last non-space characters, in place. */
static char *trim(char *s)
{
    size_t n;

    while (isspace((unsigned char)*s))
        s++;
    n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    s[n] = '\0';
    return s;
}

/* Apply one line of a config file (its newline included or not). The
 * first listen line empties the listener list, so the file's listeners
 * replace the defaults. Returns 0, or -1 with err (no FILE:LINE prefix). */
static int apply_line(struct proxy_config *c, char *line, int *listen_seen, char *err,
                      size_t errlen)
{
    size_t n = strlen(line);
    char *key, *eq;

    if (n > 0 && line[n - 1] == '\n')
        line[--n] = '\0';
    if (n > MAX_LINE) {
        snprintf(err, errlen, "line is longer than %d bytes", MAX_LINE);
        return -1;
    }
    for (char *p = line; *p; p++) {
        if (*p == '#' && (p == line || isspace((unsigned char)p[-1]))) {
            *p = '\0';
            break;
        }
    }
    key = trim(line);
    if (*key == '\0')
        return 0;
    eq = strchr(key, '=');
    if (!eq || eq == key) {
        snprintf(err, errlen, "expected \"key = value\", got \"%s\"", key);
        return -1;
    }
    *eq = '\0';
    key = trim(key);
    if (strcmp(key, "listen") == 0 && !(*listen_seen)++)
        c->nlisten = 0;
    return proxy_config_set(c, key, trim(eq + 1), err, errlen);
}

int proxy_config_load_file(struct proxy_config *c, const char *path, char *err, size_t errlen)
{
    char line[MAX_LINE + 2], msg[512]; /* + 2: the newline, the NUL */
    int lineno = 0, listen_seen = 0, rc = -1;
    FILE *f;

    if (strlen(path) >= sizeof c->config_path) {
        snprintf(err, errlen, "config file path is too long: %.64s...", path);
        return -1;
    }
    f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read config file %s: %s", path, strerror(errno));
        return -1;
    }
    memcpy(c->config_path, path, strlen(path) + 1);
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (apply_line(c, line, &listen_seen, msg, sizeof msg) < 0) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno, msg);
            goto out;
        }
    }
    if (ferror(f)) {
        snprintf(err, errlen, "cannot read config file %s: %s", path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    fclose(f);
    return rc;
}
