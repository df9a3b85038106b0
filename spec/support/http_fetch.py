#!/usr/bin/env python3
"""Requests over one keep-alive connection with Python's http.client, for the static-file and
form specs (spec/host/static_spec.lua, spec/zever/forms_spec.lua).

usage: http_fetch.py PORT OUTFILE REQUESTS.json

REQUESTS.json is a list of {"method", "path", "headers": {...}, "body_file": path | null}; each
is sent in turn on the same connection (http.client reconnects by itself when the server closed
it). OUTFILE gets a JSON list, one entry per request: {"status", "headers": [[name, value],
...], "length", "sha256", "body"} where body is the body as text (UTF-8, or latin-1 when it is
not UTF-8) when it is at most 1 MiB (else null). The output is written to OUTFILE.tmp and renamed, so that a poller sees
nothing or everything.
"""
import hashlib
import http.client
import json
import os
import sys


def text(data):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def main():
    port, out, reqs = int(sys.argv[1]), sys.argv[2], json.load(open(sys.argv[3]))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    results = []
    for r in reqs:
        body = None
        if r.get("body_file"):
            with open(r["body_file"], "rb") as f:
                body = f.read()
        conn.request(r["method"], r["path"], body=body, headers=r.get("headers") or {})
        resp = conn.getresponse()
        data = resp.read()
        results.append({
            "status": resp.status,
            "headers": [[k, v] for k, v in resp.getheaders()],
            "length": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "body": text(data) if len(data) <= 1 << 20 else None,
        })
    conn.close()
    with open(out + ".tmp", "w") as f:
        json.dump(results, f)
    os.rename(out + ".tmp", out)


if __name__ == "__main__":
    main()
