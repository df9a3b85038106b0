#!/usr/bin/env bash
# bench/tfb/asan.sh: the TechEmpower app (bench/tfb/app) served by bin/zever-asan (AddressSanitizer
# + UndefinedBehaviorSanitizer, leak detection on) under load: check.py's TFB rules, then wrk on
# every route (and /queries, /updates at 500 and 5 rows), check.py again, then SIGTERM. Exit 0
# only when both checks held, the server exited 0 and its stderr has no sanitizer or leak report.
# The proof asked of a change to a served hot path compiled by LuaJIT (docs/json.md: the JSON
# buffer's history). Needs `make bin/zever-asan` and wrk.
# WORKERS (default 2), SECONDS_EACH (wrk seconds per route, default 4).
set -uo pipefail
cd "$(dirname "$0")/../.."
[[ -x bin/zever-asan ]] || { echo "bench/tfb/asan.sh: bin/zever-asan is not built (make bin/zever-asan)" >&2; exit 2; }
workers=${WORKERS:-2}
secs=${SECONDS_EACH:-4}
t=$(mktemp -d /tmp/zever-tfb-asan.XXXXXX)
trap 'rm -rf "$t"' EXIT
python3 bench/tfb/data.py "$t/tfb.db"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  DB_DSN="sqlite:$t/tfb.db" bin/zever-asan serve bench/tfb/app --workers "$workers" \
  --access-log off --listen "127.0.0.1:$port" >"$t/out" 2>"$t/err" &
pid=$!
until grep -q serving "$t/err" "$t/out" 2>/dev/null; do
  kill -0 "$pid" 2>/dev/null || { cat "$t/err" >&2; exit 1; }
  sleep 0.2
done
fail=0
python3 bench/tfb/check.py zever-asan "http://127.0.0.1:$port" "$t/tfb.db" || fail=1
for r in /db "/queries?queries=20" "/updates?queries=20" /json /plaintext /fortunes \
  "/queries?queries=500" "/updates?queries=5"; do
  printf '%-22s ' "$r"
  wrk -t2 -c16 -d"${secs}s" "http://127.0.0.1:$port$r" | awk '/Requests\/sec|Non-2xx|Socket errors/' |
    tr '\n' ' '
  echo
done
python3 bench/tfb/check.py zever-asan "http://127.0.0.1:$port" "$t/tfb.db" || fail=1
kill -TERM "$pid"
wait "$pid"
rc=$?
echo "server exit $rc"
[[ $rc == 0 ]] || fail=1
if grep -qE "ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error" "$t/err"; then
  grep -A30 -E "ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error" "$t/err" >&2
  fail=1
fi
if [[ $fail == 0 ]]; then echo "# zever-asan: TFB rules held, no sanitizer or leak report"; fi
exit "$fail"
