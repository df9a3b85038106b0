#!/usr/bin/env bash
# bench/ws_deflate_callgrind.sh: instructions per WebSocket message deflated (zever.compress's
# permessage-deflate compressor, as zever.websocket uses it), by size and with/without context
# takeover: callgrind on bench/ws_deflate_lua_bench.lua's WS_DEFLATE_ONLY mode, the slope
# between N1 and N2 deflates (start-up and message building cancel out). Load-independent.
#
#   bash bench/ws_deflate_callgrind.sh        (N1=200 N2=1200 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
N1=${N1:-200}
N2=${N2:-1200}
tmp=$(mktemp -d /tmp/zever-ws-deflate-cg-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ir() { # size mode n
  WS_DEFLATE_ONLY="$1 $2 $3" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" \
    bin/zever run bench/ws_deflate_lua_bench.lua >/dev/null 2>"$tmp/log"
  awk '/^summary:/ {print $2}' "$tmp/cg"
}
for size in 64 256 1024 16384; do
  for mode in takeover alone; do
    a=$(ir $size $mode "$N1")
    b=$(ir $size $mode "$N2")
    printf 'WsDeflate %5d B %-8s %10.0f instructions/message\n' "$size" "$mode" \
      "$(echo "($b - $a) / ($N2 - $N1)" | bc -l)"
  done
done
