#!/bin/sh
# bench/db_overhead_pg_callgrind.sh: client instructions per operation of each pair of
# bench/db_overhead_pg_bench.lua (raw FFI libpq vs zever.db on PostgreSQL, the same SQL), counted
# by callgrind (load-independent; the server is a child process valgrind does not follow) with
# bench/callgrind_delta.sh: the slope between runs of N1 and N2 operations after the same set-up,
# so the server's start, the logins and the warm-up cancel out. Prints one line per pair: raw,
# zever, the overhead in %. ZV_DB_OVERHEAD_RAW=block counts the blocking raw side instead (see the
# benchmark's header); ZEVER_DIR picks the tree as for callgrind_delta.sh. Kernel time (the
# syscalls: send, epoll_wait/poll, recv) is not counted: see the CPU-time lines of
# bench/db_overhead_pg_bench.lua for it.
set -e
N1=${N1:-2000}
N2=${N2:-6000}
here=$(cd "$(dirname "$0")" && pwd)
count() { # count MODE -> instructions per operation
  ZV_DB_OVERHEAD_MODE=$1 bash "$here/callgrind_delta.sh" bench/db_overhead_pg_bench.lua "$N1" "$N2" |
    sed -n 's/.*: \([0-9-]*\) Ir\/iteration.*/\1/p'
}
for name in ${PAIRS:-First FirstBuilder FirstPrepared Exec ExecPrepared Transaction}; do
  r=$(count "$name/raw")
  z=$(count "$name/zever")
  awk -v n="$name" -v r="$r" -v z="$z" \
    'BEGIN { printf "%-14s raw %6d  zever %6d instructions/op  overhead %+.1f%%\n", n, r, z,
      (z - r) * 100 / r }'
done
