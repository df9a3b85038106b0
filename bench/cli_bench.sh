#!/usr/bin/env bash
# bench/cli_bench.sh: start-up cost and size of the zever binary.
#
# Times `bin/zever --help` from process start to exit (warm: the files are in the page cache)
# with hyperfine, and prints Go-style lines with the median, plus the binary's size. The Go
# framework's CLI took 40-56 ms and weighed 309 MB; the target here is <= 10 ms and <= 2 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=bin/zever
json=$(mktemp)
trap 'rm -f "$json"' EXIT
for args in "--help" "version" "helo"; do
  hyperfine --warmup 20 --runs 200 -N --ignore-failure --export-json "$json" \
    "$bin $args" >/dev/null 2>&1
  python3 - "$json" "$args" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
name = {"--help": "CliHelp", "version": "CliVersion", "helo": "CliUnknownCommand"}[sys.argv[2]]
print("Benchmark%-28s %10d %12.0f ns/op  (median %.2f ms, mean %.2f ms, min %.2f ms)" % (
    name, len(r["times"]), r["median"] * 1e9, r["median"] * 1e3, r["mean"] * 1e3, r["min"] * 1e3))
PY
done
size=$(stat -c %s "$bin")
stripped=$(mktemp)
strip -o "$stripped" "$bin"
printf 'BenchmarkCliBinarySize                       %d bytes (%d stripped)\n' "$size" "$(stat -c %s "$stripped")"
rm -f "$stripped"
