/* py_probe.c - ask a Python interpreter a question in a child: whether it
 * imports a module, where it lives. doctor checks the interpreter a start
 * line runs; init picks the one it writes. The child runs in its own
 * process group, killed with it when it hangs (an import that blocks). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app.h"

int cli_py_probe(const char *dir, const char *prefix, const char *code, char *out, size_t len)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s -c '%s' 2>/dev/null", prefix, code);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        dup2(fds[1], 1);
        if (chdir(dir) == 0)
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t got = 0;
    struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
    int timed_out = 0;
    while (pid > 0 && got + 1 < len) {
        int r = poll(&pfd, 1, CLI_PY_PROBE_MS);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            timed_out = 1;
            break;
        }
        ssize_t n = read(fds[0], out + got, len - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fds[0]);
    out[got] = '\0';
    out[strcspn(out, "\n")] = '\0';
    if (pid < 0)
        return -1;
    if (timed_out)
        kill(-pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
