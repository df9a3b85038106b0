#!/usr/bin/env bash
# bench/http/h2.sh: HTTP/2 of `zever serve --h2` against Debian's nginx, side by side,
# alternating in one run: `h2load -c64 -m16 -D<S>` on /hello (64 connections, 16 streams in
# flight on each), over TLS (ALPN h2) and as h2c with prior knowledge (plain port).
#
#   h2c   h2load -c64 -m16 -D<S> http://127.0.0.1:PORT/hello    (nginx: `listen ... http2`)
#   h2    h2load -c64 -m16 -D<S> https://127.0.0.1:PORT/hello   (nginx: `listen ... ssl http2`)
#
# Both servers: 1 worker, access log off; TLS with a fresh self-signed EC P-256 certificate,
# TLS 1.2 and 1.3 (h2load negotiates TLS 1.3 with both): the nginx set-up of bench/http/lib.sh. nginx answers /hello with
# `return 200 "hello world"` (no Lua); zever runs examples/hello's Lua handler. Each round and
# test: nginx then zever, each a 1 s warm-up then the measured run. Prints every run and the
# medians and zever/nginx ratios of req/s and of server CPU time per request (utime + stime
# from /proc/<pid>/stat around the measured run), which load disturbs less than req/s.
#
# Environment: BENCH_H2_SECONDS (default 5), BENCH_H2_ROUNDS (default 3), BENCH_H2_M (streams
# per connection, default 16), BENCH_H2_C (connections, default 64). Stops only its own PIDs.
set -euo pipefail

cd "$(dirname "$0")/../.."
root=$PWD
seconds=${BENCH_H2_SECONDS:-5}
rounds=${BENCH_H2_ROUNDS:-3}
m=${BENCH_H2_M:-16}
conns=${BENCH_H2_C:-64}
die() { echo "bench/http/h2.sh: $1" >&2; exit "${2:-1}"; }
note() { echo "# $*"; }

command -v h2load >/dev/null || die "h2load is missing (nghttp2-client)"

run=$(mktemp -d /tmp/zever-bench-h2.XXXXXX)
# shellcheck source=bench/http/lib.sh
. "$root/bench/http/lib.sh"
zc_pid="" zt_pid=""
cleanup() {
  stop "$zc_pid"
  stop "$zt_pid"
  sys_nginx_stop
  rm -rf "$run"
}
trap cleanup EXIT

tls_cert
zcport=$(free_port) ztport=$(free_port) ncport=$(free_port) ntport=$(free_port)

bin/zever serve examples/hello --listen "127.0.0.1:$zcport" --workers 1 --access-log off \
  --drain 1 --h2 >"$run/zever_c.log" 2>&1 &
zc_pid=$!
bin/zever serve examples/hello --listen "127.0.0.1:$ztport" --workers 1 --access-log off \
  --drain 1 --tls-cert "$run/cert.pem" --tls-key "$run/key.pem" --h2 >"$run/zever_t.log" 2>&1 &
zt_pid=$!

sys_nginx_start "127.0.0.1:$ncport http2" "127.0.0.1:$ntport ssl http2"

for _ in $(seq 1 200); do
  if curl -s --http2-prior-knowledge "http://127.0.0.1:$zcport/hello" >/dev/null 2>&1 &&
     curl -sk --http2 "https://127.0.0.1:$ztport/hello" >/dev/null 2>&1 &&
     curl -s --http2-prior-knowledge "http://127.0.0.1:$ncport/hello" >/dev/null 2>&1; then break; fi
  sleep 0.05
done
for u in "http://127.0.0.1:$zcport/hello" "http://127.0.0.1:$ncport/hello"; do
  [[ $(curl -s --http2-prior-knowledge "$u") == "hello world" ]] || { echo "no answer from $u" >&2; cat "$run"/*.log >&2; exit 1; }
done
for u in "https://127.0.0.1:$ztport/hello" "https://127.0.0.1:$ntport/hello"; do
  [[ $(curl -sk --http2 "$u") == "hello world" ]] || { echo "no answer from $u" >&2; cat "$run"/*.log >&2; exit 1; }
done

pids_of() {
  case $1 in
    nginx) sys_nginx_pids ;;
    zever_h2c) echo "$zc_pid" ;;
    zever_h2) echo "$zt_pid" ;;
  esac
}

# measure server url -> "req/s microseconds-of-server-CPU-per-request"
measure() {
  local out rps n t0 t1
  local -a pids
  read -r -a pids <<<"$(pids_of "$1")"
  timeout -s KILL 20 h2load -c"$conns" -m"$m" -D1 "$2" >/dev/null 2>&1 || true
  t0=$(cpu_ticks "${pids[@]}")
  out=$(timeout -s KILL $((seconds + 30)) h2load -c"$conns" -m"$m" -D"$seconds" "$2" 2>&1 || true)
  t1=$(cpu_ticks "${pids[@]}")
  rps=$(echo "$out" | awk '/^finished in/ {gsub(/,/,""); print $4}')
  n=$(echo "$out" | awk '/^requests:/ {print $8}')
  # h2load -D has been seen to wait forever on a loaded machine: such a run (or a failed one)
  # is reported and left out of the medians.
  [[ -n $rps && -n $n && $n -gt 0 ]] || { echo "fail fail"; return; }
  echo "$rps $(echo "($t1 - $t0) * 10000 / $n" | bc -l)"
}

declare -A results cpus
echo "# zever $(bin/zever version 2>/dev/null | head -1) vs $($sys_nginx -v 2>&1), h2load -c$conns -m$m"
echo "# ${rounds} rounds x ${seconds}s, alternating nginx then zever; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
  for t in h2c h2; do
    if [[ $t == h2c ]]; then nu="http://127.0.0.1:$ncport/hello" zu="http://127.0.0.1:$zcport/hello"
    else nu="https://127.0.0.1:$ntport/hello" zu="https://127.0.0.1:$ztport/hello"; fi
    read -r n ncpu <<<"$(measure nginx "$nu")"
    read -r z zcpu <<<"$(measure "zever_$t" "$zu")"
    if [[ $n == fail || $z == fail ]]; then
      echo "round $r  $t  failed (nginx: $n, zever: $z; h2load timed out or failed): left out"
      continue
    fi
    printf "round %s  %-4s  nginx %9.0f req/s %7.1f us CPU/req   zever %9.0f req/s %7.1f us CPU/req\n" \
      "$r" "$t" "$n" "$ncpu" "$z" "$zcpu"
    results[$t.nginx]+="$n "
    results[$t.zever]+="$z "
    cpus[$t.nginx]+="$ncpu "
    cpus[$t.zever]+="$zcpu "
  done
done
for t in h2c h2; do
  [[ -n ${results[$t.nginx]:-} ]] || { echo "$t: no successful run"; continue; }
  n=$(echo "${results[$t.nginx]}" | median)
  z=$(echo "${results[$t.zever]}" | median)
  nc=$(echo "${cpus[$t.nginx]}" | median)
  zc=$(echo "${cpus[$t.zever]}" | median)
  printf "%-4s medians: req/s nginx %9.0f zever %9.0f (zever/nginx %.2fx); CPU/req nginx %.1f us zever %.1f us (%.2fx)\n" \
    "$t" "$n" "$z" "$(echo "$z / $n" | bc -l)" "$nc" "$zc" "$(echo "$zc / $nc" | bc -l)"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
