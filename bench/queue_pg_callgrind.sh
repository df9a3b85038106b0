#!/bin/sh
# bench/queue_pg_callgrind.sh [BIN]: client instructions a job of the db queue on PostgreSQL
# (bench/queue_pg_callgrind.lua under callgrind): the slope between N1 and N2 jobs of
# "dispatch" (dispatch_batch only) and of "run" (the same, then an in-process worker with 4
# slots runs them); run - dispatch is what a job costs the worker (claim, handler, ack).
set -e
BIN=${1:-bin/zever}
N1=${N1:-2000}
N2=${N2:-6000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() { # count MODE N -> instructions
  ZV_QCG_MODE=$1 ZV_QCG_N=$2 valgrind --tool=callgrind \
    --callgrind-out-file="$tmp/cg-$1-$2" "$BIN" run bench/queue_pg_callgrind.lua >/dev/null \
    2>"$tmp/err-$1-$2"
  grep connections "$tmp/err-$1-$2" >&2
  grep '^summary:\|^totals:' "$tmp/cg-$1-$2" | head -1 | grep -o '[0-9]*$'
}
d1=$(count dispatch "$N1"); d2=$(count dispatch "$N2")
r1=$(count run "$N1"); r2=$(count run "$N2")
d=$(( (d2 - d1) / (N2 - N1) )); r=$(( (r2 - r1) / (N2 - N1) ))
echo "QueuePgDispatchBatch  $d instructions/job (client)"
echo "QueuePgRun            $r instructions/job (client, dispatch included)"
echo "QueuePgWorker         $(( r - d )) instructions/job (client: claim, handler, ack)"
if [ -n "$KEEP" ]; then cp "$tmp/cg-run-$N1" "$KEEP.$N1"; cp "$tmp/cg-run-$N2" "$KEEP.$N2"; fi
