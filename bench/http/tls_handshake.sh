#!/usr/bin/env bash
# bench/http/tls_handshake.sh: full TLS handshakes per second, `zever serve` against Debian's
# nginx with the same certificate, protocol and cipher, alternating in one run.
#
#   openssl s_time -connect 127.0.0.1:PORT -new -time S [-tls1_2 -cipher C | -tls1_3]
#
# s_time -new makes a new connection and a FULL handshake each time (no session reuse), with
# no HTTP request (handshake, then close): "connections in S real seconds" / S is the rate.
# Both servers: 1 worker, a fresh self-signed EC P-256 certificate, tickets on, no server-side
# session cache, access log off (the nginx set-up of bench/http/lib.sh, as in tls.sh). Cases: TLS 1.3
# (TLS_AES_256_GCM_SHA384, X25519) and TLS 1.2 (ECDHE-ECDSA-AES128-GCM-SHA256). Besides the
# rate (which the client's own CPU share and the machine's load bound), the server's CPU per
# handshake (utime + stime of its processes around the run, /proc/PID/stat) is printed: the
# load-independent comparison. Prints every run, the medians and the zever/nginx ratios.
#
# Environment: BENCH_TLS_SECONDS (default 5), BENCH_TLS_ROUNDS (default 3), CLIENTS (parallel
# s_time processes, default 2). Stops only the PIDs it started.
set -euo pipefail

cd "$(dirname "$0")/../.."
root=$PWD
seconds=${BENCH_TLS_SECONDS:-5}
rounds=${BENCH_TLS_ROUNDS:-3}
clients=${CLIENTS:-2}
die() { echo "bench/http/tls_handshake.sh: $1" >&2; exit "${2:-1}"; }
note() { echo "# $*"; }

run=$(mktemp -d /tmp/zever-bench-tlshs.XXXXXX)
# shellcheck source=bench/http/lib.sh
. "$root/bench/http/lib.sh"
zever_pid=""
cleanup() {
  stop "$zever_pid"
  sys_nginx_stop
  rm -rf "$run"
}
trap cleanup EXIT

tls_cert
zport=$(free_port)
nport=$(free_port)

bin/zever serve examples/hello --listen "127.0.0.1:$zport" --workers 1 --access-log off \
  --drain 1 --tls-cert "$run/cert.pem" --tls-key "$run/key.pem" >"$run/zever.log" 2>&1 &
zever_pid=$!

sys_nginx_start "127.0.0.1:$nport ssl"
for _ in $(seq 1 200); do
  if curl -sk "https://127.0.0.1:$zport/hello" >/dev/null 2>&1 &&
     curl -sk "https://127.0.0.1:$nport/hello" >/dev/null 2>&1; then break; fi
  sleep 0.05
done
pids_of() {
  if [[ $1 == nginx ]]; then sys_nginx_pids
  else echo "$zever_pid"; fi
}
proto_args() {
  case $1 in
    tls13) echo "-tls1_3" ;;
    tls12) echo "-tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256" ;;
  esac
}
# measure case server port -> "handshakes/s us-of-server-CPU-per-handshake"
measure() {
  local proto=$1 server=$2 port=$3 t0 t1 total=0 i
  local -a pids clients_pids=()
  read -r -a pids <<<"$(pids_of "$server")"
  # shellcheck disable=SC2046
  openssl s_time -connect "127.0.0.1:$port" -new -time 1 $(proto_args "$proto") >/dev/null 2>&1 || true
  t0=$(cpu_ticks "${pids[@]}")
  for i in $(seq 1 "$clients"); do
    # shellcheck disable=SC2046
    openssl s_time -connect "127.0.0.1:$port" -new -time "$seconds" $(proto_args "$proto") \
      >"$run/st.$i" 2>&1 &
    clients_pids+=("$!")
  done
  wait "${clients_pids[@]}" 2>/dev/null || true
  t1=$(cpu_ticks "${pids[@]}")
  for i in $(seq 1 "$clients"); do
    n=$(awk '/connections in [0-9]+ real seconds/ {print $1; exit}' "$run/st.$i")
    total=$((total + ${n:-0}))
  done
  [[ $total -gt 0 ]] || { cat "$run/st.1" >&2; echo "0 0"; return; }
  echo "$(echo "$total / $seconds" | bc -l) $(echo "($t1 - $t0) * 10000 / $total" | bc -l)"
}

echo "# zever vs $($sys_nginx -v 2>&1), $(openssl version); $clients s_time clients, ${rounds} rounds x ${seconds}s, nginx then zever"
declare -A results cpus
for r in $(seq 1 "$rounds"); do
  for t in tls13 tls12; do
    read -r n ncpu <<<"$(measure "$t" nginx "$nport")"
    read -r z zcpu <<<"$(measure "$t" zever "$zport")"
    printf "round %s  %-5s  nginx %7.0f hs/s %7.1f us CPU/hs   zever %7.0f hs/s %7.1f us CPU/hs\n" \
      "$r" "$t" "$n" "$ncpu" "$z" "$zcpu"
    results[$t.nginx]+="$n "; results[$t.zever]+="$z "
    cpus[$t.nginx]+="$ncpu "; cpus[$t.zever]+="$zcpu "
  done
done
for t in tls13 tls12; do
  n=$(echo "${results[$t.nginx]}" | median); z=$(echo "${results[$t.zever]}" | median)
  nc=$(echo "${cpus[$t.nginx]}" | median); zc=$(echo "${cpus[$t.zever]}" | median)
  printf "%-5s medians: handshakes/s nginx %7.0f zever %7.0f (zever/nginx %.2fx); server CPU/handshake nginx %.1f us zever %.1f us (%.2fx)\n" \
    "$t" "$n" "$z" "$(echo "$z / $n" | bc -l)" "$nc" "$zc" "$(echo "$zc / $nc" | bc -l)"
done
