#!/bin/sh
# bench/http/upload_rss.sh [BIN] [MiB]: peak memory (VmHWM) of `zever serve --workers 1` while
# it takes one upload of MiB mebibytes (default 1024) with curl over loopback:
#   stream    a stream_body route reading it with req:read (Content-Length, curl -T a file)
#   chunked   the same route, chunked (curl -T - from a pipe)
#   buffered  a plain route (req.body whole), for contrast, at MiB/4 (--max-body raised)
# Prints the server's VmHWM after start-up and after each upload, and each upload's wall time
# and the server's CPU seconds for it (the machine's load moves the wall time; the memory
# figures do not depend on it).
set -e
BIN=${1:-bin/zever}
MIB=${2:-1024}
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
cat > "$tmp/app.lua" <<'LUA'
local zever = require "zever"
local app = zever.app()
app:put("/stream", function(req, res)
  local n = 0
  while true do
    local chunk, err = req:read(262144)
    if err then return res:status(err.status):json({ error = err.code }) end
    if not chunk then break end
    n = n + #chunk
  end
  return { bytes = n }
end, { stream_body = true, max_body = 2 ^ 40 })
app:put("/buffered", function(req) return { bytes = #req.body } end)
return app
LUA
truncate -s "${MIB}M" "$tmp/big"
truncate -s "$((MIB / 4))M" "$tmp/quarter"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" serve "$tmp/app.lua" --workers 1 --access-log off --max-body $((MIB / 4 * 1048576 + 1)) \
  --listen "127.0.0.1:$port" >"$tmp/log" 2>&1 &
pid=$!
for i in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
hwm() { awk '/VmHWM/ {print $2 " kB"}' /proc/$pid/status; }
# The server's CPU seconds so far (user + system, from /proc/PID/stat; clock ticks of 1/100 s).
cpu() { awk '{printf "%.2f", ($14 + $15) / 100}' /proc/$pid/stat; }
echo "start-up: VmHWM $(hwm)"
run() {
  t0=$(date +%s.%N)
  c0=$(cpu)
  out=$(curl -s "$@")
  t1=$(date +%s.%N)
  c1=$(cpu)
  echo "$out" | grep -q '"bytes"' || { echo "failed: $out"; exit 1; }
  echo "$out wall $(echo "$t1 - $t0" | bc) s, server CPU $(echo "$c1 - $c0" | bc) s, VmHWM $(hwm)"
}
printf 'stream   %s MiB: ' "$MIB"; run -T "$tmp/big" "http://127.0.0.1:$port/stream"
printf 'chunked  %s MiB: ' "$MIB"; run -T - "http://127.0.0.1:$port/stream" < "$tmp/big"
printf 'buffered %s MiB: ' "$((MIB / 4))"; run -T "$tmp/quarter" "http://127.0.0.1:$port/buffered"
