#!/bin/sh
# bench/http/callgrind_phase.sh [BIN] [PATH]: user-space instructions per request of the worker
# thread of `zever serve APP --workers 1` (access log off), counted by callgrind in ONE process:
# after the warm-up (WARM, then N0 requests to PATH) the counters are zeroed
# (callgrind_control -z), N requests to PATH are sent, and the counters are dumped
# (callgrind_control -d); the dump divided by N is the cost per request.
#
# Why not the slope of bench/http/callgrind_serve.sh (two processes, N1 and N2 requests): which
# functions LuaJIT compiles first depends on its hot counters, which are shared by hashed
# bytecode address, and the addresses differ from process to process, so two processes record
# different traces and spend different amounts on recording them. With a short warm-up that
# difference is small against the slope; after a warm-up of other routes (WARM) it is not: the
# two processes' warm-ups differ by millions of instructions and the slope of /db after
# /queries + /json + /fortunes read 13.5k-22.0k instructions a request on one tree (BENCHMARKS.md
# "Session 13"). Here one process is counted after its warm-up, so each run is the steady
# cost of that process's traces; run it several times to see the spread across processes.
#
# APP: the app folder (default examples/hello). DB_DSN: passed to the server (bench/tfb/app
# needs it: a copy of bench/tfb/data.py's file). WARM="ROUTE:N ...": requests to other routes
# first, on the same keep-alive connection. N0 (default 1000), N (default 4000).
# KEEP=DIR: copy the callgrind dump of the worker thread there (cg.phase-02).
set -e
BIN=${1:-bin/zever}
ROUTE=${2:-/hello}
APP=${APP:-examples/hello}
N0=${N0:-1000}
N=${N:-4000}
tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/cg" "$BIN" serve \
  "$APP" --workers 1 --access-log off --listen "127.0.0.1:$port" >/dev/null 2>"$tmp/vg" &
vg=$!
touch "$tmp/vg"
# Wait for the worker's "serving" line (a connect could hit the main thread's port probe).
while ! grep -q "serving" "$tmp/vg"; do sleep 0.2; done
send() {
  python3 - "$port" "$1" <<'PY'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
for spec in sys.argv[2].split():
    route, n = spec.rsplit(":", 1)
    for _ in range(int(n)):
        c.request("GET", route)
        r = c.getresponse()
        r.read()
        assert r.status == 200, (route, r.status)
PY
}
send "${WARM:-} $ROUTE:$N0"
callgrind_control -z "$vg" >/dev/null 2>&1
send "$ROUTE:$N"
callgrind_control -d "$vg" >/dev/null 2>&1
kill -TERM "$vg"
wait "$vg" || true
# Thread 2 is the worker (1 is the main thread, 3 the watchdog when on); .1 is the first dump.
ir=$(grep '^summary:\|^totals:' "$tmp/cg.1-02" | head -1 | grep -o '[0-9]*$')
echo "Ir($N)=$ir Ir/request=$((ir / N))"
[ -n "${KEEP:-}" ] && cp "$tmp/cg.1-02" "$KEEP/cg.phase-02"
rm -rf "$tmp"
