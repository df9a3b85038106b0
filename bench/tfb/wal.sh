#!/usr/bin/env bash
# bench/tfb/wal.sh TREE...: TFB /updates?queries=20 on zever alone, one tree after the other (a
# tree is a built checkout: its bin/zever serves its bench/tfb/app), for the SQLite write path at
# several workers: a fresh data.py file per tree, `zever serve --workers W`, a 1 s wrk warm-up,
# then `wrk -tW -c64 -d5s`; prints the size of the WAL and its index after the run, req/s, the
# server's CPU time per request (utime+stime from /proc) and the load average. A WAL that never
# restarts grows by every commit: the symptom of issue #24's /updates at 2 workers.
#
# Environment: WORKERS (default 2); STAT: a perf event list (e.g.
# "syscalls:sys_enter_pwrite64,syscalls:sys_enter_futex,context-switches") counted over the 5 s
# run with `perf stat -p` and printed per request. Stops only the servers it started, by PID.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: bench/tfb/wal.sh TREE..." >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
w=${WORKERS:-2}
if ! [[ $w =~ ^[0-9]+$ ]] || ((w < 1)); then echo "bench/tfb/wal.sh: WORKERS wants a count" >&2; exit 2; fi
for c in wrk curl python3; do command -v "$c" >/dev/null || { echo "$c is not installed" >&2; exit 1; }; done
[[ -z ${STAT:-} ]] || command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 1; }
clk_tck=$(getconf CLK_TCK)
run=$(mktemp -d /tmp/zever-tfb-wal.XXXXXX)
pid="" pp=""
cleanup() {
  [[ -n $pp ]] && kill -INT "$pp" 2>/dev/null
  [[ -n $pid ]] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$run"
}
trap cleanup EXIT
ticks() { awk '{print $14 + $15}' /proc/"$1"/stat; }
for tree in "$@"; do
  [[ -x $tree/bin/zever ]] || { echo "bench/tfb/wal.sh: $tree/bin/zever is not built" >&2; exit 1; }
  rm -f "$run"/tfb.db*
  python3 "$here/data.py" "$run/tfb.db"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  (cd "$tree" && DB_DSN="sqlite:$run/tfb.db" exec bin/zever serve bench/tfb/app \
    --listen "127.0.0.1:$port" --workers "$w" --access-log off --drain 1 </dev/null >"$run/out" 2>&1) &
  pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/plaintext" >/dev/null && break; sleep 0.1; done
  url="http://127.0.0.1:$port/updates?queries=20"
  wrk -t"$w" -c64 -d1s "$url" >/dev/null
  before=$(ticks "$pid")
  if [[ -n ${STAT:-} ]]; then
    perf stat -x, -e "$STAT" -p "$pid" -o "$run/stat" -- sleep 5 >/dev/null 2>&1 &
    pp=$!
  fi
  wrk -t"$w" -c64 -d5s "$url" >"$run/wrk"
  after=$(ticks "$pid")
  if [[ -n $pp ]]; then wait "$pp" || true; pp=""; fi
  reqs=$(awk '/ requests in / {print $1}' "$run/wrk")
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$run/wrk")
  echo "$tree: workers $w, $rps req/s, $(awk -v t=$((after - before)) -v hz="$clk_tck" -v n="$reqs" \
    'BEGIN {printf "%.1f", t / hz / n * 1e6}') µs CPU/request, WAL $(stat -c %s "$run/tfb.db-wal")" \
    "bytes, index $(stat -c %s "$run/tfb.db-shm") bytes, load $(cut -d' ' -f1 /proc/loadavg)"
  [[ -n ${STAT:-} ]] && awk -F, -v n="$reqs" '$1 ~ /^[0-9.]+$/ {printf "  %-40s %9.3f a request\n", $3, $1 / n}' "$run/stat"
  kill -TERM "$pid"
  wait "$pid" || true
  pid=""
done
