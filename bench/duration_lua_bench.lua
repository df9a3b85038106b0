-- duration_lua_bench.lua: zever.duration from Lua, through the FFI backend (what the module
-- uses) and through the classic Lua C API, printed as Go-style lines:
--
--   BenchmarkDurationLuaParse  N  x ns/op  y B/op
--
-- Run: bin/zever run bench/duration_lua_bench.lua [filter]
-- Each case runs a calibrated loop (about 0.2 s; ZV_BENCH_TIME overrides) 5 times with the
-- collector running and prints the median. B/op is the growth of collectgarbage("count") over
-- one more run with the collector stopped, divided by n: 0 means the JIT compiled the loop
-- without allocating (or sank the allocation, as it does for an error nobody keeps).

local ffi = require "ffi"
local duration = require "zever.duration"

ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } zv_bench_timespec_t;
  int clock_gettime(int clk, zv_bench_timespec_t *ts);
]]

local ts = ffi.new("zv_bench_timespec_t")
local function now()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1e9 + tonumber(ts.tv_nsec)
end

local target = (tonumber(os.getenv("ZV_BENCH_TIME")) or 0.2) * 1e9
local filter = (arg and arg[1]) or os.getenv("BENCH") or ""

-- Nanoseconds per call of fn(n), with the collector running as it would in a service.
local function timed(fn, n)
  collectgarbage("collect")
  local t0 = now()
  fn(n)
  return (now() - t0) / n
end

-- Bytes per call of fn(n): the heap's growth with the collector stopped, over at most 1e5 calls.
local function allocated(fn, n)
  n = math.min(n, 100000)
  collectgarbage("collect")
  collectgarbage("stop")
  local kb = collectgarbage("count")
  fn(n)
  local bytes = (collectgarbage("count") - kb) * 1024
  collectgarbage("restart")
  return bytes / n
end

local function bench(name, fn)
  if not name:find(filter, 1, true) then return end
  local n = 1000
  while true do
    local ns = timed(fn, n)
    if ns * n >= target or n >= 1e9 then break end
    n = math.min(n * 100, math.max(n + 1, math.floor(target / ns * 1.2)))
  end
  local times = {}
  for i = 1, 5 do times[i] = timed(fn, n) end
  table.sort(times)
  print(("Benchmark%-28s %10d %12.2f ns/op %8.0f B/op"):format(name, n, times[3], allocated(fn, n)))
end

local inputs = { "1h30m", "300ms", "PT1H30M", "-1.5h", "PT0.5S", "1500000000", "15ns", "P1DT2H" }
local ninputs = #inputs
local values = { 5400, 0.5, 0, -60, 1.5e-6, 93600, 16.000000001, 0.3 }
local nvalues = #values

local ffi_m = duration.with_backend("ffi")
local classic_m = duration.with_backend("classic")
assert(duration.backend == "ffi", "the module did not pick the FFI backend")

for _, impl in ipairs { { "", ffi_m }, { "Classic", classic_m } } do
  local suffix, d = impl[1], impl[2]
  local parse, parse_ns, format = d.parse, d.parse_ns, d.format

  bench("DurationLuaParse" .. suffix, function(n)
    local sink = 0
    for i = 1, n do sink = sink + parse(inputs[i % ninputs + 1]) end
    return sink
  end)

  bench("DurationLuaParseUnits" .. suffix, function(n)
    local sink = 0
    for _ = 1, n do sink = sink + parse("1h30m") end
    return sink
  end)

  bench("DurationLuaParseNs" .. suffix, function(n)
    local sink = 0
    for _ = 1, n do if parse_ns("1h30m") then sink = sink + 1 end end
    return sink
  end)

  -- Eight values, so that the strings are interned after the first round (as a service
  -- writing a few configured timeouts would see); FormatUnique makes a new string each call.
  bench("DurationLuaFormat" .. suffix, function(n)
    local sink = 0
    for i = 1, n do sink = sink + #format(values[i % nvalues + 1]) end
    return sink
  end)

  bench("DurationLuaFormatISO" .. suffix, function(n)
    local sink = 0
    for i = 1, n do sink = sink + #format(values[i % nvalues + 1], "iso8601") end
    return sink
  end)

  bench("DurationLuaFormatUnique" .. suffix, function(n)
    local sink = 0
    for i = 1, n do sink = sink + #format(i * 0.001) end
    return sink
  end)

  bench("DurationLuaReject" .. suffix, function(n)
    local sink = 0
    for _ = 1, n do
      local v, err = parse("1x")
      if v == nil and err then sink = sink + 1 end
    end
    return sink
  end)

  -- The error escapes into a table here, so LuaJIT cannot sink its allocation.
  bench("DurationLuaRejectKept" .. suffix, function(n)
    local keep = {}
    for _ = 1, n do
      local _, err = parse("1x")
      keep[1] = err
    end
    return keep
  end)

  bench("DurationLuaCodecDecode" .. suffix, function(n)
    local c = d.codec { write = "iso8601", accept = { "units", "nano" }, days = true }
    local sink = 0
    for _ = 1, n do sink = sink + c:decode("PT1H30M") end
    return sink
  end)
end

local codec = duration.codec

bench("DurationLuaCodecLookup", function(n)
  local opts = { write = "iso8601", accept = { "units", "nano" }, days = true }
  local sink = 0
  for _ = 1, n do if codec(opts) then sink = sink + 1 end end
  return sink
end)

-- Four different option tables in turn, so the lookup cannot be hoisted out of the loop.
bench("DurationLuaCodecLookupVaried", function(n)
  local opts = {
    { write = "iso8601", accept = { "units", "nano" }, days = true },
    { write = "units", accept = { "iso8601", "nano" }, days = true },
    { write = "nano" },
    { write = "units", accept = { "nano", "iso8601" } },
  }
  local sink = 0
  for i = 1, n do if codec(opts[i % 4 + 1]) then sink = sink + 1 end end
  return sink
end)

bench("DurationLuaCodecLookupInline", function(n)
  local sink = 0
  for _ = 1, n do
    if codec { write = "iso8601", accept = { "units", "nano" }, days = true } then sink = sink + 1 end
  end
  return sink
end)

bench("DurationLuaRejectMessage", function(n)
  local sink = 0
  for _ = 1, n do
    local _, err = duration.parse("1x")
    sink = sink + #tostring(err)
  end
  return sink
end)
