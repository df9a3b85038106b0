#!/bin/sh
# bench/db_overhead_pg_callgrind.sh [BIN]: client instructions per operation of each pair of
# bench/db_overhead_pg_bench.lua (raw FFI libpq vs zever.db on PostgreSQL, the same SQL), counted
# by callgrind (load-independent; the server is a child process valgrind does not follow): the
# slope between runs of N1 and N2 operations after the same set-up, so the server's start, the
# logins and the warm-up cancel out. Prints one line per pair: raw, zever, the overhead in %.
# Kernel time (the syscalls: send, poll/epoll_wait, recv) is not counted: see the CPU-time lines
# of bench/db_overhead_pg_bench.lua for it.
set -e
BIN=${1:-bin/zever}
N1=${N1:-2000}
N2=${N2:-6000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() { # count MODE N -> instructions
  ZV_DB_OVERHEAD_MODE=$1 ZV_DB_OVERHEAD_N=$2 valgrind --tool=callgrind \
    --callgrind-out-file="$tmp/cg" "$BIN" run bench/db_overhead_pg_bench.lua >/dev/null 2>&1
  grep '^summary:\|^totals:' "$tmp/cg" | head -1 | grep -o '[0-9]*$'
  if [ -n "$KEEP" ]; then cp "$tmp/cg" "$KEEP.$(echo "$1" | tr / _).$2"; fi
}
for name in ${PAIRS:-First FirstBuilder FirstPrepared Exec ExecPrepared Transaction}; do
  r1=$(count "$name/raw" "$N1"); r2=$(count "$name/raw" "$N2")
  z1=$(count "$name/zever" "$N1"); z2=$(count "$name/zever" "$N2")
  awk -v n="$name" -v r=$(( (r2 - r1) / (N2 - N1) )) -v z=$(( (z2 - z1) / (N2 - N1) )) \
    'BEGIN { printf "%-14s raw %6d  zever %6d instructions/op  overhead %+.1f%%\n", n, r, z,
      (z - r) * 100 / r }'
done
