#!/usr/bin/env bash
# bench/http/callgrind_hello.sh [BIN] [PATH]: user-space instructions per request of one worker
# serving examples/hello, counted by callgrind (load-independent). One client sends requests
# one at a time on one keep-alive connection; the cost per request is the slope between a run
# of N1 and a run of N2 requests, so start-up and exit cancel out. Only the serving (main)
# thread is counted (callgrind --separate-threads).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "bench/http/callgrind_hello.sh: $1" >&2; exit 1; }
# get_n (the client) and cg_total, shared with bench/tfb/callgrind_nginx.sh.
# shellcheck source=bench/http/lib.sh
. "$root/bench/http/lib.sh"
BIN=${1:-bin/zever}
ROUTE=${2:-/hello}
N1=${N1:-2000}
N2=${N2:-12000}
HT=${HANDLER_TIMEOUT:-0}    # > 0: the handler watchdog on (zever serve's default is 60)
tmp=$(mktemp -d)
count() {
  rm -f "$tmp/port"
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/cg.$1" "$BIN" run \
    bench/http/callgrind_hello.lua "$1" "$tmp/port" "$HT" >/dev/null 2>"$tmp/vg.$1" &
  vg=$!
  while [ ! -s "$tmp/port" ]; do sleep 0.1; done
  get_n "$(cat "$tmp/port")" "$1" "$ROUTE"
  wait $vg
  # The main thread's count only (the serving thread): the watchdog thread's wake-ups are per
  # second, not per request, and callgrind's slowdown would multiply them.
  cg_total "$tmp/cg.$1-01"
}
a=$(count "$N1")
b=$(count "$N2")
echo "Ir($N1)=$a Ir($N2)=$b Ir/request=$(( (b - a) / (N2 - N1) ))"
rm -rf "$tmp"
