#!/bin/sh
# bench/http/callgrind_h2.sh [BIN]: user-space instructions per HTTP/2 request of the worker
# thread of `zever serve examples/hello --workers 1 --h2` (access log off), counted by callgrind
# (load-independent). The client is h2load over h2c with prior knowledge, -c$C -m$M (default 4
# connections, 16 streams in flight on each) on /hello; the cost per request is the slope
# between a run of N1 and a run of N2 requests, so start-up and shutdown cancel out.
# TLS=1: h2 over TLS instead (ALPN h2; a self-signed EC P-256 certificate made here, the
# certificate of bench/http/tls.sh), so the difference to h2c is what the TLS layer costs.
set -e
BIN=${1:-bin/zever}
N1=${N1:-2000}
N2=${N2:-10000}
tmp=$(mktemp -d)
TLSF="" scheme=http
if [ "${TLS:-0}" = 1 ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=localhost -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
  TLSF="--tls-cert $tmp/cert.pem --tls-key $tmp/key.pem" scheme=https
fi
count() {
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/cg.$1" "$BIN" serve \
    examples/hello --workers 1 --access-log off --h2 $TLSF \
    --listen "127.0.0.1:$port" >/dev/null 2>"$tmp/vg.$1" &
  vg=$!
  while ! grep -q "serving" "$tmp/vg.$1"; do sleep 0.2; done
  h2load -n "$1" -c "${C:-4}" -m "${M:-16}" "$scheme://127.0.0.1:$port/hello" >"$tmp/h2load.$1" 2>&1
  grep -q "$1 succeeded" "$tmp/h2load.$1" || { cat "$tmp/h2load.$1" >&2; kill $vg; exit 1; }
  kill -TERM $vg
  wait $vg || true
  grep '^summary:\|^totals:' "$tmp/cg.$1-02" | head -1 | grep -o '[0-9]*$'
}
a=$(count "$N1")
b=$(count "$N2")
echo "Ir($N1)=$a Ir($N2)=$b Ir/request=$(( (b - a) / (N2 - N1) ))"
rm -rf "$tmp"
