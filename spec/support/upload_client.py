#!/usr/bin/env python3
"""Uploads for the request-body streaming specs (spec/http/request_body_spec.lua).

usage:
  upload_client.py chunked PORT OUTFILE PATH FILE PIECE
      POST FILE with Python's http.client, Transfer-Encoding: chunked (encode_chunked), in
      pieces of PIECE bytes. OUTFILE: {"status", "body"}.
  upload_client.py stall PORT OUTFILE PATH TOTAL
      POST a Content-Length: TOTAL body of zero bytes, sending without blocking until the
      server stops taking bytes (no progress for 1 s: its handler does not read), then GET /go
      on a second connection (the handler goes on), then the rest. OUTFILE: {"stalled_at",
      "status", "body"}.
  upload_client.py abort PORT OUTFILE PATH TOTAL SEND
      announce TOTAL bytes, send SEND of them, close the connection. OUTFILE: {"sent"}.

The output is written to OUTFILE.tmp and renamed, so that a poller sees nothing or everything.
"""
import http.client
import json
import os
import select
import socket
import sys
import time


def done(out, result):
    with open(out + ".tmp", "w") as f:
        json.dump(result, f)
    os.rename(out + ".tmp", out)


def chunked(port, out, path, name, piece):
    def pieces():
        with open(name, "rb") as f:
            while True:
                b = f.read(piece)
                if not b:
                    return
                yield b
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", path, body=pieces(), encode_chunked=True,
                 headers={"Content-Type": "application/octet-stream"})
    r = conn.getresponse()
    done(out, {"status": r.status, "body": r.read().decode("latin-1")})


def read_response(s):
    data = b""
    s.settimeout(30)
    while True:
        try:
            b = s.recv(65536)
        except socket.timeout:
            break
        if not b:
            break
        data += b
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep:
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    if len(body) >= int(line.split(b":")[1]):
                        return data
    return data


def stall(port, out, path, total):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(("POST %s HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % (path, total)).encode())
    s.setblocking(False)
    zeros = b"\0" * 65536
    sent = 0
    while sent < total:
        _, w, _ = select.select([], [s], [], 1.0)
        if not w:
            break  # no room for a second: the server stopped reading
        try:
            sent += s.send(zeros[:min(len(zeros), total - sent)])
        except BlockingIOError:
            pass
    stalled_at = sent
    g = socket.create_connection(("127.0.0.1", port))
    g.sendall(b"GET /go HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    read_response(g)
    g.close()
    s.setblocking(True)
    while sent < total:
        sent += s.send(zeros[:min(len(zeros), total - sent)])
    data = read_response(s)
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head else 0
    done(out, {"stalled_at": stalled_at, "status": status, "body": body.decode("latin-1")})


def abort(port, out, path, total, send):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(("POST %s HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % (path, total)).encode())
    s.sendall(b"x" * send)
    time.sleep(0.2)  # not a synchronisation: lets the bytes leave before the close
    s.close()
    done(out, {"sent": send})


def main():
    mode, port, out, path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    if mode == "chunked":
        chunked(port, out, path, sys.argv[5], int(sys.argv[6]))
    elif mode == "stall":
        stall(port, out, path, int(sys.argv[5]))
    elif mode == "abort":
        abort(port, out, path, int(sys.argv[5]), int(sys.argv[6]))


if __name__ == "__main__":
    main()
