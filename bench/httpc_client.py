#!/usr/bin/env python3
"""N sequential GETs on one keep-alive connection with Python's http.client; prints
"requests seconds cpu_seconds" (bench/httpc_bench.sh)."""
import http.client
import sys
import time

host, port, path, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
conn = http.client.HTTPConnection(host, port)
t0, c0 = time.perf_counter(), time.process_time()
for _ in range(n):
    conn.request("GET", path)
    r = conn.getresponse()
    r.read()
t1, c1 = time.perf_counter(), time.process_time()
print(n, t1 - t0, c1 - c0)
