#!/usr/bin/env python3
"""A fork server for the Python clients of the specs (spec/support/http_script.lua).

usage: pyfork.py FIFO

Starting python3 costs ~40 ms of CPU and, on a loaded machine, half a second of wall time; a spec
file that runs fifty scripted clients spent most of its time starting interpreters. This
process starts once, reads jobs from FIFO (one JSON array a line: the script's path and its
arguments) and runs each in a child forked from it, exactly as `python3 SCRIPT ARGS...` would
(sys.argv, __main__, stdin/stdout/stderr on /dev/null, the exit status its own): the script's
behaviour is the same, only the interpreter's start-up is shared. Children are reaped by the
kernel (SIGCHLD ignored). The server ends when the last writer closes FIFO: the spec process
that started it exited.
"""
import json
import os
import runpy
import signal
import sys

# What the clients import, loaded once before the forks.
import codecs  # noqa: F401
import socket  # noqa: F401
import time  # noqa: F401


def run(argv):
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    code = 0
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: B902 - the child reports like python3 would, then exits
        code = 1
    sys.stdout.flush()
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
            argv = json.loads(line)
            if os.fork() == 0:
                run(argv)


if __name__ == "__main__":
    main()
