#!/usr/bin/env python3
"""A fork server for the Python clients of the specs (spec/support/http_script.lua).

usage: pyfork.py FIFO

Starting python3 costs ~40 ms of CPU and, on a loaded machine, half a second of wall time; a spec
file that runs fifty scripted clients spent most of its time starting interpreters. This
process starts once, reads jobs from FIFO (one JSON object a line: "argv", the script's path
and its arguments, and "out", a file for its output or null) and runs each in a child forked
from it, exactly as `python3 SCRIPT ARGS... >OUT.tmp 2>&1; mv OUT.tmp OUT` would (or with its
output to /dev/null when out is null): sys.argv, __main__, stdin on /dev/null, a traceback and
status 1 for an exception, the exit status its own. The script's behaviour is the same; only
the interpreter's start-up and the imports below are shared. Children are reaped by the
kernel (SIGCHLD ignored). The server ends when the last writer closes FIFO: the spec process
that started it exited.
"""
import json
import os
import runpy
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


def main():
    fifo = sys.argv[1]
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    with open(fifo, "r") as jobs:  # blocks until the spec process opens it for writing
        os.unlink(fifo)
        for line in jobs:
            line = line.strip()
            if not line:
                continue
            job = json.loads(line)
            if os.fork() == 0:
                run(job["argv"], job.get("out"))


if __name__ == "__main__":
    main()
