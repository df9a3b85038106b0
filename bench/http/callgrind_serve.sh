#!/bin/sh
# bench/http/callgrind_serve.sh [BIN] [PATH]: user-space instructions per request of the worker
# thread of `zever serve examples/hello --workers 1` (access log off), counted by callgrind
# (load-independent). A process with worker threads runs glibc in its multi-threaded mode (locked
# malloc), as every `zever serve` does, so this is the setting in which to compare the handler
# watchdog on and off: HANDLER_TIMEOUT=60 (serve's default) or 0; unset, no flag is given (for
# binaries older than the flag). One client sends requests one
# at a time on one keep-alive connection; the cost per request is the slope between a run of N1
# and a run of N2 requests, so start-up and shutdown cancel out.
# APP: the app folder to serve (default examples/hello; bench/tfb/callgrind.sh serves bench/tfb/app).
# TLS=1: the same over TLS (a self-signed EC P-256 certificate made here, --tls-cert/--tls-key;
# one handshake per run, so the slope is the keep-alive cost per request).
# WARM="ROUTE:N ROUTE:N ...": before the counted requests, the same connection sends N requests
# to each ROUTE in turn (the same in both runs): the cost of ROUTE on a worker that serves other
# routes too, whose traces were recorded first (a TechEmpower server serves every test type from
# one worker; bench/tfb/callgrind.sh passes WARM through). The two processes then record
# different traces during that warm-up, which the slope does not cancel (/db read 13.5k-22.0k on
# one tree): for such runs bench/http/callgrind_phase.sh counts one process after its warm-up.
# KEEP=DIR: copy the callgrind files (cg.N1-02, cg.N2-02: the worker thread) there, to compare
# functions per request with callgrind_annotate.
set -e
BIN=${1:-bin/zever}
ROUTE=${2:-/hello}
APP=${APP:-examples/hello}
N1=${N1:-2000}
N2=${N2:-12000}
HT=${HANDLER_TIMEOUT:+--handler-timeout $HANDLER_TIMEOUT}
tmp=$(mktemp -d)
TLSF=""
if [ "${TLS:-0}" = 1 ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=localhost -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
  TLSF="--tls-cert $tmp/cert.pem --tls-key $tmp/key.pem"
fi
count() {
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/cg.$1" "$BIN" serve \
    "$APP" --workers 1 --access-log off $HT $TLSF \
    --listen "127.0.0.1:$port" >/dev/null 2>"$tmp/vg.$1" &
  vg=$!
  # Wait for the worker's "serving" line (a connect could hit the main thread's port probe).
  while ! grep -q "serving" "$tmp/vg.$1"; do sleep 0.2; done
  python3 - "$port" "$1" "$ROUTE" "${TLS:-0}" "${WARM:-}" <<'PY'
import http.client, ssl, sys
port = int(sys.argv[1])
if sys.argv[4] == "1":
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ssl._create_unverified_context())
else:
    c = http.client.HTTPConnection("127.0.0.1", port)
for spec in sys.argv[5].split():
    route, n = spec.rsplit(":", 1)
    for _ in range(int(n)):
        c.request("GET", route)
        r = c.getresponse()
        r.read()
        assert r.status == 200, (route, r.status)
for _ in range(int(sys.argv[2])):
    c.request("GET", sys.argv[3])
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
PY
  kill -TERM $vg
  wait $vg || true
  # Thread 2 is the worker (1 is the main thread, 3 the watchdog when on).
  grep '^summary:\|^totals:' "$tmp/cg.$1-02" | head -1 | grep -o '[0-9]*$'
}
a=$(count "$N1")
b=$(count "$N2")
echo "Ir($N1)=$a Ir($N2)=$b Ir/request=$(( (b - a) / (N2 - N1) ))"
[ -n "${KEEP:-}" ] && cp "$tmp"/cg.* "$KEEP"/ 2>/dev/null
rm -rf "$tmp"
