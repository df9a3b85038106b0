#!/usr/bin/env bash
# bench/httpc_bench.sh: the HTTP client (zever.httpc) against Python's http.client and curl,
# side by side, each doing N sequential GETs of /hello on one keep-alive connection to a local
# `zever serve examples/hello` (1 worker). Rounds alternate the clients (the machine is shared:
# ratios of runs made next to each other mean more than absolute numbers); prints each round
# and the medians of requests/s and client CPU microseconds per request, then callgrind's
# instructions per request of the zever client ((Ir(N2) - Ir(N1)) / (N2 - N1)).
#   bash bench/httpc_bench.sh [N=5000] [ROUNDS=5]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-5000}
ROUNDS=${2:-5}
log=$(mktemp)
bin/zever serve examples/hello --listen 127.0.0.1:0 --workers 1 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$log" "$curlcfg"' EXIT
for _ in $(seq 200); do grep -q "on http://" "$log" && break; sleep 0.05; done
port=$(grep -o "on http://127.0.0.1:[0-9]*" "$log" | head -1 | sed 's/.*://')
curlcfg=$(mktemp)
for _ in $(seq "$N"); do echo "url = \"http://127.0.0.1:$port/hello\""; echo "output = /dev/null"; done >"$curlcfg"

zres=(); pres=(); cres=()
for r in $(seq "$ROUNDS"); do
  z=$(bin/zever run bench/httpc_zever.lua 127.0.0.1 "$port" /hello "$N")
  p=$(/usr/bin/python3 bench/httpc_client.py 127.0.0.1 "$port" /hello "$N")
  # curl: one process, N URLs from a config file, one reused connection; wall and CPU from time.
  c=$( { /usr/bin/time -f "%e %U %S" curl -s -K "$curlcfg" >/dev/null; } 2>&1 | tail -1 |
       awk -v n="$N" '{print n, $1, $2 + $3}')
  echo "round $r: zever $z | python $p | curl $c"
  zres+=("$z"); pres+=("$p"); cres+=("$c")
done
summ() { # prints "rps cpu_us_per_req" medians
  printf '%s\n' "$@" | awk '{printf "%.1f %.2f\n", $1/$2, 1e6*$3/$1}' | sort -n -k1 |
    awk '{r[NR]=$1} END {print r[int((NR+1)/2)]}' | tr -d '\n'
  printf ' '
  printf '%s\n' "$@" | awk '{printf "%.2f\n", 1e6*$3/$1}' | sort -n |
    awk '{r[NR]=$1} END {print r[int((NR+1)/2)]}'
}
read -r zr zc <<<"$(summ "${zres[@]}")"
read -r pr pc <<<"$(summ "${pres[@]}")"
read -r cr cc <<<"$(summ "${cres[@]}")"
echo "median req/s: zever $zr, python http.client $pr, curl $cr"
echo "median client CPU us/req: zever $zc, python $pc, curl $cc"
awk -v z="$zr" -v p="$pr" -v c="$cr" 'BEGIN {printf "req/s ratio: zever/python %.2f, zever/curl %.2f\n", z/p, z/c}'
if command -v valgrind >/dev/null; then
  ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null bin/zever run \
    bench/httpc_callgrind.lua "http://127.0.0.1:$port/hello" "$1" 2>&1 |
    grep -o "Collected : [0-9]*" | grep -o "[0-9]*"; }
  a=$(ir 100); b=$(ir 1100)
  echo "callgrind: Ir(100) $a, Ir(1100) $b, per request $(( (b - a) / 1000 ))"
fi
