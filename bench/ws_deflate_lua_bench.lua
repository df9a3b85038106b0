-- bench/ws_deflate_lua_bench.lua: what permessage-deflate costs and saves per WebSocket message
-- sent, by size (64 B, 256 B, 1 KiB, 16 KiB), to choose the default threshold of
-- zever.websocket (messages smaller than it go out plain; docs/websockets.md#compression).
--
--   bin/zever run bench/ws_deflate_lua_bench.lua     (make bench BENCH=ws_deflate)
--   bash bench/ws_deflate_callgrind.sh               (instructions per message: load-independent)
--
-- The messages are JSON chat/event records of the given size, every one different (ids,
-- numbers, words drawn from a fixed vocabulary by a fixed-seed generator), as a broadcast or a
-- feed would send them. The compressor is the one zever.websocket uses (zever.compress
-- pmd_deflater, window 15 bits, level 6), with context takeover (the default: later messages
-- refer to earlier ones) and without (server_no_context_takeover: each message alone).
-- Prints ns per message deflated (the server's extra CPU per message; inflating on the client
-- is its own), and the bytes on the wire per message (frame head + payload) plain and
-- compressed, averaged over the 512 messages of each size.

local harness = require "bench.harness"
local compress = require "zever.compress"
local json = require "zever.json"

local bench = harness.new(arg and arg[1])

local WORDS = { "hello", "there", "order", "shipped", "price", "update", "room", "lobby",
  "player", "score", "level", "joined", "left", "message", "typing", "online", "status",
  "delivery", "pending", "paid", "refund", "alert", "metric", "cpu", "memory", "latency" }

local seed = 12345
local function rand(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed % n + 1
end

-- One JSON record of exactly size bytes (padded in its text field).
local function message(i, size)
  local words = {}
  for k = 1, math.max(1, math.floor(size / 7)) do words[k] = WORDS[rand(#WORDS)] end
  local rec = { type = "event", id = 100000 + i, user = "user" .. rand(5000),
    ts = 1764633600 + i * 37, value = rand(100000) / 100, text = "" }
  local base = #json.encode(rec)
  local text = table.concat(words, " "):sub(1, math.max(0, size - base))
  text = text .. string.rep(" ", math.max(0, size - base - #text))
  rec.text = text
  local s = json.encode(rec)
  return s:sub(1, size)
end

local function head(len)
  return len < 126 and 2 or len < 65536 and 4 or 10
end

local N = 512

-- bench/ws_deflate_callgrind.sh runs one size and mode, count deflates, and nothing else:
-- WS_DEFLATE_ONLY="size takeover|alone count".
local only = os.getenv("WS_DEFLATE_ONLY")
if only then
  local size, mode, count = only:match("^(%d+) (%a+) (%d+)$")
  size, count = tonumber(size), tonumber(count)
  local msgs = {}
  for i = 1, N do msgs[i] = message(i, size) end
  local z, reset = compress.pmd_deflater(15, 6), mode == "alone"
  for i = 1, count do z:deflate(msgs[(i - 1) % N + 1], reset) end
  return
end

for _, size in ipairs({ 64, 256, 1024, 16384 }) do
  local msgs = {}
  for i = 1, N do msgs[i] = message(i, size) end
  for _, mode in ipairs({ "takeover", "alone" }) do
    local reset = mode == "alone"
    local z = compress.pmd_deflater(15, 6)
    local plain, wire = 0, 0
    for i = 1, N do
      local out = z:deflate(msgs[i], reset)
      plain = plain + head(size) + size
      wire = wire + head(#out) + #out
    end
    print(string.format("WsDeflate %5d B %-8s  wire bytes/msg plain %7.1f  deflated %7.1f  (%.0f%%)",
      size, mode, plain / N, wire / N, 100 * wire / plain))
    local j = 0
    bench.loop(string.format("WsDeflate%d%s", size, mode == "alone" and "Alone" or ""),
      function(n)
        for _ = 1, n do
          j = j % N + 1
          z:deflate(msgs[j], reset)
        end
      end)
  end
end
