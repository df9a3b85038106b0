#!/usr/bin/env bash
# bench/http/callgrind_tls_handshake.sh: instructions per FULL TLS handshake on the server side,
# `zever serve examples/hello --workers 1` against nginx (master_process off, one process), the
# same self-signed EC P-256 certificate, counted by callgrind (load-independent). A Python client
# opens N connections one after another, each a full handshake (no session reuse) then a close,
# no HTTP request; the cost per handshake is the slope between a run of N1 and one of N2, so
# start-up and shutdown cancel out. PROTO: tls13 (default) or tls12
# (ECDHE-ECDSA-AES128-GCM-SHA256). Stops only the PIDs it started.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
N1=${N1:-20}
N2=${N2:-120}
PROTO=${PROTO:-tls13}
die() { echo "bench/http/callgrind_tls_handshake.sh: $1" >&2; exit 1; }
note() { echo "# $*"; }
# free_port, tls_cert and Debian's nginx set-up (sys_nginx_conf), shared with tls_handshake.sh.
# shellcheck source=bench/http/lib.sh
. "$root/bench/http/lib.sh"
run=$(mktemp -d /tmp/zever-cg-tlshs.XXXXXX)
tmp=$run
trap 'rm -rf "$run"' EXIT
tls_cert
client() { # port n
  /usr/bin/python3 - "$1" "$2" "$PROTO" <<'PY'
import socket, ssl, sys, time
port, n, proto = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ctx = ssl._create_unverified_context()
if proto == "tls12":
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers("ECDHE-ECDSA-AES128-GCM-SHA256")
else:
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
for _ in range(200):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=60).close()
        break
    except OSError:
        time.sleep(0.2)
for _ in range(n):
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=60))
    s.close()
PY
}
total_ir() { # callgrind files -> summed Ir
  cat "$@" | awk '/^summary:/ {s += $2} END {print s}'
}
count() { # server n -> Ir
  local port pid
  port=$(free_port)
  if [[ $1 == zever ]]; then
    valgrind --tool=callgrind --callgrind-out-file="$tmp/z.$2.%p" bin/zever serve examples/hello \
      --workers 1 --access-log off --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem" \
      --listen "127.0.0.1:$port" >/dev/null 2>"$tmp/vg.z.$2" &
    pid=$!
    while ! grep -q "serving" "$tmp/vg.z.$2"; do sleep 0.2; done
  else
    # One process (master_process off), so that callgrind counts the one that handshakes.
    NGINX_FOREGROUND=1 sys_nginx_conf "127.0.0.1:$port ssl"
    valgrind --tool=callgrind --callgrind-out-file="$tmp/n.$2.%p" "$sys_nginx" -p "$run/nginx" \
      -c "$run/nginx.conf" -e "$run/error.log" >/dev/null 2>"$tmp/vg.n.$2" &
    pid=$!
  fi
  client "$port" "$2"
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  if [[ $1 == zever ]]; then total_ir "$tmp"/z."$2".*; else total_ir "$tmp"/n."$2".*; fi
}
for s in nginx zever; do
  a=$(count "$s" "$N1")
  b=$(count "$s" "$N2")
  per=$(( (b - a) / (N2 - N1) ))
  eval "per_$s=$per"
  printf "%-5s %s: Ir per full handshake %d  (N1=%d: %d, N2=%d: %d)\n" "$s" "$PROTO" "$per" "$N1" "$a" "$N2" "$b"
done
awk -v z="$per_zever" -v n="$per_nginx" 'BEGIN{printf "zever / nginx instructions per handshake: %.2fx\n", z / n}'
