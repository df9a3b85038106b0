#!/usr/bin/env bash
# bench/cli_dispatch_compare.sh [BASE]: the dispatcher's start-up, this tree against the Lua tree
# (lua/, cmd/, dsl/) of git revision BASE (default 16a63d2, main before #21's start-up work), with
# the same binary: BASE's tree is extracted to a temporary home, precompiled and indexed as
# `make` does, and run through ZEVER_HOME. Prints callgrind instruction counts (load-independent)
# and then hyperfine medians of alternating runs with the ratio new/base, for `--help`,
# `version`, an unknown command (`helo`) and `run empty.lua`. Under 3 minutes on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-16a63d2}
bin=$PWD/bin/zever
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/home/build"
git archive "$base" lua cmd dsl | tar -x -C "$tmp/home"
(cd "$tmp/home" && ZEVER_HOME="$tmp/home" "$bin" run lua/zever/cli/bytecode.lua \
  $(find lua cmd dsl -name '*.lua') >/dev/null && \
  ZEVER_HOME="$tmp/home" "$bin" run lua/zever/cli/index.lua build/commands.lua)
: > "$tmp/empty.lua"
cases=("--help" "version" "helo" "run $tmp/empty.lua")
if command -v valgrind >/dev/null; then
  printf '%-22s %14s %14s %8s\n' command base new new/base
  for a in "${cases[@]}"; do
    count() {
      # shellcheck disable=SC2086
      env "$@" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$bin" $a >/dev/null 2>"$tmp/cg.err" || true
      grep -o 'refs: .*' "$tmp/cg.err" | tr -s ' ' | cut -d' ' -f2 | tr -d ,
    }
    b=$(count ZEVER_HOME="$tmp/home")
    n=$(count ZEVER_HOME="$PWD")
    printf 'Instructions %-9s %14s %14s %8.3f\n' "${a/$tmp\//}" "$b" "$n" "$(echo "$n / $b" | bc -l)"
  done
fi
for a in "${cases[@]}"; do
  hyperfine --warmup 20 --runs "${RUNS:-200}" -N --ignore-failure --export-json "$tmp/h.json" \
    -n base "env ZEVER_HOME=$tmp/home $bin $a" -n new "env ZEVER_HOME=$PWD $bin $a" >/dev/null 2>&1
  python3 - "$tmp/h.json" "${a/$tmp\//}" <<'PY'
import json, sys
rs = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
b, n = rs["base"]["median"], rs["new"]["median"]
print("Wall %-22s base %.3f ms  new %.3f ms  new/base %.3f" % (sys.argv[2], b * 1e3, n * 1e3, n / b))
PY
done
