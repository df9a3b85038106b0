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

local duration = require "zever.duration"

local bench = require("bench.harness").new(arg and arg[1], { seconds = 0.2 }).loop

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
