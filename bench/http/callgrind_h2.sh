#!/usr/bin/env bash
# bench/http/callgrind_h2.sh [BIN]: user-space instructions per HTTP/2 request of the worker
# thread of `zever serve examples/hello --workers 1 --h2` (access log off), counted by callgrind
# (load-independent). The client is h2load over h2c with prior knowledge, -c$C -m$M (default 4
# connections, 16 streams in flight on each) on /hello; the cost per request is the slope
# between a run of N1 and a run of N2 requests, so start-up and shutdown cancel out.
# TLS=1: h2 over TLS instead (ALPN h2; a self-signed EC P-256 certificate made here, the
# certificate of bench/http/tls.sh), so the difference to h2c is what the TLS layer costs.
# PEER=nginx: the same client against Debian's nginx instead (the set-up of bench/http/lib.sh, as
# in tls.sh and h2.sh: `return 200 "hello world"`, one process, not daemonised), h2c or TLS.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
BIN=${1:-bin/zever}
N1=${N1:-2000}
N2=${N2:-10000}
die() { echo "bench/http/callgrind_h2.sh: $1" >&2; exit "${2:-1}"; }
note() { echo "# $*"; }
run=$(mktemp -d)
# shellcheck source=bench/http/lib.sh
. "$root/bench/http/lib.sh"
vg=""
trap 'stop "$vg"; rm -rf "$run"' EXIT
TLSF=() scheme=http ssl=""
tls_cert # (nginx's configuration names it also for h2c)
if [[ ${TLS:-0} == 1 ]]; then
  TLSF=(--tls-cert "$run/cert.pem" --tls-key "$run/key.pem") scheme=https ssl=" ssl"
fi
count() {
  local port out cg
  port=$(free_port)
  if [[ ${PEER:-zever} == nginx ]]; then
    NGINX_FOREGROUND=1 sys_nginx_conf "127.0.0.1:$port$ssl http2"
    valgrind --tool=callgrind --callgrind-out-file="$run/cg.$1" "$sys_nginx" -p "$run/nginx" \
      -c "$run/nginx.conf" -e "$run/error.log" >/dev/null 2>"$run/vg.$1" &
    vg=$!
    for ((i = 0; i < 600; i++)); do
      curl -sk --http2-prior-knowledge -o /dev/null "$scheme://127.0.0.1:$port/hello" 2>/dev/null && break
      alive "$vg" || { cat "$run/vg.$1" "$run/error.log" >&2; exit 1; }
      sleep 0.1
    done
    cg=$run/cg.$1
  else
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$run/cg.$1" "$BIN" serve \
      examples/hello --workers 1 --access-log off --h2 "${TLSF[@]}" \
      --listen "127.0.0.1:$port" >/dev/null 2>"$run/vg.$1" &
    vg=$!
    while ! grep -q "serving" "$run/vg.$1" 2>/dev/null; do alive "$vg" || { cat "$run/vg.$1" >&2; exit 1; }; sleep 0.2; done
    cg=$run/cg.$1-02
  fi
  out=$(h2load -n "$1" -c "${C:-4}" -m "${M:-16}" "$scheme://127.0.0.1:$port/hello" 2>&1)
  grep -q "$1 succeeded" <<<"$out" || { echo "$out" >&2; exit 1; }
  # (not stop: a server under valgrind may take longer than its 5 s to write its profile)
  kill -TERM "$vg"
  wait "$vg" || true
  vg=""
  grep '^summary:\|^totals:' "$cg" | head -1 | grep -o '[0-9]*$'
}
a=$(count "$N1")
b=$(count "$N2")
echo "Ir($N1)=$a Ir($N2)=$b Ir/request=$(((b - a) / (N2 - N1)))"
