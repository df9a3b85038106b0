#!/usr/bin/env bash
# bench/cli_bench.sh: start-up cost and size of the zever binary (issue #26).
#
# One hyperfine run times `luajit -e ''` (the floor: a LuaJIT state and nothing else) side by
# side with `zever --help`, `zever version`, an unknown command (its did-you-mean) and
# `zever run empty.lua`, warm (files in the page cache), and prints Go-style lines with the
# median and the ratio to luajit's median. Instruction counts (callgrind, load-independent) follow
# when valgrind is installed, then the first request of `zever serve examples/hello` after start,
# the wall time of `zever test` on a one-spec file (an upper bound of reaching the first spec),
# and the sizes of the binary and of the lazily loaded modules (lib/zever/*.so).
# Targets: --help, version, unknown <= 2 ms and <= 2x luajit; run empty.lua <= 3 ms; first
# request <= 15 ms; first spec <= 50 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=bin/zever
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: > "$tmp/empty.lua"
printf 'describe("x", function() it("y", function() assert.is_true(true) end) end)\n' \
  > "$tmp/one_spec.lua"
hyperfine --warmup 20 --runs "${RUNS:-200}" -N --ignore-failure --export-json "$tmp/h.json" \
  -n luajit "luajit -e ''" -n CliHelp "$bin --help" -n CliVersion "$bin version" \
  -n CliUnknownCommand "$bin helo" -n CliRunEmpty "$bin run $tmp/empty.lua" >/dev/null 2>&1
python3 - "$tmp/h.json" <<'PY'
import json, sys
rs = json.load(open(sys.argv[1]))["results"]
base = rs[0]["median"]
for r in rs:
    print("Benchmark%-28s %8d %12.0f ns/op  (median %.2f ms, %.2fx luajit -e '', min %.2f ms)" % (
        r["command"], len(r["times"]), r["median"] * 1e9, r["median"] * 1e3, r["median"] / base,
        r["min"] * 1e3))
PY
if command -v valgrind >/dev/null; then
  count() { # prints the instructions of one run of "$@"
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$@" >/dev/null 2>"$tmp/cg.err" || true
    grep -o 'refs: .*' "$tmp/cg.err" | tr -s ' ' | cut -d' ' -f2
  }
  printf 'Instructions %-30s %s\n' "luajit -e ''" "$(count luajit -e '')"
  for a in --help version helo "run $tmp/empty.lua"; do
    # shellcheck disable=SC2086
    printf 'Instructions %-30s %s\n' "zever ${a/$tmp\//}" "$(count $bin $a)"
  done
fi
python3 - "$bin" <<'PY'
import socket, statistics, subprocess, sys, time, os
bin = sys.argv[1]
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
times = []
for _ in range(15):
    port = free_port()
    t0 = time.perf_counter()
    p = subprocess.Popen([bin, "serve", "examples/hello", "--port", str(port), "--workers", "1"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            c = socket.create_connection(("127.0.0.1", port), timeout=1)
            c.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            if c.recv(64).startswith(b"HTTP/1.1 200"):
                times.append(time.perf_counter() - t0); c.close(); break
            c.close()
        except OSError:
            time.sleep(0.0002)
    p.terminate(); p.wait()
print("BenchmarkServeFirstRequest          %8d %12.0f ns/op  (median %.2f ms, min %.2f ms)" % (
    len(times), statistics.median(times) * 1e9, statistics.median(times) * 1e3, min(times) * 1e3))
PY
hyperfine --warmup 3 --runs 20 -N --export-json "$tmp/t.json" "$bin test $tmp/one_spec.lua" \
  >/dev/null 2>&1
python3 - "$tmp/t.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print("BenchmarkTestOneSpec                %8d %12.0f ns/op  (median %.2f ms, min %.2f ms)" % (
    len(r["times"]), r["median"] * 1e9, r["median"] * 1e3, r["min"] * 1e3))
PY
size=$(stat -c %s "$bin")
strip -o "$tmp/stripped" "$bin"
printf 'BenchmarkCliBinarySize                       %d bytes (%d stripped)\n' "$size" "$(stat -c %s "$tmp/stripped")"
for so in lib/zever/*.so; do
  strip -o "$tmp/so" "$so"
  printf 'BenchmarkLazyModuleSize %-20s %d bytes (%d stripped)\n' "$(basename "$so")" "$(stat -c %s "$so")" "$(stat -c %s "$tmp/so")"
done
