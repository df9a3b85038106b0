#!/usr/bin/env bash
# bench/callgrind_delta.sh SCRIPT N1 N2 [TOGGLE]: instructions per iteration of a Lua script that
# runs its measured step N times (arg[1]), load-independent: (Ir(N2) - Ir(N1)) / (N2 - N1) under
# callgrind, so start-up and set-up cancel out. TOGGLE (a C function name, e.g. l_exec) counts
# only the instructions inside that function. ZEVER_DIR picks the tree (default: this one), to
# compare two builds of the same script. RUNS=k (default 1) runs k processes at each N and takes
# the slope of the medians: LuaJIT seeds its string hash at random in each process, so a Lua
# path that misses or walks a hash chain (a method looked up on an instance first) costs a few
# instructions more or less from one process to the next, and one pair of runs can mix two
# seeds (RedisSharedHit: 65 to 89 Ir an op on the same trace):
#
#   bash bench/callgrind_delta.sh bench/reclaim_callgrind.lua 200 400
#   ZEVER_DIR=/work/base bash bench/callgrind_delta.sh "$PWD/bench/flush_callgrind.lua" 100 300
set -euo pipefail
script=${1:?usage: bench/callgrind_delta.sh SCRIPT N1 N2 [TOGGLE]} n1=${2:?} n2=${3:?} tog=${4:-}
dir=${ZEVER_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
ir() {
  (cd "$dir" && nice -n 10 valgrind --tool=callgrind ${tog:+--toggle-collect=$tog} \
    --callgrind-out-file=/dev/null bin/zever run "$script" "$1" 2>&1 | awk '/Collected/ { print $4 }')
}
runs=${RUNS:-1}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
if [[ $runs == 1 ]]; then
  a=$(ir "$n1")
  b=$(ir "$n2")
  echo "$script ${tog:-all}: $(( (b - a) / (n2 - n1) )) Ir/iteration (Ir $a at $n1, $b at $n2)"
  exit 0
fi
as=() bs=()
for _ in $(seq "$runs"); do as+=("$(ir "$n1")"); bs+=("$(ir "$n2")"); done
a=$(printf '%s\n' "${as[@]}" | median)
b=$(printf '%s\n' "${bs[@]}" | median)
echo "$script ${tog:-all}: $(( (b - a) / (n2 - n1) )) Ir/iteration (median Ir $a at $n1, $b at" \
  "$n2 over $runs runs; at $n1: ${as[*]}; at $n2: ${bs[*]})"
