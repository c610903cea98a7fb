/* host.h - facts about this machine: its processes (/proc), its sockets
 * (sock_diag), its clocks. The bottom layer: it knows no event loop, no
 * registry and no HTTP, and every layer above asks it instead of reading
 * /proc or netlink itself (ARCHITECTURE.md).
 *
 * Everything here may block for microseconds to milliseconds (it reads
 * the kernel's files): the daemon calls the cheap ones (one /proc file,
 * one sock_diag lookup) from its loop, and the scans from worker threads. */
#ifndef WTP_HOST_H
#define WTP_HOST_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

/* --- processes (proc.c) --- */

/* Where /proc is ("/proc"); unit tests point it at a fake tree. */
extern const char *host_proc_dir;

/* Start time of pid (field 22 of /proc/PID/stat, clock ticks since boot),
 * 0 when it does not run or is a zombie. (pid, start) names one process. */
unsigned long long host_pid_start(pid_t pid);

/* The parent of pid (field 4 of /proc/PID/stat), 0 when unknown. */
pid_t host_pid_parent(pid_t pid);

/* A /proc entry name as a pid: all digits; 0 for anything else ("self",
 * "net", ...). */
long host_proc_pid(const char *name);

/* Read up to len - 1 bytes of path into buf, NUL-terminated. Returns the
 * count, or -1 when the file cannot be opened or read. */
ssize_t host_read_small_file(const char *path, char *buf, size_t len);

/* --- sockets (diag.c) --- */

struct host_diag; /* an open NETLINK_SOCK_DIAG socket; one per thread */

/* NULL with err filled ("NETLINK_SOCK_DIAG socket: ...") when the kernel
 * offers no sock_diag. */
struct host_diag *host_diag_open(char *err, size_t errlen);
void host_diag_close(struct host_diag *d);

/* The socket whose own address is local and whose peer is peer (IPv4 or
 * IPv6; an IPv4-mapped IPv6 address is asked as IPv4); with peer NULL, the
 * listener that accepts connections to local. Returns 0 with *inode and
 * *uid, or -1 when the kernel has no such socket or reports inode 0 (a
 * connection already closing: unknown, never a guess). About 4 µs. */
int host_diag_socket(struct host_diag *d, const struct sockaddr *local,
                     const struct sockaddr *peer, unsigned long *inode, uid_t *uid);

/* --- clocks (clock.c) --- */

/* Unix time in milliseconds (CLOCK_REALTIME): for what is stored or shown. */
long long host_wall_ms(void);

/* Milliseconds on CLOCK_MONOTONIC: for durations and deadlines, which a
 * wall-clock step must not stretch or cut. */
long long host_mono_ms(void);

#endif
