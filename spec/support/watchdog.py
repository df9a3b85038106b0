"""spec/support/watchdog.py OWNER SERVER SIGNAL GRACE [DIR]: stops a test server when the spec
process that started it is gone.

The servers of the specs (PostgreSQL, redis-server, the SMTP sink) are stopped by the spec
process itself: by the spec, or by a __gc sentinel when its Lua state closes. A `zever test`
killed by a signal (SIGTERM from a CI timeout, ^C) closes no state, so nothing stopped them.
This process is started detached (its own session) next to each server: it waits, without
polling, on pidfds of both processes (Linux 5.3+). When SERVER exits first (the normal stop),
it exits. When OWNER exits first, it sends SIGNAL to SERVER (PostgreSQL: INT, a fast shutdown;
redis: TERM), SIGKILL after GRACE seconds, and removes DIR (the server's temporary folder) once
SERVER is gone. Once it watches, it writes DIR/watchdog.SERVER (its own PID).

It must not signal anything else: it signals SERVER through its pidfd, which names the process
it was opened for even if the PID is reused, and it gives up (exit 0) when either process is
already gone at start.
"""
import os
import select
import shutil
import signal
import sys


def pidfd(pid):
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        return None


def main():
    owner, server, signame, grace = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    folder = sys.argv[5] if len(sys.argv) > 5 else None
    try:
        os.setsid()  # not in the spec run's process group: a ^C there does not reach it
    except OSError:
        pass
    ofd, sfd = pidfd(owner), pidfd(server)
    if ofd is None or sfd is None:
        return 0
    if folder:
        try:
            with open(os.path.join(folder, "watchdog.%d" % server), "w") as f:
                f.write("%d\n" % os.getpid())
        except OSError:
            pass  # the folder is gone: the server is being stopped
    poller = select.poll()
    poller.register(ofd, select.POLLIN)
    poller.register(sfd, select.POLLIN)
    ready = {fd for fd, _ in poller.poll()}
    if sfd in ready:
        return 0  # the server stopped first: the spec process stopped it
    try:
        signal.pidfd_send_signal(sfd, getattr(signal, "SIG" + signame))
        if not select.select([sfd], [], [], grace)[0]:
            signal.pidfd_send_signal(sfd, signal.SIGKILL)
            select.select([sfd], [], [], 10)
    except ProcessLookupError:
        pass
    if folder and os.path.basename(folder).startswith("zever-"):
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
