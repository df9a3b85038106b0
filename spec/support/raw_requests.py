#!/usr/bin/env python3
"""Sends raw request bytes to an HTTP server, one connection per case, all cases at once.

usage: raw_requests.py CASES PORT OUT

CASES holds one case per line: the bytes to send, hex-encoded. For each case the client
connects to 127.0.0.1:PORT, sends the bytes, and reads until the server closes the connection
(EOF or reset) or stays silent for 1.5 s after answering (8 s when nothing came). OUT gets one
line per case, in order: the statuses of the responses received, comma-separated ("-" for
none), a space, and "close" or "open". OUT is written to OUT.tmp and renamed, so that a poller
sees either nothing or everything.
"""
import os
import re
import socket
import sys
import threading
import time

# A status line anywhere: the bodies these specs get back are short words ("ok").
STATUS = re.compile(rb"HTTP/1\.[01] (\d{3}) ")


def run(data, port, results, i):
    statuses, closed = [], False
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(data)
        buf, last = b"", time.time()
        s.settimeout(0.1)
        while True:
            silence = time.time() - last
            if silence > (1.5 if buf else 8.0):
                break
            try:
                d = s.recv(65536)
            except socket.timeout:
                continue
            except ConnectionResetError:
                closed = True
                break
            if not d:
                closed = True
                break
            buf += d
            last = time.time()
        s.close()
        statuses = [m.decode() for m in STATUS.findall(buf)]
    except OSError as e:
        statuses = ["error:" + type(e).__name__]
    results[i] = "%s %s" % (",".join(statuses) or "-", "close" if closed else "open")


def main():
    cases_file, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(cases_file) as f:
        cases = [bytes.fromhex(line.strip()) for line in f if line.strip()]
    results = [None] * len(cases)
    threads = [threading.Thread(target=run, args=(c, port, results, i))
               for i, c in enumerate(cases)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(out + ".tmp", "w") as f:
        f.write("\n".join(results) + "\n")
    os.rename(out + ".tmp", out)


main()
