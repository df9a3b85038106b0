#!/usr/bin/env python3
"""spec/support/pty_run.py: runs a command on a pseudo-terminal and plays a script against it,
as a user at a terminal would (zever console's line editor, bash completion).

    python3 pty_run.py STEPS_JSON [--cwd DIR] -- command args...

STEPS_JSON is a list of steps, each {"send": text} (bytes written to the terminal; escape
sequences welcome), {"expect": text} (waits until text appears in what the command printed
since the previous expect; 10 s unless "timeout" says otherwise) or both (send, then expect).
Prints the whole transcript (raw) to stdout, then "\\nEXIT <code>" once the command ended (it
waits 10 s for that after the last step, then kills it by its PID). Exits 3 with a message on
stderr when an expect times out.
"""
import json
import os
import pty
import select
import signal
import sys
import time


def main():
    argv = sys.argv[1:]
    steps = json.loads(argv[0])
    cwd = None
    rest = argv[1:]
    if rest[:1] == ["--cwd"]:
        cwd, rest = rest[1], rest[2:]
    if rest[:1] == ["--"]:
        rest = rest[1:]
    pid, fd = pty.fork()
    if pid == 0:
        if cwd:
            os.chdir(cwd)
        os.environ["TERM"] = "xterm"
        os.execvp(rest[0], rest)
    out = b""
    mark = 0

    def pump(wait):
        nonlocal out
        r, _, _ = select.select([fd], [], [], wait)
        if not r:
            return True
        try:
            data = os.read(fd, 65536)
        except OSError:
            return False
        if not data:
            return False
        out += data
        return True

    for step in steps:
        if "send" in step:
            os.write(fd, step["send"].encode())
        if "expect" in step:
            want = step["expect"].encode()
            deadline = time.monotonic() + step.get("timeout", 10)
            while want not in out[mark:]:
                left = deadline - time.monotonic()
                if left <= 0 or not pump(min(left, 0.2)):
                    if want in out[mark:]:
                        break
                    sys.stdout.write(out.decode("utf-8", "replace"))
                    sys.stderr.write("TIMEOUT waiting for %r\n" % step["expect"])
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    sys.exit(3)
            mark = out.index(want, mark) + len(want)
    deadline = time.monotonic() + 10
    code = None
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            break
        pump(0.05)
    if code is None:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
    while pump(0):
        pass
    sys.stdout.write(out.decode("utf-8", "replace"))
    sys.stdout.write("\nEXIT %d\n" % code)


if __name__ == "__main__":
    main()
