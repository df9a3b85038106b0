# spec/support/pipeline_client.py PORT N OUT: sends one "GET /slow" and then N "GET /fast/<i>"
# requests in a single write on one connection (pipelined), reads until N + 1 responses arrived
# (or 10 s passed, or the server closed), and writes what it received to OUT (through a rename,
# so that the spec never reads half a file).
import os
import socket
import sys
import time

port, n, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
s = socket.create_connection(("127.0.0.1", port))
data = b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n" + b"".join(
    b"GET /fast/%d HTTP/1.1\r\nHost: t\r\n\r\n" % i for i in range(n))
s.sendall(data)
buf = b""
s.settimeout(5)
t0 = time.time()
while buf.count(b"HTTP/1.1 200") < n + 1 and time.time() - t0 < 10:
    try:
        d = s.recv(65536)
    except socket.timeout:
        break
    if not d:
        break
    buf += d
with open(out + ".tmp", "wb") as f:
    f.write(buf)
os.rename(out + ".tmp", out)
