#!/usr/bin/env bash
# bench/ws_fanout_callgrind.sh: server instructions per delivered broadcast message (the memory
# bus, 1 worker): bench/ws_fanout.sh's app under callgrind, its load client run twice (S1 and
# S2 seconds, RECEIVERS receivers), the slope of the worker's instructions against the messages
# delivered (start-up and handshakes cancel out). Load-independent.
#
#   bash bench/ws_fanout_callgrind.sh      (RECEIVERS=100 DEPTH=32 S1=2 S2=6)
set -euo pipefail
cd "$(dirname "$0")/.."
RECEIVERS=${RECEIVERS:-100}
DEPTH=${DEPTH:-32}
S1=${S1:-2}
S2=${S2:-6}
mkdir -p build/bench
cc -std=c99 -D_GNU_SOURCE -O2 -Ihost bench/ws_fanout_load.c host/http/ws.c -o build/bench/ws_fanout_load
tmp=$(mktemp -d /tmp/zever-ws-fanout-cg-XXXXXX)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
sed -n '/^cat > "\$tmp\/app.lua" <<.LUA.$/,/^LUA$/p' bench/ws_fanout.sh | sed '1d;$d' > "$tmp/app.lua"
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 600); do (echo > /dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }
one() { # seconds -> "instructions deliveries"
  local p out ir
  p=$(port)
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/cg.$1" \
    bin/zever serve "$tmp" --listen 127.0.0.1:$p --workers 1 --access-log off >"$tmp/log" 2>&1 &
  pid=$!
  wait_port $p
  out=$(build/bench/ws_fanout_load "$p" "$RECEIVERS" "$DEPTH" "$1")
  kill -INT $pid; wait $pid 2>/dev/null || true
  pid=
  # The worker thread: the thread file with the most instructions.
  ir=$(for f in "$tmp"/cg."$1"-*; do awk '/^summary:/ {print $2}' "$f"; done | sort -n | tail -1)
  set -- "$1" $out
  echo "$ir $(echo "$2 * $1" | bc -l)"
  rm -f "$tmp"/cg."$1"*
}
read -r i1 d1 <<<"$(one "$S1")"
read -r i2 d2 <<<"$(one "$S2")"
printf 'WsFanout memory: %.0f instructions per delivered message (worker thread; %.0f and %.0f deliveries, %d receivers)\n' \
  "$(echo "($i2 - $i1) / ($d2 - $d1)" | bc -l)" "$d1" "$d2" "$RECEIVERS"
