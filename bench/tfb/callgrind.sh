#!/usr/bin/env bash
# bench/tfb/callgrind.sh [BIN]: user-space instructions per request of zever's worker thread for
# each TechEmpower test type (bench/tfb/app), counted by callgrind through
# bench/http/callgrind_serve.sh (one client, one keep-alive connection, the slope between two run
# lengths): load-independent, so it shows changes too small for wall time on a shared machine.
# The database is a fresh copy of bench/tfb/data.py's file per test type. N1/N2 (the run
# lengths) are 1000/5000 for the one-row tests and 200/1000 for queries and updates (20 rows).
# TESTS: the test types to count (default all six). TFB_APP: the app folder (default bench/tfb/app).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-bin/zever}
TESTS=${TESTS:-plaintext json db queries updates fortunes}
tmp=$(mktemp -d /tmp/zever-tfb-cg.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
python3 bench/tfb/data.py "$tmp/tfb.db"
for t in $TESTS; do
  case $t in
    queries | updates) route="/$t?queries=20" n1=200 n2=1000 ;;
    *) route="/$t" n1=1000 n2=5000 ;;
  esac
  rm -f "$tmp/run.db"*
  cp "$tmp/tfb.db" "$tmp/run.db"
  out=$(DB_DSN="sqlite:$tmp/run.db" APP=${TFB_APP:-bench/tfb/app} N1=$n1 N2=$n2 \
    sh bench/http/callgrind_serve.sh "$BIN" "$route")
  printf '%-10s %s\n' "$t" "$out"
done
