#!/usr/bin/env bash
# bench/ws_fanout.sh: WebSocket broadcast fan-out (docs/websockets.md "Rooms and broadcast").
# RECEIVERS connections (1,000 by default) join one room; a sender's every message is answered
# by app:broadcast of it (64 bytes) to the room; the C load client (bench/ws_fanout_load.c)
# keeps DEPTH broadcasts in flight, one done when every receiver has it. Prints messages
# delivered per second, broadcasts per second, and the server's CPU per delivered message
# (utime + stime of the server process over the run, /proc/PID/stat) and its RSS after the
# run: the median of RUNS runs of SECS seconds, for
#   memory  (1 worker, the default in-process event bus)
#   inproc  (2 workers, EVENTBUS_ADAPTER=inproc: every broadcast reaches both workers' rooms)
#
#   bash bench/ws_fanout.sh          (make bench BENCH=WsFanout; ONLY=memory|inproc runs one)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-4}
RUNS=${RUNS:-3}
RECEIVERS=${RECEIVERS:-1000}
DEPTH=${DEPTH:-32}
mkdir -p build/bench
cc -std=c99 -D_GNU_SOURCE -O2 -Ihost bench/ws_fanout_load.c host/http/ws.c -o build/bench/ws_fanout_load
tmp=$(mktemp -d /tmp/zever-ws-fanout-XXXXXX)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
cat > "$tmp/app.lua" <<'LUA'
local zever = require "zever"
local app = zever.app()
app:websocket("/room", function(ws)
  assert(ws:join("r"))
  ws:send("j") -- the client starts once every receiver said it joined
  while ws:recv() do end
end, { ping_interval = false })
app:websocket("/pub", function(ws)
  while true do
    local msg = ws:recv()
    if not msg then return end
    assert(app:broadcast("r", msg))
  end
end, { ping_interval = false })
return app
LUA
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu() { awk '{print $14 + $15}' /proc/$1/stat; }
rss() { awk '/VmRSS/{print $2}' /proc/$1/status; }
wait_port() { for _ in $(seq 1 200); do (echo > /dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; return 1; }
med() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
run() { # name workers adapter
  local p hz rates=() bcs=() cpus=() rsss=()
  hz=$(getconf CLK_TCK)
  for _ in $(seq 1 "$RUNS"); do
    p=$(port)
    EVENTBUS_ADAPTER=$3 bin/zever serve "$tmp" --listen 127.0.0.1:$p --workers "$2" \
      --access-log off >"$tmp/zever.log" 2>&1 &
    pid=$!
    wait_port $p
    local c0 c1 out
    c0=$(cpu $pid)
    out=$(build/bench/ws_fanout_load "$p" "$RECEIVERS" "$DEPTH" "$SECS")
    c1=$(cpu $pid)
    set -- "$1" "$2" "$3" $out
    rates+=("$4")
    bcs+=("$5")
    cpus+=("$(awk -v d=$((c1 - c0)) -v hz="$hz" -v r="$4" -v s="$SECS" \
      'BEGIN{printf "%.3f", d / hz / (r * s) * 1e6}')")
    rsss+=("$(rss $pid)")
    kill $pid; wait $pid 2>/dev/null || true
    pid=
  done
  printf '%-34s %10s msgs/s delivered  %7s broadcasts/s  %6s us CPU/msg  RSS %s KiB  (%d receivers, depth %d, %ds, median of %d)\n' \
    "WsFanout $1" "$(printf '%s\n' "${rates[@]}" | med)" "$(printf '%s\n' "${bcs[@]}" | med)" \
    "$(printf '%s\n' "${cpus[@]}" | med)" "$(printf '%s\n' "${rsss[@]}" | med)" \
    "$RECEIVERS" "$DEPTH" "$SECS" "$RUNS"
}
[ "${ONLY:-}" = inproc ] || run "memory (1 worker)" 1 memory
[ "${ONLY:-}" = memory ] || run "inproc (2 workers)" 2 inproc
