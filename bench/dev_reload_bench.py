#!/usr/bin/env python3
"""bench/dev_reload_bench.py: zever dev's reload latency, from a saved file to the first
request answered by the reloaded app.

    python3 bench/dev_reload_bench.py [ROUNDS]   (default 20; bin/zever of this tree)

Makes an app with `zever new` in a temporary folder, starts `zever dev` on a free port, then
ROUNDS times: rewrites handlers/home.lua with a new message, notes the time, and polls GET /
(a new connection each time, 2 ms apart) until the new message comes back. Prints each
latency and the median, min and max in ms, with the load average. Stops the server by its PID.
"""
import http.client
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HOME = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZEVER = os.path.join(HOME, "bin", "zever")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(port):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        c.request("GET", "/")
        body = c.getresponse().read().decode()
        c.close()
        return body
    except OSError:
        return ""


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    root = tempfile.mkdtemp(prefix="zever-dev-bench-")
    app = os.path.join(root, "app")
    subprocess.run([ZEVER, "new", app], check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    log = open(os.path.join(root, "dev.log"), "w")
    proc = subprocess.Popen([ZEVER, "dev", app, "--listen", "127.0.0.1:%d" % port],
                            stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 20
        while "hello from zever" not in get(port):
            if time.monotonic() > deadline:
                raise SystemExit("zever dev did not start")
            time.sleep(0.02)
        home = os.path.join(app, "handlers", "home.lua")
        src = open(home).read()
        times = []
        for i in range(rounds):
            msg = "round %d" % i
            with open(home + ".tmp", "w") as f:
                f.write(src.replace("hello from zever", msg))
            t0 = time.monotonic()
            os.rename(home + ".tmp", home)
            while msg not in get(port):
                if time.monotonic() - t0 > 20:
                    raise SystemExit("no reload in 20 s")
                time.sleep(0.002)
            times.append((time.monotonic() - t0) * 1000)
            time.sleep(1.2)  # the old workers retire (1 s) before the next round
        print("reload to first served request, ms:", " ".join("%.0f" % t for t in times))
        print("median %.0f ms, min %.0f, max %.0f (%d rounds); load average %s" % (
            statistics.median(times), min(times), max(times), rounds,
            open("/proc/loadavg").read().split()[:3]))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
