#!/usr/bin/env bash
# bench/tfb/callgrind_workers.sh [BIN]: user-space instructions per TFB /updates?queries=20
# request of `zever serve bench/tfb/app --workers 2`, both worker threads together, counted by
# callgrind (load-independent; valgrind runs one thread at a time, switching at system calls and
# blocking waits, so the two workers still contend for SQLite's write lock and WAL). A client
# keeps 4 connections busy (one thread each, requests one at a time); the cost per request is the
# slope between a run of N1 and a run of N2 requests on a fresh copy of bench/tfb/data.py's file
# each, so start-up, shutdown and the first statements' preparation cancel out. Prints the WAL's
# size after each run. N1/N2: default 400/2000.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-bin/zever}
N1=${N1:-400}
N2=${N2:-2000}
tmp=$(mktemp -d /tmp/zever-tfb-cgw.XXXXXX)
vg=""
trap 'if [[ -n $vg ]]; then kill -TERM "$vg" 2>/dev/null; fi; rm -rf "$tmp"' EXIT
python3 bench/tfb/data.py "$tmp/tfb.db"
count() { # count N: prints the two workers' instructions and the WAL size
  rm -f "$tmp"/run.db* "$tmp"/cg.* "$tmp/vg"
  cp "$tmp/tfb.db" "$tmp/run.db"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  DB_DSN="sqlite:$tmp/run.db" valgrind --tool=callgrind --separate-threads=yes \
    --callgrind-out-file="$tmp/cg" "$BIN" serve bench/tfb/app --workers 2 --access-log off \
    --handler-timeout 0 --listen "127.0.0.1:$port" >/dev/null 2>"$tmp/vg" &
  vg=$!
  while ! grep -q "serving" "$tmp/vg"; do sleep 0.2; done
  python3 - "$port" "$1" <<'PY'
import http.client, sys, threading
port, n = int(sys.argv[1]), int(sys.argv[2])
def client(k):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    for _ in range(k):
        c.request("GET", "/updates?queries=20")
        r = c.getresponse()
        r.read()
        assert r.status == 200, r.status
ts = [threading.Thread(target=client, args=(n // 4,)) for _ in range(4)]
for t in ts: t.start()
for t in ts: t.join()
PY
  local wal
  wal=$(stat -c %s "$tmp/run.db-wal")
  kill -TERM "$vg"
  wait "$vg" || true
  vg=""
  # Threads 2 and 3 are the workers (1 is the main thread).
  local sum=0 f v
  for f in "$tmp"/cg-02 "$tmp"/cg-03; do
    v=$(grep '^summary:\|^totals:' "$f" | head -1 | grep -o '[0-9]*$')
    sum=$((sum + v))
  done
  echo "$sum $wal"
}
read -r a wa <<<"$(count "$N1")"
read -r b wb <<<"$(count "$N2")"
echo "Ir($N1)=$a Ir($N2)=$b Ir/request=$(((b - a) / (N2 - N1))) WAL after: $wa / $wb bytes"
