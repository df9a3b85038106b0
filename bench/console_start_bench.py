#!/usr/bin/env python3
"""bench/console_start_bench.py: zever console's start, from exec to the first prompt on a
terminal, as a user sees it.

    python3 bench/console_start_bench.py [ROUNDS] [APP]   (default 30; bin/zever of this tree,
    or the binary $ZEVER names: another checkout's, for a side-by-side run)

Makes an app with `zever new` in a temporary folder (or uses APP), then ROUNDS times: forks on a
pseudo-terminal (Python's pty), execs `zever console` in the app folder, and times the moment
the prompt "zever> " has been read back from the terminal; then sends Ctrl-D and waits for the
process to exit. Two warm-up rounds are not counted. Prints each time and the median, min and
max in ms, and the child's CPU time (user + system, from wait4), with the load average
before and after. Each child is reaped by its own PID.
"""
import os
import pty
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HOME = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZEVER = os.environ.get("ZEVER") or os.path.join(HOME, "bin", "zever")
PROMPT = b"zever> "


def one(app):
    """Seconds from fork to the first prompt, and the child's CPU seconds (user + system, the
    whole run: start, prompt, Ctrl-D, exit), which waiting for a core does not inflate."""
    t0 = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(app)
        os.environ["TERM"] = "xterm"
        os.environ.pop("NO_COLOR", None)
        os.execv(ZEVER, [ZEVER, "console"])
    out = b""
    took = None
    deadline = t0 + 10
    while took is None:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise SystemExit("no prompt in 10 s; got %r" % out[-200:])
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                os.waitpid(pid, 0)
                raise SystemExit("console exited before its prompt: %r" % out[-400:])
            out += chunk
            if PROMPT in out:
                took = time.monotonic() - t0
    os.write(fd, b"\x04")
    # Drain until the terminal closes, then reap the child.
    while True:
        r, _, _ = select.select([fd], [], [], 5)
        if not r:
            break
        try:
            if not os.read(fd, 4096):
                break
        except OSError:
            break
    _, _, ru = os.wait4(pid, 0)
    os.close(fd)
    return took, ru.ru_utime + ru.ru_stime


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    root = None
    if len(sys.argv) > 2:
        app = os.path.abspath(sys.argv[2])
    else:
        root = tempfile.mkdtemp(prefix="zever-console-bench-")
        app = os.path.join(root, "app")
        subprocess.run([ZEVER, "new", app], check=True, stdout=subprocess.DEVNULL)
    try:
        load0 = os.getloadavg()
        for _ in range(2):
            one(app)
        times, cpus = [], []
        for i in range(rounds):
            took, cpu = one(app)
            times.append(took * 1000)
            cpus.append(cpu * 1000)
            print("round %2d: %.1f ms (cpu %.1f ms)" % (i + 1, times[-1], cpus[-1]))
        load1 = os.getloadavg()
        print("console start to first prompt: median %.1f ms, min %.1f, max %.1f (%d rounds)"
              % (statistics.median(times), min(times), max(times), rounds))
        print("its cpu time (user + system, start to exit): median %.1f ms, min %.1f"
              % (statistics.median(cpus), min(cpus)))
        print("load average before %.2f %.2f %.2f, after %.2f %.2f %.2f" % (load0 + load1))
    finally:
        if root:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
