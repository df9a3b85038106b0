#!/usr/bin/env python3
"""spec/support/notify_sink.py SOCKET LOG: a stand-in for systemd's side of sd_notify.

Binds a unix datagram socket at SOCKET (the path a spec puts in NOTIFY_SOCKET) and appends
each datagram it receives to LOG, one per line with its newlines written as "|", until it is
killed. It prints "ready" on stdout once it is bound, so a spec can wait for it.
"""
import os
import socket
import sys

path, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
if os.path.exists(path):
    os.unlink(path)
s.bind(path)
print("ready", flush=True)
with open(log, "a", buffering=1) as out:
    while True:
        data = s.recv(4096)
        out.write(data.decode("utf-8", "replace").replace("\n", "|") + "\n")
