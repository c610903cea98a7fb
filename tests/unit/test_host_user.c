/* test_host_user.c - a uid's user name (host/user.c), read from the
 * passwd file alone: the entry whose third field is that uid, not one
 * whose name or group merely holds its digits; none for a uid without an
 * entry, a malformed line skipped, a name cut to the buffer. */
#include "../../host/user.c"

#include <unistd.h>

#include "tap.h"

static char got[64];

static void named(uid_t uid, int want_rc, const char *want, int line)
{
    got[0] = '\0';
    int rc = host_user_name(uid, got, sizeof got);
    if (!tap_ok(rc == want_rc && (rc < 0 || strcmp(got, want) == 0), __FILE__, line, "uid %u: %s",
                (unsigned)uid, want))
        printf("#   got %d: %s\n", rc, got);
}

int main(void)
{
    char path[] = "/tmp/wtproxy-test-passwd-XXXXXX";
    int fd = mkstemp(path);
    static const char text[] = "root:x:0:0:root:/root:/bin/bash\n"
                               "1000:x:1001:1000::/home/x:/bin/sh\n"
                               "broken line without fields\n"
                               "+::::::\n"
                               ":x:77:77::/:/bin/sh\n"
                               "alice:x:1000:1000:Alice,,,:/home/alice:/bin/bash\n"
                               "bob:x:10001:1000::/home/bob:/bin/bash";
    if (fd < 0 || write(fd, text, sizeof text - 1) != (ssize_t)(sizeof text - 1))
        return 1;
    close(fd);
    host_passwd_file = path;
    named(0, 0, "root", __LINE__);
    named(1000, 0, "alice", __LINE__);
    named(1001, 0, "1000", __LINE__);
    named(10001, 0, "bob", __LINE__); /* the last line, no newline */
    named(77, -1, "", __LINE__);      /* an entry without a name is no name */
    named(100, -1, "", __LINE__);
    char small[4];
    tap_is_int(host_user_name(1000, small, sizeof small), 0, __FILE__, __LINE__, "a long name");
    tap_is_str(small, "ali", __FILE__, __LINE__, "cut to the buffer");
    host_passwd_file = "/nonexistent/passwd";
    named(0, -1, "", __LINE__);
    unlink(path);
    return done_testing();
}
