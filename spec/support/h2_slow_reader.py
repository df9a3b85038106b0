#!/usr/bin/env python3
"""spec/support/h2_slow_reader.py PORT PATH BLOCKS [STOP_AFTER [stall]]: an HTTP/2 client (h2c, prior
knowledge, raw frames: nghttp2's python bindings are not in Debian) that reads one response
slowly, through a small flow-control window.

It announces SETTINGS_INITIAL_WINDOW_SIZE 16384, sends GET PATH on stream 1, and gives the window
back (WINDOW_UPDATE, stream and connection) only for what it has read, pausing 2 ms after every
256 KiB. The body must be BLOCKS blocks of 65536 bytes, block i being "%07d\\n" % i repeated 8192
times: it checks each block as it completes (whole and in order). With STOP_AFTER it closes the
connection once it has read that many bytes (a client that goes away mid-stream); with "stall"
too it keeps the connection open instead but gives no more window (a client that stops
reading), until the server resets the stream or closes (30 s at most).
Prints one line: "bytes=N ok=yes|no end=yes|no reset=yes|no goaway=yes|no".
"""
import socket
import struct
import sys
import time

port, path, blocks = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3])
stop_after = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] else None
stall = len(sys.argv) > 5 and sys.argv[5] == "stall"
stalled = False
WINDOW = 16384
BLOCK = 65536


def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


def hpack_request(p):
    # :method GET (static 2), :scheme http (static 6), :path and :authority literals.
    return b"\x82\x86" + b"\x04" + bytes([len(p)]) + p + b"\x01" + bytes([9]) + b"localhost"


s = socket.create_connection(("127.0.0.1", port))
s.settimeout(30)
settings = struct.pack(">HI", 4, WINDOW)  # SETTINGS_INITIAL_WINDOW_SIZE
s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, settings) +
          frame(1, 0x5, 1, hpack_request(path)))

buf = b""
body = bytearray()
checked = 0
total = 0
ok = True
end = reset = goaway = False
since_pause = 0
while not (end or reset or goaway):
    try:
        data = s.recv(65536)
    except (socket.timeout, OSError):
        break
    if not data:
        break
    buf += data
    updates = b""
    while len(buf) >= 9:
        n = struct.unpack(">I", b"\0" + buf[:3])[0]
        if len(buf) < 9 + n:
            break
        ftype, flags, sid = buf[3], buf[4], struct.unpack(">I", buf[5:9])[0] & 0x7fffffff
        payload = buf[9:9 + n]
        buf = buf[9 + n:]
        if ftype == 4 and not flags & 1:
            updates += frame(4, 1, 0)  # ACK the server's SETTINGS
        elif ftype == 7:
            goaway = True
        elif ftype == 3 and sid == 1:
            reset = True
        elif ftype == 0 and sid == 1:
            if flags & 0x8:  # PADDED
                payload = payload[1:len(payload) - payload[0]]
            body += payload
            total += len(payload)
            since_pause += len(payload)
            while len(body) >= BLOCK:
                want = (b"%07d\n" % checked) * 8192
                if bytes(body[:BLOCK]) != want:
                    ok = False
                del body[:BLOCK]
                checked += 1
            if n and not stalled:
                updates += frame(8, 0, 1, struct.pack(">I", n)) + frame(8, 0, 0, struct.pack(">I", n))
            if flags & 1:
                end = True
    if stop_after is not None and total >= stop_after:
        if not stall:
            break
        stalled = True
    if since_pause >= 256 * 1024:
        since_pause = 0
        time.sleep(0.002)
    if updates and not end:
        try:
            s.sendall(updates)
        except OSError:
            break
s.close()
if body or checked != blocks:
    ok = False
print("bytes=%d ok=%s end=%s reset=%s goaway=%s" % (
    total, "yes" if ok else "no", "yes" if end else "no", "yes" if reset else "no",
    "yes" if goaway else "no"))
