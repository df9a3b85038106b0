#!/usr/bin/env bash
# bench/lua_compare.sh BASE [FILTER]: the Lua-level benchmarks (bench/*_lua_bench.lua and the
# other harness files) of this checkout against another built checkout's, side by side: each
# bench file that exists in both trees runs on its own tree's binary (BASE/bin/zever run
# BASE/bench/X.lua, then bin/zever run bench/X.lua), alternating ROUNDS times (default 3), so
# a change of load hits both. Prints, for every benchmark name both print, the median ns/op of
# each side and new/base. Files that need a server (redis) are skipped unless REDIS_URL is set.
# FILTER (a substring of the file name) picks files. Run it on a quiet machine.
#
#   bash bench/lua_compare.sh /work/base            # e.g. the pre-kit tree, built with make
set -euo pipefail
cd "$(dirname "$0")/.."
base=$(cd "${1:?usage: bench/lua_compare.sh BASE [FILTER]}" && pwd)
filter=${2:-}
rounds=${ROUNDS:-3}
[[ -x $base/bin/zever ]] || { echo "no $base/bin/zever: run make there first" >&2; exit 2; }
tmp=$(mktemp -d /tmp/zever-lua-compare.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "# load: $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds, alternating base then new"
for f in "$base"/bench/*.lua; do
  name=$(basename "$f")
  [[ $name == harness.lua ]] && continue
  [[ -n $filter && $name != *"$filter"* ]] && continue
  [[ -f bench/$name ]] || continue
  if [[ $name == *redis* && -z ${REDIS_URL:-} ]]; then echo "# $name: skipped (needs REDIS_URL)"; continue; fi
  for r in $(seq "$rounds"); do
    (cd "$base" && timeout 300 bin/zever run "bench/$name") 2>/dev/null \
      | awk -v r="$r" '$1 ~ /^Benchmark/ { for (i = 2; i <= NF; i++) if ($i == "ns/op") print "base", $1, $(i-1) }' \
      >> "$tmp/$name.txt" || true
    timeout 300 bin/zever run "bench/$name" 2>/dev/null \
      | awk -v r="$r" '$1 ~ /^Benchmark/ { for (i = 2; i <= NF; i++) if ($i == "ns/op") print "new", $1, $(i-1) }' \
      >> "$tmp/$name.txt" || true
  done
  python3 - "$tmp/$name.txt" "$name" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    side, bench, ns = line.split()
    rows.setdefault(bench, {}).setdefault(side, []).append(float(ns))
for bench, sides in rows.items():
    if "base" in sides and "new" in sides:
        b, n = statistics.median(sides["base"]), statistics.median(sides["new"])
        print("%-28s %-44s base %10.2f ns/op  new %10.2f ns/op  new/base %.2f" % (sys.argv[2], bench, b, n, n / b if b else float("nan")))
    else:
        print("%-28s %-44s only in %s" % (sys.argv[2], bench, "/".join(sorted(sides))))
PY
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
