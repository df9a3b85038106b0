-- duration_callgrind.lua N: one scenario of duration_lua_bench.lua, run N times in one loop, for
-- callgrind's slope (bench/callgrind_delta.sh), so two trees compare in instructions, not time.
-- SCENARIO picks it: reject (parse("1x"), the error dropped), kept (the error kept in a table),
-- unique (format(i * 0.001), a new string each call), parse (parse("1h30m")), message
-- (tostring of a rejection), decode (a codec's decode("PT1H30M"), CodecDecode), lookup_varied
-- (duration.codec of four option tables in turn, CodecLookupVaried). BACKEND=classic runs the
-- parse/format/codec cases through duration.with_backend("classic") (the bench's "Classic" rows).
-- It uses only zever.duration's public API, so it runs on older trees:
--
--   SCENARIO=reject bash bench/callgrind_delta.sh "$PWD/bench/duration_callgrind.lua" 100000 300000
--   SCENARIO=reject ZEVER_DIR=/work/base bash bench/callgrind_delta.sh \
--     "$PWD/bench/duration_callgrind.lua" 100000 300000
local duration = require "zever.duration"

local N = tonumber(arg and arg[1]) or 0
local SCENARIO = os.getenv("SCENARIO") or "reject"
local d = duration
if os.getenv("BACKEND") then
  d = duration.with_backend(os.getenv("BACKEND")) or error("no backend " .. os.getenv("BACKEND"))
end
local parse, format = d.parse, d.format

local runs = {
  reject = function(n)
    local sink = 0
    for _ = 1, n do
      local v, err = parse("1x")
      if v == nil and err then sink = sink + 1 end
    end
    return sink
  end,
  kept = function(n)
    local keep = {}
    for _ = 1, n do
      local _, err = parse("1x")
      keep[1] = err
    end
    return keep
  end,
  unique = function(n)
    local sink = 0
    for i = 1, n do sink = sink + #format(i * 0.001) end
    return sink
  end,
  parse = function(n)
    local sink = 0
    for _ = 1, n do sink = sink + parse("1h30m") end
    return sink
  end,
  message = function(n)
    local sink = 0
    for _ = 1, n do
      local _, err = parse("1x")
      sink = sink + #tostring(err)
    end
    return sink
  end,
  decode = function(n)
    local c = d.codec { write = "iso8601", accept = { "units", "nano" }, days = true }
    local sink = 0
    for _ = 1, n do sink = sink + c:decode("PT1H30M") end
    return sink
  end,
  lookup_varied = function(n)
    local opts = {
      { write = "iso8601", accept = { "units", "nano" }, days = true },
      { write = "units", accept = { "iso8601", "nano" }, days = true },
      { write = "nano" },
      { write = "units", accept = { "nano", "iso8601" } },
    }
    local codec, sink = d.codec, 0
    for i = 1, n do if codec(opts[i % 4 + 1]) then sink = sink + 1 end end
    return sink
  end,
}

-- WARM=1 first runs the loops duration_lua_bench.lua runs before these in one process (parse,
-- then format of eight interned values, plain and iso8601), 20,000 times each, so that the
-- measured loop meets the traces the benchmark file's earlier cases left (the slope cancels
-- their cost).
if os.getenv("WARM") then
  local values = { 5400, 0.5, 0, -60, 1.5e-6, 93600, 16.000000001, 0.3 }
  local inputs = { "1h30m", "300ms", "PT1H30M", "-1.5h", "PT0.5S", "1500000000", "15ns", "P1DT2H" }
  local warm = {
    function(n) local k = 0; for i = 1, n do k = k + parse(inputs[i % 8 + 1]) end; return k end,
    runs.parse,
    function(n) local k = 0; for i = 1, n do k = k + #format(values[i % 8 + 1]) end; return k end,
    function(n)
      local k = 0
      for i = 1, n do k = k + #format(values[i % 8 + 1], "iso8601") end
      return k
    end,
  }
  for _, w in ipairs(warm) do w(100); w(20000) end
end

-- PRELOAD=a,b requires those modules first: a larger live heap, to see what the heap's size
-- alone does to a case (FormatUnique's string table, which grows and shrinks with each cycle).
for name in (os.getenv("PRELOAD") or ""):gmatch("[^,]+") do require(name) end

-- os.difftime marks the measured loop: with --dump-before=difftime, part 2 of callgrind's dump
-- is the loop alone, in one process (one seed of LuaJIT's string hash, which the slope of
-- bench/callgrind_delta.sh mixes across two processes; lookup_varied moves with it).
local run = runs[SCENARIO] or error("unknown SCENARIO " .. SCENARIO)
os.difftime(0, 0)
run(N)
os.difftime(0, 0)
