#!/usr/bin/python3
"""Room/broadcast scenarios for spec/host/websocket_rooms_spec.lua (python3-websockets).

usage: ws_rooms_client.py OUTFILE SCENARIO ARGS...

The server's /room endpoint (the spec's app) answers "join ROOM" with "joined WORKER", "say
TEXT" with ws:broadcast(room, TEXT) (to the others), "leave" with "left"; POST /say/TEXT
broadcasts TEXT to room "lobby" with app:broadcast; GET /stats says {slow, dropped, members}.

  fanout WANT_WORKERS WS_BASE... -- POST_BASE
      clients join "lobby" on the WS bases (round robin) until they sit on WANT_WORKERS
      distinct workers (at most 40 clients); then POST_BASE/say/fanout-NONCE; each client must
      get that message. Result: "workers=K clients=N all=True|False"
  sender BASE
      a and b join "lobby"; a says "hi": b gets it; then POST /say/second: a's next message is
      "second" (a did not get its own "hi"); then b leaves, POST /say/third: a gets "third".
  slow BASE
      a reader and two raw sockets that never read (one on /room: on_slow close, one on
      /roomdrop: on_slow drop) join "lobby"; POST /flood/N, 64 KiB each, until /stats shows the
      closing one closed; the reader gets every flood message in order meanwhile.
Writes "name<TAB>result" to OUTFILE (through OUTFILE.tmp).
"""
import asyncio
import base64
import json
import os
import socket
import struct
import sys
import urllib.request

import websockets

OUT = sys.argv[1]
SCENARIO = sys.argv[2]
ARGS = sys.argv[3:]


def http(method, url):
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read().decode()


async def ahttp(method, url):
    return await asyncio.get_running_loop().run_in_executor(None, http, method, url)


async def join(url, room="lobby"):
    ws = await websockets.connect(url, max_size=None, open_timeout=10, close_timeout=5)
    await ws.send("join " + room)
    r = await asyncio.wait_for(ws.recv(), 10)
    assert r.startswith("joined "), r
    return ws, r[len("joined "):]


async def fanout():
    want = int(ARGS[0])
    sep = ARGS.index("--")
    bases, post = ARGS[1:sep], ARGS[sep + 1]
    clients, workers = [], set()
    i = 0
    while len(clients) < 40 and (len(workers) < want or len(clients) < 2 * want):
        ws, worker = await join(bases[i % len(bases)] + "/room")
        clients.append(ws)
        workers.add(worker)
        i += 1
    text = "fanout-%d" % os.getpid()
    await ahttp("POST", post + "/say/" + text)
    got = await asyncio.gather(*(asyncio.wait_for(c.recv(), 15) for c in clients),
                               return_exceptions=True)
    for c in clients:
        await c.close()
    return "workers=%d clients=%d all=%s" % (len(workers), len(clients),
                                             all(g == text for g in got))


async def sender():
    base = ARGS[0]
    post = base.replace("ws://", "http://")
    a, _ = await join(base + "/room")
    b, _ = await join(base + "/room")
    await a.send("say hi")
    r1 = await asyncio.wait_for(b.recv(), 10)
    await ahttp("POST", post + "/say/second")
    r2 = await asyncio.wait_for(a.recv(), 10)
    r3 = await asyncio.wait_for(b.recv(), 10)
    await b.send("leave")
    r4 = await asyncio.wait_for(b.recv(), 10)
    await ahttp("POST", post + "/say/third")
    r5 = await asyncio.wait_for(a.recv(), 10)
    members = json.loads(await ahttp("GET", post + "/stats"))["members"]
    await a.close()
    await b.close()
    return "b:%s a:%s b:%s b:%s a:%s members=%d" % (r1, r2, r3, r4, r5, members)


def raw_join(port, path):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET %s HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, key)).encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            raise RuntimeError("eof in the handshake")
        data += chunk
    if not data.startswith(b"HTTP/1.1 101"):
        raise RuntimeError("handshake answered %r" % data[:40])
    payload = b"join lobby"
    mkey = os.urandom(4)
    s.sendall(struct.pack("!BB", 0x81, 0x80 | len(payload)) + mkey +
              bytes(c ^ mkey[i % 4] for i, c in enumerate(payload)))
    while b"joined" not in data:
        chunk = s.recv(4096)
        if not chunk:
            raise RuntimeError("eof before joined")
        data += chunk
    return s


async def slow():
    base = ARGS[0]
    port = int(base.rsplit(":", 1)[1])
    post = base.replace("ws://", "http://")
    reader, _ = await join(base + "/room")
    stuck_close = raw_join(port, "/room")
    stuck_drop = raw_join(port, "/roomdrop")
    got, stats = [], {}
    for i in range(1, 1001):
        await ahttp("POST", post + "/flood/%d" % i)
        m = await asyncio.wait_for(reader.recv(), 10)
        got.append(m)
        stats = json.loads(await ahttp("GET", post + "/stats"))
        if stats["slow"] >= 1 and stats["dropped"] >= 1:
            break
    in_order = all(m.endswith(".%d" % (k + 1)) and len(m) > 65536 for k, m in enumerate(got))
    await reader.close()
    stuck_close.close()
    stuck_drop.close()
    return "slow=%d dropped>0=%s reader_in_order=%s" % (stats.get("slow", 0),
                                                       stats.get("dropped", 0) > 0, in_order)


def main():
    fn = {"fanout": fanout, "sender": sender, "slow": slow}[SCENARIO]
    try:
        r = asyncio.run(asyncio.wait_for(fn(), 120))
    except Exception as e:  # the spec shows what failed
        r = "error %s: %s" % (type(e).__name__, e)
    with open(OUT + ".tmp", "w") as f:
        f.write("%s\t%s\n" % (SCENARIO, r))
    os.rename(OUT + ".tmp", OUT)


main()
