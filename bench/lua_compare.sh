#!/usr/bin/env bash
# bench/lua_compare.sh BASE [FILTER]: the Lua-level benchmarks (bench/*.lua, each run with
# `bin/zever run`) of this checkout against another built checkout's, side by side: each bench
# file that exists in both trees runs on its own tree's binary (BASE/bin/zever run BASE/bench/X.lua,
# then bin/zever run bench/X.lua), alternating ROUNDS times (default 3), so a change of load hits
# both. Prints, for every benchmark both print, the median cost of each side and new/base
# (above 1: the new tree is slower). FILTER (a substring of the file name) picks files. Run it on
# a quiet machine. Files that start a server start their own (spec/support/redis_server.lua).
#
# A line counts when it carries one of these costs (lower is better), named by its first word
# when that begins with "Benchmark", else by the words before its first number:
#   N ns/op    N us/op    N ms CPU     N jobs/s run (counted as 1e9/N ns a job)
# so db_lua_bench's "select by primary key  200000  1234.5 ns/op", queue_throughput's jobs/s
# and worker_idle_bench's idle CPU are compared as well as the Benchmark lines.
#
#   bash bench/lua_compare.sh /work/base            # e.g. the pre-kit tree, built with make
#
# Each side runs its own bench/harness.lua. An older tree's harness ran every benchmark of a
# file through one shared loop (later rows paid the first row's trace); to compare like with
# like, copy the tree (without .git) and put this tree's bench/harness.lua in the copy (its API
# is a superset), as BENCHMARKS.md's session-11 re-measure did with /tmp/basefair.
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
  [[ $name == limiter_redis_accuracy.lua ]] && continue   # an accuracy check, not a cost
  for r in $(seq "$rounds"); do
    (cd "$base" && timeout 300 bin/zever run "bench/$name") 2>/dev/null | sed 's/^/base /' \
      >> "$tmp/$name.txt" || true
    timeout 300 bin/zever run "bench/$name" 2>/dev/null | sed 's/^/new /' >> "$tmp/$name.txt" || true
  done
  python3 - "$tmp/$name.txt" "$name" <<'PY'
import re, statistics, sys
NUM = re.compile(r"^-?[0-9][0-9.,]*$")
def cost(words):
    """The cost a line carries, in its unit, or None."""
    for i in range(1, len(words)):
        w, v = words[i], words[i - 1]
        if not NUM.match(v):
            continue
        x = float(v.replace(",", ""))
        if w in ("ns/op", "us/op", "\u00b5s/op"):
            return x, w
        if w == "ms" and i + 1 < len(words) and words[i + 1] == "CPU":
            return x, "ms CPU"
        if w == "jobs/s" and i + 1 < len(words) and words[i + 1] == "run" and x > 0:
            return 1e9 / x, "ns/job"
    return None
rows, units = {}, {}
for line in open(sys.argv[1]):
    side, _, rest = line.rstrip("\n").partition(" ")
    words = rest.split()
    c = words and cost(words)
    if not c:
        continue
    if words[0].startswith("Benchmark"):
        name = words[0]
    else:
        lead = []
        for w in words:
            if NUM.match(w):
                break
            lead.append(w)
        name = "_".join(lead)[:44]
    if not name:
        continue
    rows.setdefault(name, {}).setdefault(side, []).append(c[0])
    units[name] = c[1]
for bench, sides in rows.items():
    if "base" in sides and "new" in sides:
        b, n = statistics.median(sides["base"]), statistics.median(sides["new"])
        u = units[bench]
        print("%-28s %-44s base %10.2f %-6s new %10.2f %-6s new/base %.2f" % (sys.argv[2], bench, b, u, n, u, n / b if b else float("nan")))
    else:
        print("%-28s %-44s only in %s" % (sys.argv[2], bench, "/".join(sorted(sides))))
PY
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
