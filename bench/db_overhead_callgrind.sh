#!/bin/sh
# bench/db_overhead_callgrind.sh [TREE]: instructions per operation of each pair of
# bench/db_overhead_lua_bench.lua (raw FFI libsqlite3 vs zever.db, the same SQL), counted by
# callgrind (load-independent) through bench/callgrind_delta.sh: the slope between runs of N1
# and N2 operations after the same warm-up, so set-up cancels out. TREE (default: this one) is
# the built checkout whose bin/zever and Lua code run this tree's bench file. Prints one line per
# pair: raw, zever, the overhead in %. PAIRS picks pairs (default below).
set -e
cd "$(dirname "$0")/.."
here=$(pwd)
N1=${N1:-20000}
N2=${N2:-60000}
count() { # count MODE -> instructions per operation
  ZV_DB_OVERHEAD_MODE=$1 ZEVER_DIR=${TREE:-$here} \
    bash bench/callgrind_delta.sh "$here/bench/db_overhead_lua_bench.lua" "$N1" "$N2" |
    sed -n 's/.*: \(-*[0-9]*\) Ir\/iteration.*/\1/p'
}
TREE=${1:-}
for name in ${PAIRS:-First FirstBuilder FirstPrepared Exec ExecPrepared Transaction}; do
  r=$(count "$name/raw")
  z=$(count "$name/zever")
  awk -v n="$name" -v r="$r" -v z="$z" \
    'BEGIN { printf "%-14s raw %6d  zever %6d instructions/op  overhead %+.1f%%\n", n, r, z,
      (z - r) * 100 / r }'
done
