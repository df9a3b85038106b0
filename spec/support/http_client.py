#!/usr/bin/env python3
"""A scripted raw TCP client for the HTTP server specs (spec/host/http_spec.lua).

usage: http_client.py PORT OUTFILE STEP...

Steps run in order on the current connection:
  connect            open a new connection and make it current (the first one opens itself);
                     the previous one is dropped (closed)
  open               open a new connection and make it current, keeping the others open
  use:N              make the Nth connection opened (1 = the first) current
  rcvbuf:BYTES       open the next connections with a receive buffer this small
  send:TEXT          send TEXT; \\r \\n \\t \\\\ and \\xHH escapes are decoded
  sleep:SECONDS      pause
  read:SECONDS       read until EOF, reset or SECONDS of silence; appends "[eof]", "[reset]" or
                     "[timeout]" and what was read to the output
  readn:N:SECONDS    like read, but stop once N bytes came ("[n]")
  resp:SECONDS       like read, but stop once one whole response came: its head and as many
                     body bytes as its Content-Length says ("[resp]"); a response without
                     Content-Length reads like read
  until:TEXT:SECONDS like read, but stop once what came ends with TEXT (escapes as in send:),
                     e.g. the last chunk of a chunked body ("[until]")
  wait:PATH:SECONDS  pause until the file PATH exists (the spec's signal) or SECONDS passed
  drip:N:SECONDS:PAUSE  like readn, pausing PAUSE seconds after each receive (a slow reader)
  shutdown           half-close (no more sending)
  close              close the current connection

The output is written to OUTFILE.tmp and renamed to OUTFILE at the end, so that a poller sees
either nothing or everything. The client never runs longer than 20 seconds in total.
"""
import codecs
import os
import socket
import sys
import time

DEADLINE = time.time() + 20


def decode(text):
    return codecs.escape_decode(text.encode("latin-1"))[0]


def response_length(data):
    """The length of the one response at the start of data once its head has come (None before,
    or when the head names no Content-Length and its status may have a body)."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = bytes(data[:end]).split(b"\r\n")
    status = lines[0].split(b" ")[1] if len(lines[0].split(b" ")) > 1 else b""
    if status in (b"204", b"304") or status.startswith(b"1"):
        return end + 4
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return end + 4 + int(value.strip())
    return None


def read(sock, timeout, limit=None, pause=0, whole=False, end=None):
    data = bytearray()
    sock.settimeout(timeout)
    while True:
        if time.time() > DEADLINE:
            return b"[timeout]", bytes(data)
        try:
            chunk = sock.recv(1 if whole else 65536)
        except socket.timeout:
            return b"[timeout]", bytes(data)
        except (ConnectionResetError, BrokenPipeError):
            return b"[reset]", bytes(data)
        if not chunk:
            return b"[eof]", bytes(data)
        data += chunk
        if limit is not None and len(data) >= limit:
            return b"[n]", bytes(data)
        if whole and response_length(data) == len(data):
            return b"[resp]", bytes(data)
        if end is not None and data.endswith(end):
            return b"[until]", bytes(data)
        if pause:
            time.sleep(pause)


def main():
    port, outfile, steps = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    out = b""
    rcvbuf = None

    def connect():
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.connect(("127.0.0.1", port))
        return s

    first = steps[0].partition(":")[0] if steps else ""
    sock = None if first == "rcvbuf" else connect()
    socks = [sock] if sock else []
    for step in steps:
        kind, _, arg = step.partition(":")
        if kind == "connect":
            sock = connect()
            socks = [sock]
        elif kind == "open":
            sock = connect()
            socks.append(sock)
        elif kind == "use":
            sock = socks[int(arg) - 1]
        elif kind == "rcvbuf":
            rcvbuf = int(arg)
        elif kind == "send":
            try:
                sock.sendall(decode(arg))
            except (ConnectionResetError, BrokenPipeError):
                out += b"[send-failed]"
        elif kind == "sleep":
            time.sleep(float(arg))
        elif kind == "read":
            status, data = read(sock, float(arg))
            out += status + data
        elif kind == "resp":
            status, data = read(sock, float(arg), whole=True)
            out += status + data
        elif kind == "until":
            text, _, timeout = arg.rpartition(":")
            status, data = read(sock, float(timeout), end=decode(text))
            out += status + data
        elif kind == "wait":
            path, _, timeout = arg.rpartition(":")
            until = time.time() + float(timeout)
            while not os.path.exists(path) and time.time() < until:
                time.sleep(0.01)
        elif kind == "readn":
            n, _, timeout = arg.partition(":")
            status, data = read(sock, float(timeout), int(n))
            out += status + data
        elif kind == "drip":
            n, timeout, pause = arg.split(":")
            status, data = read(sock, float(timeout), int(n), float(pause))
            out += status + data
        elif kind == "shutdown":
            sock.shutdown(socket.SHUT_WR)
        elif kind == "close":
            sock.close()
        else:
            raise SystemExit("unknown step " + step)
    with open(outfile + ".tmp", "wb") as f:
        f.write(out)
    os.rename(outfile + ".tmp", outfile)


if __name__ == "__main__":
    main()
