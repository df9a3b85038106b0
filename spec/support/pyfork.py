#!/usr/bin/env python3
"""A fork server for the Python clients of the specs (spec/support/http_script.lua).

usage: pyfork.py FIFO OWNER_PID

Starting python3 costs ~40 ms of CPU and, on a loaded machine, half a second of wall time; a spec
file that runs fifty scripted clients spent most of its time starting interpreters. This
process starts once, reads jobs from FIFO (one JSON object a line: "argv", the script's path
and its arguments, and "out", a file for its output or null) and runs each in a child forked
from it, exactly as `python3 SCRIPT ARGS... >OUT.tmp 2>&1; mv OUT.tmp OUT` would (or with its
output to /dev/null when out is null): sys.argv, __main__, stdin on /dev/null, a traceback and
status 1 for an exception, the exit status its own. The script's behaviour is the same; only
the interpreter's start-up and the imports below are shared. Children are reaped by the
kernel (SIGCHLD ignored). The server ends when the last writer closes FIFO or when OWNER_PID,
the spec process that started it, is gone (a process the spec started in the background may
have inherited the writing end and outlive it).
"""
import json
import os
import runpy
import select
import signal
import sys

# What the clients import, loaded once before the forks (websockets only where installed).
import asyncio  # noqa: F401
import codecs  # noqa: F401
import socket  # noqa: F401
import ssl  # noqa: F401
import time  # noqa: F401
import traceback
try:
    import websockets  # noqa: F401
    import websockets.client  # noqa: F401
except ImportError:
    pass


def run(argv, out):
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    sink = os.open(out + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) if out else null
    os.dup2(sink, 1)
    os.dup2(sink, 2)
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    code = 0
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        if isinstance(e.code, int) or e.code is None:
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: B902 - reported as python3 reports it
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    if out:
        os.rename(out + ".tmp", out)
    os._exit(code)


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return False


def main():
    fifo, owner = sys.argv[1], int(sys.argv[2])
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    fd = os.open(fifo, os.O_RDONLY)  # blocks until the spec process opens it for writing
    os.unlink(fifo)
    pending = b""
    while alive(owner):
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        pending += chunk
        while b"\n" in pending:
            line, _, pending = pending.partition(b"\n")
            if line.strip() and os.fork() == 0:
                try:  # the child never returns to this loop
                    os.close(fd)
                    job = json.loads(line)
                    run(job["argv"], job.get("out"))
                finally:
                    os._exit(1)


if __name__ == "__main__":
    main()
