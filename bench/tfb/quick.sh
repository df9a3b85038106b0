#!/usr/bin/env bash
# bench/tfb/quick.sh: the TechEmpower rows issue #24 judges on a quiet machine, in under 3
# minutes: db, queries (20), updates (20) and fortunes at 2 workers, zever against nginx +
# ngx_lua side by side (bench/tfb/run.sh: alternating rounds, medians, ratios against the
# targets). 3 rounds x 4 tests x 2 servers x (1 s warm-up + 5 s) = 144 s of wrk, plus start-up
# and the TFB checks. Any BENCH_TFB_* setting given in the environment wins.
set -euo pipefail
cd "$(dirname "$0")/../.."
export BENCH_TFB_WORKERS=${BENCH_TFB_WORKERS:-2}
export BENCH_TFB_TESTS=${BENCH_TFB_TESTS:-db queries updates fortunes}
export BENCH_TFB_ROUNDS=${BENCH_TFB_ROUNDS:-3}
export BENCH_TFB_SECONDS=${BENCH_TFB_SECONDS:-5}
exec bash bench/tfb/run.sh
