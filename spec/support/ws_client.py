#!/usr/bin/python3
"""WebSocket client scenarios for spec/host/websocket_spec.lua, against a zever server.

usage: ws_client.py PORT OUTFILE SCENARIO...

Runs each scenario and writes one line "name<TAB>result" per scenario to OUTFILE (through
OUTFILE.tmp, renamed at the end). Scenarios with python3-websockets (Debian's, an independent
implementation): echo_text, echo_binary, echo_16mib, fragmented, ping, close, extensions.
burst_small, burst_big: many messages in one turn of the server's loop, then its close.
Raw ones (a hand-made handshake, then frames the library would never send): invalid_utf8,
unmasked, oversized (to /small), leave (connect to /watch and drop the TCP connection),
silent (connect to /silent and never answer a ping).
A raw scenario's result is the close code the server answered with, or "eof"/"timeout".
permessage-deflate (RFC 7692) against /zecho (deflate on, 16 MiB messages):
deflate_echo, deflate_none, deflate_no_takeover, deflate_window, deflate_decline8,
deflate_16mib (python3-websockets), deflate_out, deflate_bomb, deflate_corrupt (raw frames
compressed here with zlib).
"""
import asyncio
import base64
import os
import socket
import struct
import sys

import zlib

import websockets
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory

PORT = int(sys.argv[1])
OUT = sys.argv[2]
URL = "ws://127.0.0.1:%d" % PORT


def ext_params(ws):
    """The negotiated permessage-deflate parameters, as a short string."""
    if not ws.extensions:
        return "none"
    e = ws.extensions[0]
    return "deflate remote_no_takeover=%s local_no_takeover=%s remote_bits=%s" % (
        e.remote_no_context_takeover, e.local_no_context_takeover, e.remote_max_window_bits)


async def echo_all(ws, msgs):
    for m in msgs:
        await ws.send(m)
        r = await ws.recv()
        if r != m:
            return "mismatch at %d bytes" % len(m)
    return "ok"


ZMSGS = ["hi", "x" * 300, "κόσμε " * 200, bytes(range(256)) * 40, "x" * 300, "tail"]


async def zlib_scenario(name):
    # No keepalive pings of the client's own: compressing 16 MiB blocks its event loop, and on
    # a loaded machine past websockets' 20 s ping timeout (it then closes with 1011 itself).
    opts = dict(max_size=None, open_timeout=10, close_timeout=10, ping_interval=None)
    if name == "deflate_none":
        opts["compression"] = None
    elif name == "deflate_no_takeover":
        opts["extensions"] = [ClientPerMessageDeflateFactory(
            server_no_context_takeover=True, client_no_context_takeover=True)]
        opts["compression"] = None
    elif name == "deflate_window":
        opts["extensions"] = [ClientPerMessageDeflateFactory(server_max_window_bits=10,
                                                             client_max_window_bits=True)]
        opts["compression"] = None
    elif name == "deflate_decline8":
        opts["extensions"] = [ClientPerMessageDeflateFactory(server_max_window_bits=8)]
        opts["compression"] = None
    async with websockets.connect(URL + "/zecho", **opts) as ws:
        if name == "deflate_16mib":
            m = os.urandom(16 * 1024 * 1024)
            t = "zever " * (16 * 1024 * 1024 // 6)
            r = await echo_all(ws, [m, t])
        else:
            r = await echo_all(ws, ZMSGS)
        return "%s %s" % (r, ext_params(ws))


async def burst(name):
    """/burst: the server sends N messages of SIZE bytes in a row from a timer (collected for the
    end of its loop pass, or sent at once past 16 KiB), then closes with 4000: all of them must
    arrive, in order, before the close."""
    n, size = (50, 10) if name == "burst_small" else (300, 1000)
    async with websockets.connect(URL + "/burst", max_size=None, open_timeout=10,
                                  close_timeout=10, ping_interval=None) as ws:
        await ws.send("%d %d" % (n, size))
        got = []
        try:
            while True:
                got.append(await ws.recv())
        except websockets.exceptions.ConnectionClosed:
            pass
        want = [("%d:" % i).ljust(size, "x") for i in range(n)]
        r = "ok" if got == want else "mismatch (%d messages)" % len(got)
        return "%s %s" % (r, ws.close_code)


async def lib(name):
    path = "/echo"
    if name.startswith("deflate_"):
        return await zlib_scenario(name)
    if name.startswith("burst_"):
        return await burst(name)
    async with websockets.connect(URL + path, max_size=None, open_timeout=10,
                                  close_timeout=10, ping_interval=None) as ws:
        if name == "echo_text":
            msgs = ["hello", "κόσμε", ""]
            got = []
            for m in msgs:
                await ws.send(m)
                got.append(await ws.recv())
            return "ok" if got == msgs else "mismatch %r" % got
        if name == "echo_binary":
            m = bytes(range(256)) * 4
            await ws.send(m)
            r = await ws.recv()
            return "ok" if r == m and isinstance(r, bytes) else "mismatch"
        if name == "echo_16mib":
            m = os.urandom(16 * 1024 * 1024)
            await ws.send(m)
            r = await ws.recv()
            t = "é" * (8 * 1024 * 1024)  # 16 MiB of UTF-8 text
            await ws.send(t)
            r2 = await ws.recv()
            return "ok" if r == m and r2 == t else "mismatch"
        if name == "fragmented":
            await ws.send(["frag", "ment", "ed"])
            a = await ws.recv()
            await ws.send([b"\x00", b"\x01\x02"])
            b = await ws.recv()
            return "ok" if a == "fragmented" and b == b"\x00\x01\x02" else "mismatch %r %r" % (a, b)
        if name == "ping":
            waiter = await ws.ping(b"are you there")
            await asyncio.wait_for(waiter, 10)
            await ws.send("after ping")
            return "ok" if await ws.recv() == "after ping" else "mismatch"
        if name == "close":
            await ws.close(1000, "bye")
            return "%s" % ws.close_code
        if name == "extensions":
            # The client offers permessage-deflate; zever declines it (not negotiated yet).
            await ws.send("x")
            await ws.recv()
            return "none" if not ws.extensions else "%r" % ws.extensions
    return "unknown"


def handshake(path, extra=""):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET %s HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s\r\n"
               % (path, key, extra)).encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            raise RuntimeError("no handshake answer")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    if not head.startswith(b"HTTP/1.1 101"):
        raise RuntimeError("handshake answered %r" % head[:40])
    return s, rest


def frame(op, payload, masked=True, fin=True, rsv1=False):
    b0 = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | op
    n = len(payload)
    mbit = 0x80 if masked else 0
    if n < 126:
        head = struct.pack("!BB", b0, mbit | n)
    elif n < 65536:
        head = struct.pack("!BBH", b0, mbit | 126, n)
    else:
        head = struct.pack("!BBQ", b0, mbit | 127, n)
    if not masked:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(c ^ key[i % 4] for i, c in enumerate(payload))


def close_code(s, rest):
    data = rest
    s.settimeout(10)
    while True:
        while len(data) >= 2:
            op, n = data[0] & 0x0F, data[1] & 0x7F
            off = 2
            if n == 126:
                if len(data) < 4:
                    break
                n, off = struct.unpack("!H", data[2:4])[0], 4
            elif n == 127:
                if len(data) < 10:
                    break
                n, off = struct.unpack("!Q", data[2:10])[0], 10
            if len(data) < off + n:
                break
            payload, data = data[off:off + n], data[off + n:]
            if op == 0x8:
                return str(struct.unpack("!H", payload[:2])[0]) if n >= 2 else "1005"
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            return "timeout"
        except ConnectionResetError:
            return "reset"
        if not chunk:
            return "eof"
        data += chunk


def deflated(data):
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    out = z.compress(data) + z.flush(zlib.Z_SYNC_FLUSH)
    assert out.endswith(b"\x00\x00\xff\xff")
    return out[:-4]


def read_frame(s, data):
    """One server frame: (byte0, payload, rest)."""
    while True:
        if len(data) >= 2:
            n, off = data[1] & 0x7F, 2
            if n == 126 and len(data) >= 4:
                n, off = struct.unpack("!H", data[2:4])[0], 4
            elif n == 127 and len(data) >= 10:
                n, off = struct.unpack("!Q", data[2:10])[0], 10
            if n < 126 and len(data) >= off + n:
                return data[0], data[off:off + n], data[off + n:]
        chunk = s.recv(65536)
        if not chunk:
            raise RuntimeError("eof")
        data += chunk


ZOFFER = "Sec-WebSocket-Extensions: permessage-deflate\r\n"


def raw(name):
    if name == "deflate_out":
        # A compressible 1000-byte text comes back compressed (RSV1, fewer bytes); a short one
        # (under the threshold) plain.
        s, rest = handshake("/zecho", ZOFFER)
        try:
            s.sendall(frame(0x1, deflated(b"a" * 1000), rsv1=True))
            b0, payload, rest = read_frame(s, rest)
            big = zlib.decompressobj(-15).decompress(payload + b"\x00\x00\xff\xff")
            s.sendall(frame(0x1, b"short"))
            b1, small, rest = read_frame(s, rest)
            return "rsv1=%d len<1000=%s same=%s; rsv1=%d %s" % (
                (b0 >> 6) & 1, len(payload) < 1000, big == b"a" * 1000, (b1 >> 6) & 1,
                small.decode())
        finally:
            s.close()
    if name == "deflate_bomb":
        # 64 MiB of zeros deflate to about 64 KiB; /zecho allows 16 MiB messages.
        s, rest = handshake("/zecho", ZOFFER)
        z = zlib.compressobj(9, zlib.DEFLATED, -15)
        bomb = b"".join(z.compress(b"\0" * (1 << 20)) for _ in range(64))
        bomb += z.flush(zlib.Z_SYNC_FLUSH)
        s.sendall(frame(0x2, bomb, rsv1=True))
    elif name == "deflate_corrupt":
        s, rest = handshake("/zecho", ZOFFER)
        s.sendall(frame(0x2, b"\xff\xff\xff\xff garbage", rsv1=True))
    elif name == "invalid_utf8":
        s, rest = handshake("/echo")
        s.sendall(frame(0x1, b"ok \xc0\x80"))
    elif name == "unmasked":
        s, rest = handshake("/echo")
        s.sendall(frame(0x1, b"hello", masked=False))
    elif name == "oversized":
        s, rest = handshake("/small")
        s.sendall(frame(0x2, b"z" * 2048))
    elif name == "silent":
        # Never answers the server's pings: the server gives up on it.
        s, rest = handshake("/silent")
    elif name == "leave":
        s, rest = handshake("/watch")
        s.close()
        return "left"
    else:
        return "unknown"
    try:
        return close_code(s, rest)
    finally:
        s.close()


def main():
    lines = []
    for name in sys.argv[3:]:
        try:
            if name in ("invalid_utf8", "unmasked", "oversized", "leave", "silent", "deflate_out",
                    "deflate_bomb", "deflate_corrupt"):
                r = raw(name)
            else:
                r = asyncio.run(asyncio.wait_for(lib(name), 120))  # 16 MiB in pure Python: slow on a loaded machine
        except Exception as e:  # the spec shows what failed
            r = "error %s: %s" % (type(e).__name__, e)
        lines.append("%s\t%s\n" % (name, r))
    with open(OUT + ".tmp", "w") as f:
        f.writelines(lines)
    os.rename(OUT + ".tmp", OUT)


main()
