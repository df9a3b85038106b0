#!/usr/bin/env bash
# bench/first_spec.sh: the time from exec to the first spec of `zever test` (issue #26: <= 50 ms).
#
# A one-spec file whose `it` prints the wall clock (zever.sys.wall, CLOCK_REALTIME) is run with
# `bin/zever test FILE` RUNS times (default 20); the time from just before the exec (Python's
# time.time, the same clock) to that print is the start-up a developer waits for before the
# first spec runs. Prints the median, p90 and min, and the machine load. Then, when valgrind
# is installed and NO_CALLGRIND is not 1, the instructions from exec to the first spec: the spec
# ends the process there (os.exit), so callgrind counts exactly that part.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-20}
tmp=$(mktemp -d /tmp/zever-first-spec.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/first_spec.lua" <<'LUA'
describe("first", function()
  it("prints when it runs", function()
    io.stdout:write(("FIRST %.6f\n"):format(require("zever.sys").wall()))
    io.stdout:flush()
    if os.getenv("FIRST_SPEC_EXIT") == "1" then os.exit(0) end
  end)
end)
LUA
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); $runs runs"
python3 - "$runs" bin/zever "$tmp/first_spec.lua" <<'PY'
import statistics, subprocess, sys, time
runs, zever, spec = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ts = []
for _ in range(runs):
    t0 = time.time()
    out = subprocess.run([zever, "test", spec], capture_output=True, text=True).stdout
    first = [l for l in out.splitlines() if l.startswith("FIRST ")]
    if not first:
        sys.exit("no FIRST line in the output of zever test:\n" + out)
    ts.append((float(first[0].split()[1]) - t0) * 1e3)
ts.sort()
p90 = ts[min(len(ts) - 1, int(round(0.9 * len(ts))) - 1)]
print("BenchmarkTestFirstSpec %3d runs  wall median %7.2f ms  p90 %7.2f ms  min %7.2f ms" % (
    len(ts), statistics.median(ts), p90, ts[0]))
PY
[[ ${NO_CALLGRIND:-0} == 1 ]] && exit 0
command -v valgrind >/dev/null || exit 0
FIRST_SPEC_EXIT=1 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" bin/zever test \
  "$tmp/first_spec.lua" >/dev/null 2>"$tmp/cg.err" || true
printf 'Instructions exec to the first spec %s\n' \
  "$(grep -o 'refs: .*' "$tmp/cg.err" | tr -s ' ' | cut -d' ' -f2)"
