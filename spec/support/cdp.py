#!/usr/bin/python3
"""Drives headless Chromium through the DevTools protocol for the dashboard spec.

usage: cdp.py STEPS.json OUT.json

STEPS.json: {"url": ..., "screenshot": path or null, "steps": [step, ...]} where a step is
  {"wait": "js expression"}   polls until the expression is truthy (10 s), else fails
  {"eval": "js expression"}   evaluates it; its value (JSON) is recorded
OUT.json gets {"ok": bool, "results": [value of each eval], "error": message}.
Chromium runs as Debian's package ships it (/usr/bin/chromium), headless, with a fresh profile
that is removed at the end; the browser process is ended by its own PID.
"""
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import websockets

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--remote-debugging-port=0", "--remote-allow-origins=*"]


async def session(ws_url, plan, out):
    async with websockets.connect(ws_url, max_size=64 * 1024 * 1024) as ws:
        seq = [0]

        async def call(method, params=None):
            seq[0] += 1
            mid = seq[0]
            await ws.send(json.dumps({"id": mid, "method": method, "params": params or {}}))
            while True:
                msg = json.loads(await ws.recv())
                if msg.get("id") == mid:
                    if "error" in msg:
                        raise RuntimeError(method + ": " + json.dumps(msg["error"]))
                    return msg.get("result", {})

        async def evaluate(expr):
            r = await call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                                "awaitPromise": True})
            if "exceptionDetails" in r:
                raise RuntimeError("js: " + json.dumps(r["exceptionDetails"])[:500])
            return r.get("result", {}).get("value")

        await call("Page.enable")
        await call("Page.navigate", {"url": plan["url"]})
        for step in plan["steps"]:
            if "wait" in step:
                last = ""
                deadline = time.time() + step.get("timeout", 10)
                while True:
                    try:
                        if await evaluate("!!(" + step["wait"] + ")"):
                            break
                    except RuntimeError as e:
                        last = str(e)
                    if time.time() > deadline:
                        raise RuntimeError("timed out waiting for: " + step["wait"] + " " + last)
                    await asyncio.sleep(0.05)
            else:
                out["results"].append(await evaluate(step["eval"]))
        if plan.get("screenshot"):
            shot = await call("Page.captureScreenshot", {"format": "png"})
            import base64
            with open(plan["screenshot"], "wb") as f:
                f.write(base64.b64decode(shot["data"]))


def main():
    plan = json.load(open(sys.argv[1]))
    out = {"ok": False, "results": [], "error": None}
    profile = tempfile.mkdtemp(prefix="zever-chromium-")
    browser = subprocess.Popen([shutil.which("chromium") or "/usr/bin/chromium"] + FLAGS +
                               ["--user-data-dir=" + profile, "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.time() + 30
        while not os.path.exists(port_file) or os.path.getsize(port_file) == 0:
            if time.time() > deadline or browser.poll() is not None:
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.05)
        port = int(open(port_file).read().split()[0])
        targets = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port))
        page = [t for t in targets if t.get("type") == "page"][0]
        asyncio.run(session(page["webSocketDebuggerUrl"], plan, out))
        out["ok"] = True
    except Exception as e:  # reported to the spec, which fails with it
        out["error"] = "%s: %s" % (type(e).__name__, e)
    finally:
        browser.terminate()
        try:
            browser.wait(10)
        except subprocess.TimeoutExpired:
            browser.kill()
        shutil.rmtree(profile, ignore_errors=True)
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)


main()
