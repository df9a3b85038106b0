#!/usr/bin/env python3
"""Servers for the HTTP client's specs (spec/httpc/), on 127.0.0.1:

  pyserver.py tls PORT CERT KEY   Python's http.server over TLS (HTTP/1.1, keep-alive):
                                  GET /hello -> "hello over tls", anything else echoes the path
  pyserver.py plain PORT          the same without TLS; GET /close answers, then closes the
                                  connection without saying Connection: close
  pyserver.py silent PORT         accepts connections and never sends a byte
  pyserver.py proxy PORT          a forward proxy: absolute-form requests are relayed (one per
                                  connection, Connection: close), CONNECT opens a tunnel; every
                                  request line it sees is logged to stdout ("seen: ...")

Each prints "ready" once it listens. Stopped by PID (SIGTERM)."""
import http.server
import select
import socket
import socketserver
import ssl
import sys
import threading


class Hello(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = b"hello over tls" if self.path == "/hello" else self.path.encode()
        if self.path == "/close":
            self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def serve_tls(port, cert, key):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Hello)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("ready", flush=True)
    srv.serve_forever()


def pipe(a, b):
    socks = [a, b]
    while True:
        r, _, _ = select.select(socks, [], [], 30)
        if not r:
            return
        for s in r:
            data = s.recv(65536)
            if not data:
                return
            (b if s is a else a).sendall(data)


class Proxy(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline(65536).decode("latin-1")
        print("seen: " + line.strip(), flush=True)
        headers = []
        while True:
            h = self.rfile.readline(65536)
            if h in (b"\r\n", b"\n", b""):
                break
            headers.append(h)
        method, target, _ = line.split(" ", 2)
        if method == "CONNECT":
            host, port = target.rsplit(":", 1)
            up = socket.create_connection((host, int(port)))
            self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            self.wfile.flush()
            pipe(self.connection, up)
            up.close()
            return
        rest = target.split("://", 1)[1]
        authority, _, path = rest.partition("/")
        host, _, port = authority.partition(":")
        up = socket.create_connection((host, int(port or 80)))
        out = ["%s /%s HTTP/1.1\r\n" % (method, path)]
        for h in headers:
            name = h.split(b":", 1)[0].strip().lower()
            if name not in (b"connection", b"proxy-authorization", b"proxy-connection"):
                out.append(h.decode("latin-1"))
        out.append("Connection: close\r\n\r\n")
        up.sendall("".join(out).encode("latin-1"))
        length = 0
        for h in headers:
            if h.lower().startswith(b"content-length:"):
                length = int(h.split(b":", 1)[1])
        if length:
            up.sendall(self.rfile.read(length))
        while True:
            data = up.recv(65536)
            if not data:
                break
            self.wfile.write(data)
        up.close()


class ThreadingTCP(socketserver.ThreadingMixIn, socketserver.TCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "tls":
        serve_tls(port, sys.argv[3], sys.argv[4])
    elif mode == "plain":
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Hello)
        print("ready", flush=True)
        srv.serve_forever()
    elif mode == "silent":
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen(16)
        print("ready", flush=True)
        held = []
        while True:
            conn, _ = s.accept()
            held.append(conn)
    else:
        srv = ThreadingTCP(("127.0.0.1", port), Proxy)
        print("ready", flush=True)
        srv.serve_forever()


if __name__ == "__main__":
    threading.current_thread().name = "main"
    main()
