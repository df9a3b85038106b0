#!/bin/sh
# bench/session_compare.sh [BASE]: a session's read + write per request, the Lua tree of commit
# BASE (default 16a63d2, before the recent-records cache) against this checkout's, side by side
# on the same binary (ZEVER_HOME picks the Lua tree; both are precompiled to bytecode, as make
# does), alternating ROUNDS times (default 5) so that load moves both alike. Each run prints the
# CPU time of its own process, best of 7 x 50,000 requests (bench/session_lua_bench.lua). Prints
# each round and the medians; run it from the checkout's root on a quiet machine (~1 minute).
#
#   sh bench/session_compare.sh [BASE]
#   CALLGRIND=1 sh bench/session_compare.sh   # also the instructions a request (rw, read, none)
#   CASE=SessionReadWriteChain sh bench/session_compare.sh   # next as zever.app passes it
set -e
BASE=${1:-16a63d2}
ROUNDS=${ROUNDS:-5}
BIN=$(pwd)/bin/zever
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/base"
git archive "$BASE" lua cmd dsl bench | tar -x -C "$tmp/base"
(cd "$tmp/base" && ZEVER_HOME="$tmp/base" "$BIN" run lua/zever/cli/bytecode.lua \
  $(find lua cmd dsl -name '*.lua'))

# CASE=SessionReadWriteChain: next as zever.app passes it (see bench/session_lua_bench.lua);
# both trees run this checkout's bench file.
CASE=${CASE:-SessionReadWrite}
BENCH=$(pwd)/bench/session_lua_bench.lua
cpu() { # cpu HOME -> ns/op
  (cd "$1" && ZEVER_HOME="$1" "$BIN" run "$BENCH" "$CASE") |
    sed -n "s/^CPU $CASE \([0-9]*\) ns.*/\1/p"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

: >"$tmp/old"
: >"$tmp/new"
i=1
while [ "$i" -le "$ROUNDS" ]; do
  o=$(cpu "$tmp/base")
  n=$(cpu "$(pwd)")
  echo "round $i: $CASE CPU base $o ns/op, new $n ns/op"
  echo "$o" >>"$tmp/old"
  echo "$n" >>"$tmp/new"
  i=$((i + 1))
done
mo=$(median <"$tmp/old")
mn=$(median <"$tmp/new")
awk -v o="$mo" -v n="$mn" 'BEGIN { printf "median of rounds: base %d ns/op, new %d ns/op (new/base %.2f; target <= 2000)\n", o, n, n / o }'

if [ -n "$CALLGRIND" ]; then
  count() { # count HOME CASE N -> instructions
    (cd "$1" && ZEVER_HOME="$1" valgrind --tool=callgrind --smc-check=all-non-file \
      --callgrind-out-file="$tmp/cg" "$BIN" run bench/session_callgrind.lua "$2" "$3" \
      >/dev/null 2>&1)
    grep '^summary:\|^totals:' "$tmp/cg" | head -1 | grep -o '[0-9]*$'
  }
  for c in rw read none; do
    for h in "$tmp/base" "$(pwd)"; do
      a=$(count "$h" "$c" 20000)
      b=$(count "$h" "$c" 60000)
      echo "callgrind $c $( [ "$h" = "$(pwd)" ] && echo new || echo base): $(( (b - a) / 40000 )) instructions a request"
    done
  done
fi
