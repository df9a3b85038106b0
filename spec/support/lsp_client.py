"""A scripted LSP client for the specs and the benchmark of `zever lsp` (dsl/lsp.lua).

    python3 lsp_client.py ZEVER ROOT SCRIPT.json  ->  prints a JSON transcript

SCRIPT is a list of steps, run in order:
  {"send": msg}              frame and send one message
  {"send_all": [msg, ...]}   frame them and send them in one write (read together)
  {"raw": "text"}            send bytes as they are (framing tests)
  {"expect": {"id": n}}      wait for the response n; {"expect": {"method": m}} for a notification
                             (messages that do not match are kept for later expects)
  {"close": true}            close the server's stdin
The transcript is {"got": [[step index, message, ms since the last send], ...], "code": exit}.
A wait longer than 10 s fails the script (exit 3).
"""
import json
import os
import select
import subprocess
import sys
import time

zever, root, script = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
p = subprocess.Popen([zever, "lsp"], cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
buf = b""
pending = []
last_send = time.monotonic()


def frame(m):
    b = json.dumps(m).encode()
    return b"Content-Length: %d\r\n\r\n" % len(b) + b


def read_one(deadline):
    global buf
    while True:
        i = buf.find(b"\r\n\r\n")
        if i >= 0:
            head = buf[:i].decode()
            n = int([h for h in head.split("\r\n") if h.lower().startswith("content-length")][0].split(":")[1])
            if len(buf) >= i + 4 + n:
                body = buf[i + 4:i + 4 + n]
                buf = buf[i + 4 + n:]
                return json.loads(body)
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        r, _, _ = select.select([p.stdout], [], [], left)
        if r:
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                return None
            buf += chunk


def matches(m, want):
    if "id" in want:
        return m.get("id") == want["id"] and "method" not in m
    return m.get("method") == want["method"]


out = []
for idx, step in enumerate(script):
    if "send" in step or "send_all" in step or "raw" in step:
        data = frame(step["send"]) if "send" in step else (
            b"".join(frame(m) for m in step["send_all"]) if "send_all" in step else step["raw"].encode())
        p.stdin.write(data)
        p.stdin.flush()
        last_send = time.monotonic()
    elif "close" in step:
        p.stdin.close()
    elif "expect" in step:
        want = step["expect"]
        found = None
        for k, m in enumerate(pending):
            if matches(m, want):
                found = pending.pop(k)
                break
        deadline = time.monotonic() + 10
        while found is None:
            m = read_one(deadline)
            if m is None:
                print(json.dumps({"got": out, "error": "timeout waiting for %s" % json.dumps(want)}))
                p.kill()
                sys.exit(3)
            if matches(m, want):
                found = m
            else:
                pending.append(m)
        out.append([idx, found, (time.monotonic() - last_send) * 1000])
try:
    code = p.wait(timeout=10)
except subprocess.TimeoutExpired:
    p.kill()
    code = -9
print(json.dumps({"got": out, "code": code, "left": pending}))
