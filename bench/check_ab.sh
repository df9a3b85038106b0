#!/usr/bin/env bash
# bench/check_ab.sh OLD_HOME [NEW_HOME]: `zever check` on the 200-entity bench schema
# (bench/check_bench.sh's) with two builds side by side: OLD_HOME/bin/zever against NEW_HOME's
# (default: this tree's). A zever home is a built checkout (make), so the whole build is
# compared: C lexer, dsl/, cmd/. The two alternate in ROUNDS rounds (default 6) of RUNS runs each
# (default 10), so that a change of load hits both; the medians are over all runs of each side.
# Prints the load average before and after, the medians, user+sys CPU and the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bench/check_ab.sh OLD_HOME [NEW_HOME]}
new=${2:-$PWD}
rounds=${ROUNDS:-6}
runs=${RUNS:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
KEEP_SCHEMA="$tmp/ws" RUNS=1 bash bench/check_bench.sh >/dev/null
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  for side in old new; do
    home=$old; [ "$side" = new ] && home=$new
    hyperfine --warmup 2 --runs "$runs" -N --export-json "$tmp/$side.$r.json" \
      "$home/bin/zever check $tmp/ws/schema" >/dev/null 2>&1
  done
done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp" "$rounds" "$old" "$new" <<'PY'
import json, statistics, sys
tmp, rounds, homes = sys.argv[1], int(sys.argv[2]), {"old": sys.argv[3], "new": sys.argv[4]}
med = {}
for side in ("old", "new"):
    times, cpu = [], []
    for r in range(1, rounds + 1):
        res = json.load(open("%s/%s.%d.json" % (tmp, side, r)))["results"][0]
        times += res["times"]
        cpu.append(res["user"] + res["system"])
    med[side] = statistics.median(times)
    print("%-3s %-40s median %7.2f ms  min %7.2f ms  cpu %6.2f ms user+sys  (%d runs)" % (
        side, homes[side], med[side] * 1e3, min(times) * 1e3, statistics.mean(cpu) * 1e3, len(times)))
print("new/old median: %.3f" % (med["new"] / med["old"]))
PY
