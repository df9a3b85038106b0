#!/usr/bin/env bash
# bench/callgrind_delta.sh SCRIPT N1 N2 [TOGGLE]: instructions per iteration of a Lua script that
# runs its measured step N times (arg[1]), load-independent: (Ir(N2) - Ir(N1)) / (N2 - N1) under
# callgrind, so start-up and set-up cancel out. TOGGLE (a C function name, e.g. l_exec) counts
# only the instructions inside that function. ZEVER_DIR picks the tree (default: this one), to
# compare two builds of the same script:
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
a=$(ir "$n1")
b=$(ir "$n2")
echo "$script ${tog:-all}: $(( (b - a) / (n2 - n1) )) Ir/iteration (Ir $a at $n1, $b at $n2)"
