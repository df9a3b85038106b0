#!/usr/bin/env bash
# bench/instructions.sh: instructions per op of the C micro-benchmarks, counted by callgrind, so
# that two builds can be compared on a loaded machine (load moves time, never instructions).
#
#   bash bench/instructions.sh [--base TREE] [FILTER]
#
# For every benchmark of build/bench/* (or those whose program or name contains FILTER), it
# picks n from a short timed run (about 10 ms of work), runs the benchmark alone
# (BENCH==Name) at exactly n/4 and n iterations (ZV_BENCH_N) under
# `valgrind --tool=callgrind --toggle-collect=zv_bench_body`, and prints the slope between the
# two, instructions per op: setup inside the benchmark's function cancels out. With --base TREE
# (another checkout, built with `make build/bench/<prog>`: bench.h must know ZV_BENCH_N; copy
# this tree's bench/bench.h there first when it is older) every benchmark present in both is
# counted there at the same n, and the line ends with the ratio new / base:
#
#   Instructions TextDistance              1,234.5 Ir/op   base 1,300.0   0.95x
#
# Benchmarks that exist only here print without a base. Costs ~2-4 s per benchmark and build
# (quiet machine). A benchmark its program runs with a runner of its own (the MB/s ones of
# lexer_bench and mime_bench) or whose work runs on threads it starts (*Threads) cannot be
# counted and says so.
set -euo pipefail
cd "$(dirname "$0")/.."

base=""
if [ "${1:-}" = "--base" ]; then base="$2"; shift 2; fi
filter="${1:-}"
command -v valgrind >/dev/null || { echo "bench/instructions.sh: valgrind is missing" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# count PROG NAME N -> total instructions inside zv_bench_body at ZV_BENCH_N=N
count() {
  local out="$tmp/cg.out"
  rm -f "$out"
  ZV_BENCH_N="$3" valgrind --tool=callgrind --toggle-collect=zv_bench_body \
    --callgrind-out-file="$out" "$1" "=$2" </dev/null >/dev/null 2>&1
  awk '/^(summary|totals):/ { print $2; exit }' "$out"
}

slope() { # PROG NAME N -> Ir/op between N/4 and N
  local n2="$3" n1=$(( $3 / 4 )) a b
  a=$(count "$1" "$2" "$n1")
  b=$(count "$1" "$2" "$n2")
  awk -v a="$a" -v b="$b" -v n1="$n1" -v n2="$n2" 'BEGIN { printf "%.1f", (b - a) / (n2 - n1) }'
}

fmt() { awk -v x="$1" 'BEGIN { s = sprintf("%.1f", x); n = split(s, p, ".");
  i = p[1]; o = ""; while (length(i) > 3) { o = "," substr(i, length(i) - 2) o; i = substr(i, 1, length(i) - 3) }
  printf "%s%s.%s", i, o, p[2] }'; }

for prog in build/bench/*_bench; do
  [ -x "$prog" ] || continue
  name=$(basename "$prog")
  # The names and a 10 ms n of each benchmark of this program.
  ZV_BENCH_TIME=0.01 ZV_BENCH_COUNT=1 "$prog" | while read -r bench n _; do
    # Result lines only: a program may add notes ("# X thread CPU ...").
    [[ "$bench" == Benchmark* ]] || continue
    case="${bench#Benchmark}"
    if [ -n "$filter" ] && [[ "${name,,}" != *"${filter,,}"* ]] && [[ "$case" != *"$filter"* ]]; then
      continue
    fi
    [ "$n" -lt 40 ] && n=40
    if [[ "$case" == *Threads* ]]; then
      # Its work runs on threads it starts; the toggle counts the calling thread only.
      printf "Instructions %-34s %s\n" "$case" "not counted (threads)"
      continue
    fi
    ir=$(slope "$prog" "$case" "$n")
    if awk -v x="$ir" 'BEGIN { exit !(x < 0.5) }'; then
      # Nothing ran inside zv_bench_body: the program runs this one with a runner of its own
      # (throughput benchmarks printing MB/s), which neither takes =Name nor ZV_BENCH_N.
      printf "Instructions %-34s %s\n" "$case" "not counted (own runner)"
      continue
    fi
    line=$(printf "Instructions %-34s %14s Ir/op" "$case" "$(fmt "$ir")")
    if [ -n "$base" ] && [ -x "$base/$prog" ] && ZV_BENCH_N=1 "$base/$prog" "=$case" </dev/null | grep -q .; then
      bir=$(slope "$base/$prog" "$case" "$n")
      ratio=$(awk -v a="$ir" -v b="$bir" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')
      line=$(printf "%s   base %14s   %s" "$line" "$(fmt "$bir")" "$ratio")
    fi
    echo "$line"
  done
done
