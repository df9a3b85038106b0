/*
 * systemd.h: the service manager's protocols, written against the kernel (no libsystemd): the
 * sd_notify datagram (a message to the unix socket NOTIFY_SOCKET names), the journal check of
 * JOURNAL_STREAM, and the readiness count of worker threads. No Lua here (l_systemd_core.c
 * binds it as zever.systemd_core; lua/zever/systemd.lua is the front).
 */
#ifndef ZV_SYSTEMD_H
#define ZV_SYSTEMD_H

#include <stddef.h>
#include <stdint.h>

/*
 * Sends msg (len bytes, "READY=1", "WATCHDOG=1", ...) as one datagram to the socket at path: a
 * file path, or an abstract address when it starts with '@'. Returns 0, ZV_EINVAL (path empty,
 * relative or too long) or ZV_EIO (*err_no holds errno). Allocates nothing.
 */
int zv_systemd_notify(const char *path, const char *msg, size_t len, int *err_no);

/*
 * 1 when fd is the stream JOURNAL_STREAM names ("<device>:<inode>", both decimal), else 0:
 * systemd sets it for a service whose stdout/stderr is the journal, and a child that redirects
 * its stderr elsewhere keeps the variable but not the stream.
 */
int zv_systemd_is_stream(int fd, const char *journal_stream);

/*
 * Counts one arrival of generation gen, process-wide (worker threads call it once each after
 * they listen); returns 1 for the arrival that makes the count reach n, else 0. A new
 * generation restarts the count. Thread-safe.
 */
int zv_systemd_arrive(uint64_t gen, int n);

/*
 * The duties of PID 1 (zever serve as a container's first process): zv_systemd_reap() waits for
 * every child that has ended, its own or an orphan the kernel re-parented to it, without
 * blocking, and returns how many it reaped. zv_systemd_forward(sig) sends sig to every other
 * process of the PID namespace (kill(-1, sig)); returns 0 or ZV_EIO (none left, say).
 */
int zv_systemd_reap(void);
int zv_systemd_forward(int sig);

#endif
