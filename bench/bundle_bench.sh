#!/usr/bin/env bash
# bench/bundle_bench.sh: a bundle of examples/hello (zever bundle, issue #25) against the zever
# it was built from. Targets: `./dist/hello --help` within 1 ms of `zever --help`; the first
# request served <= 20 ms after start; bundle size <= host size + 2x the app's bytecode.
#
# hyperfine runs the two --help commands side by side (alternating, warm page cache) and the
# difference of medians is printed; callgrind counts the instructions of each (load-independent)
# when valgrind is installed. The first request is timed from the bundle's exec to a 200 on
# /hello (a fresh empty folder, ZEVER_HOME unset). Sizes: the bundle, the built host, the host
# as the bundle carries it (stripped), and each part of the payload.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=bin/zever
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/run"
$bin bundle examples/hello -o "$tmp/run/hello" >/dev/null
hyperfine --warmup 20 --runs "${RUNS:-300}" -N --export-json "$tmp/h.json" \
  -n ZeverHelp "$bin --help" -n BundleHelp "$tmp/run/hello --help" >/dev/null 2>&1
python3 - "$tmp/h.json" <<'PY'
import json, sys
rs = json.load(open(sys.argv[1]))["results"]
for r in rs:
    print("Benchmark%-26s %8d %12.0f ns/op  (median %.3f ms, min %.3f ms)" % (
        r["command"], len(r["times"]), r["median"] * 1e9, r["median"] * 1e3, r["min"] * 1e3))
print("BundleHelpMinusZeverHelp            %+.3f ms (medians)" % ((rs[1]["median"] - rs[0]["median"]) * 1e3))
PY
# The same two commands alternately, one run each in turn (a load burst hits both alike), 200
# pairs: medians and the median of the pairwise differences.
env -u ZEVER_HOME python3 - "$bin" "$tmp/run/hello" "${RUNS:-200}" <<'PY'
import statistics, subprocess, sys, time
zever, bundle, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def once(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t0) * 1e3
for _ in range(10): once([zever, "--help"]); once([bundle, "--help"])
z, b = [], []
for _ in range(runs):
    z.append(once([zever, "--help"])); b.append(once([bundle, "--help"]))
d = [y - x for x, y in zip(z, b)]
print("AlternatingHelp %d pairs: zever median %.3f ms, bundle median %.3f ms, "
      "median of (bundle - zever) %+.3f ms" % (runs, statistics.median(z), statistics.median(b),
                                              statistics.median(d)))
PY
if command -v valgrind >/dev/null; then
  count() {
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$@" >/dev/null 2>"$tmp/cg.err" || true
    grep -o 'refs: .*' "$tmp/cg.err" | tr -s ' ' | cut -d' ' -f2
  }
  printf 'Instructions %-24s %s\n' "zever --help" "$(count $bin --help)"
  printf 'Instructions %-24s %s\n' "bundle --help" "$(count "$tmp/run/hello" --help)"
  # Start, one request, drain and exit: instructions of the whole `serve` process, both ways.
  serve_count() {
    local port; port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cgs.%p" "$@" --listen "127.0.0.1:$port" \
      --workers 1 >/dev/null 2>"$tmp/cgs.err" & local pid=$!
    for _ in $(seq 600); do curl -s -o /dev/null "127.0.0.1:$port/hello" && break; sleep 0.1; done
    kill -TERM "$pid"; wait "$pid" || true
    grep -o 'refs: .*' "$tmp/cgs.err" | tr -s ' ' | cut -d' ' -f2
  }
  printf 'Instructions %-24s %s\n' "zever serve, 1 request" "$(serve_count $bin serve examples/hello)"
  printf 'Instructions %-24s %s\n' "bundle serve, 1 request" "$(cd "$tmp/run" && serve_count ./hello serve)"
fi
# The first request, the bundle and `zever serve examples/hello` alternating (a loaded machine
# moves both alike: compare them, not the absolute numbers).
(cd "$tmp/run" && env -u ZEVER_HOME python3 - ./hello "$OLDPWD/$bin" "$OLDPWD/examples/hello" <<'PY'
import socket, statistics, subprocess, sys, time
bundle, zever, app = sys.argv[1:4]
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def first(cmd):
    port = free_port()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd + ["--listen", "127.0.0.1:%d" % port, "--workers", "1"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            c = socket.create_connection(("127.0.0.1", port), timeout=1)
            c.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            if c.recv(64).startswith(b"HTTP/1.1 200"):
                t = time.perf_counter() - t0; c.close(); break
            c.close()
        except OSError:
            time.sleep(0.0002)
    p.terminate(); p.wait()
    return t
tb, tz = [], []
for _ in range(15):
    tz.append(first([zever, "serve", app]))
    tb.append(first([bundle, "serve"]))
for name, ts in (("ZeverFirstRequest", tz), ("BundleFirstRequest", tb)):
    print("Benchmark%-26s %8d %12.0f ns/op  (median %.2f ms, min %.2f ms)" % (
        name, len(ts), statistics.median(ts) * 1e9, statistics.median(ts) * 1e3, min(ts) * 1e3))
PY
)
cat > "$tmp/sizes.lua" <<'LUA'
local b = require "zever.bundle"
local sums, order = {}, {}
for _, n in ipairs(b.list("")) do
  local top = n:match("^[^/]+")
  if not sums[top] then sums[top] = 0; order[#order + 1] = top end
  sums[top] = sums[top] + #b.read(n)
end
local info = b.info()
print(("BundleSize %-24s %d bytes"):format("total", info.size))
print(("BundleSize %-24s %d bytes"):format("host (stripped)", info.host_size))
for _, top in ipairs(order) do print(("BundleSize %-24s %d bytes"):format(top .. "/", sums[top])) end
LUA
"$tmp/run/hello" run "$tmp/sizes.lua"
app=$("$tmp/run/hello" run "$tmp/sizes.lua" | awk '$2 == "app/" {print $3}')
host=$(stat -c %s "$bin")
total=$(stat -c %s "$tmp/run/hello")
printf 'BundleSize %-24s %d bytes (built host %d + 2 x %d); bundle %d: %s\n' "target" \
  $((host + 2 * app)) "$host" "$app" "$total" \
  "$([ "$total" -le $((host + 2 * app)) ] && echo within || echo over)"
