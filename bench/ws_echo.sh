#!/usr/bin/env bash
# bench/ws_echo.sh: WebSocket echo of 64-byte messages, zever (one worker) against the Python
# websockets server (Debian's python3-websockets, asyncio; the floor), with the same C load
# client (bench/ws_echo_load.c: CONNS connections x DEPTH messages in flight). Prints
# messages/s and the server's CPU per message (utime + stime of the server process over the
# run, from /proc/PID/stat), the median of RUNS runs of SECS seconds each.
# Then permessage-deflate (RFC 7692) on zever: the client sends each 64-byte JSON message
# compressed (RSV1); the server answers compressed (/zecho0: threshold 0, context takeover) or
# plain (/zecho: the default 256-byte threshold keeps 64-byte answers plain).
#
#   bash bench/ws_echo.sh          (make bench BENCH=WsEcho)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-4}
RUNS=${RUNS:-3}
CONNS=${CONNS:-16}
DEPTH=${DEPTH:-16}
mkdir -p build/bench
cc -std=c99 -D_GNU_SOURCE -O2 -Ihost bench/ws_echo_load.c host/http/ws.c -lz -o build/bench/ws_echo_load
tmp=$(mktemp -d /tmp/zever-ws-bench-XXXXXX)
trap 'kill $pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
cat > "$tmp/app.lua" <<'LUA'
local zever = require "zever"
local app = zever.app()
app:websocket("/echo", function(ws)
  while true do
    local msg, kind = ws:recv()
    if not msg then return end
    ws:send(msg, kind)
  end
end, { ping_interval = false })
local function echo(ws)
  while true do
    local msg, kind = ws:recv()
    if not msg then return end
    ws:send(msg, kind)
  end
end
app:websocket("/zecho", echo, { ping_interval = false, deflate = true })
app:websocket("/zecho0", echo, { ping_interval = false, deflate = { threshold = 0 } })
return app
LUA
cat > "$tmp/echo.py" <<'PY'
import asyncio, sys, websockets
async def echo(ws, path=None):
    async for m in ws:
        await ws.send(m)
async def main():
    async with websockets.serve(echo, "127.0.0.1", int(sys.argv[1]), compression=None):
        await asyncio.Future()
asyncio.run(main())
PY
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu() { awk '{print $14 + $15}' /proc/$1/stat; }
wait_port() { for _ in $(seq 1 200); do (echo > /dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; return 1; }
WSPATH=/echo
MODE=
measure() { # name
  local rates=() cpus=() hz
  hz=$(getconf CLK_TCK)
  for _ in $(seq 1 "$RUNS"); do
    local c0 c1 r
    c0=$(cpu $pid)
    r=$(build/bench/ws_echo_load "$p" "$WSPATH" "$CONNS" "$DEPTH" "$SECS" $MODE)
    c1=$(cpu $pid)
    rates+=("$r")
    cpus+=("$(awk -v d=$((c1 - c0)) -v hz="$hz" -v r="$r" -v s="$SECS" 'BEGIN{printf "%.2f", d / hz / (r * s) * 1e6}')")
  done
  local mr mc
  mr=$(printf '%s\n' "${rates[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  mc=$(printf '%s\n' "${cpus[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  printf '%-28s %10s msgs/s  %6s us CPU/msg  (c=%d depth=%d, %ds, median of %d)\n' \
    "$1" "$mr" "$mc" "$CONNS" "$DEPTH" "$SECS" "$RUNS"
  echo "$mr"
}
p=$(port)
bin/zever serve "$tmp" --listen 127.0.0.1:$p --workers 1 --access-log off >"$tmp/zever.log" 2>&1 &
pid=$!
wait_port $p
z=$(measure "WsEcho64 zever (1 worker)" | tee /dev/stderr | tail -1)
if [ "${DEFLATE:-1}" = 1 ]; then
  WSPATH=/zecho0 MODE=deflate
  zd=$(measure "WsEcho64 zever deflate both" | tee /dev/stderr | tail -1)
  WSPATH=/zecho MODE=deflate
  zi=$(measure "WsEcho64 zever deflate in" | tee /dev/stderr | tail -1)
  WSPATH=/echo MODE=
  awk -v z="$z" -v d="$zd" -v i="$zi" \
    'BEGIN{printf "deflate both / plain: %.2fx; deflate in only / plain: %.2fx\n", d / z, i / z}'
fi
kill $pid; wait $pid 2>/dev/null || true
p=$(port)
/usr/bin/python3 "$tmp/echo.py" $p >"$tmp/py.log" 2>&1 &
pid=$!
wait_port $p
py=$(measure "WsEcho64 python websockets" | tee /dev/stderr | tail -1)
kill $pid; wait $pid 2>/dev/null || true
awk -v z="$z" -v p="$py" 'BEGIN{printf "zever / python websockets: %.1fx\n", z / p}'
