/* fuzz_config.c - the config file parser (proxy/config.c): the input is a
 * config file, read by proxy_config_load_file from a memfd. Checked: a
 * refusal always says where ("FILE:LINE: ..."), and a file that loads
 * leaves a config inside the limits the key table promises. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void violated(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz invariant violated: %s: %s\n", what, detail);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("wtproxy.conf", 0);
        if (fd < 0) {
            perror("memfd_create");
            abort();
        }
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size) {
        perror("memfd write");
        abort();
    }
    struct proxy_config c;
    char err[1024] = "";
    proxy_config_defaults(&c);
    if (proxy_config_load_file(&c, path, err, sizeof err) < 0) {
        if (strncmp(err, path, strlen(path)) != 0)
            violated("a refusal that does not name the file", err);
        return 0;
    }
    if (c.nlisten < 1 || c.nlisten > WTP_MAX_LISTEN)
        violated("listener count out of range", c.backend);
    for (int i = 0; i < c.nlisten; i++)
        if (c.listen[i].port < 0 || c.listen[i].port > 65535 ||
            !memchr(c.listen[i].host, '\0', sizeof c.listen[i].host))
            violated("a listener out of range", c.listen[i].host);
    if (c.max_header_count < 1 || c.max_header_count > WTP_FIELDS_CAP || c.max_head_size < 1 ||
        c.buffer_size < 1 || !memchr(c.backend, '\0', sizeof c.backend) ||
        !memchr(c.state_file, '\0', sizeof c.state_file))
        violated("a value out of its key's range", c.backend);
    return 0;
}
