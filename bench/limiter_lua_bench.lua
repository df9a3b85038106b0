-- limiter_lua_bench.lua: what a handler pays for the memory adapters from Lua: limiter:allow
-- and cache:get (plus cache:set and the adapters' classic-binding paths), through the zever.limiter
-- and zever.cache front-ends, printed as Go-style lines:
--
--   BenchmarkLimiterLuaAllow  N  x ns/op  y B/op
--
-- Run: bin/zever run bench/limiter_lua_bench.lua [filter]
-- Each case runs a calibrated loop (about 0.2 s; ZV_BENCH_TIME overrides) 5 times with the
-- collector running and prints the median. B/op is the growth of collectgarbage("count") over
-- one more run with the collector stopped, divided by n. The real monotonic clock is read on
-- every call, as in a handler.


local bench = require("bench.harness").new(arg and arg[1], { seconds = 0.2 }).loop

local limiter = require "zever.limiter"
local cache = require "zever.cache"
local memory_limiter = require "adapters.limiter.memory"
local memory_cache = require "adapters.cache.memory"
local lcore = require "zever.limiter_core"
local ccore = require "zever.cache_core"

assert(memory_limiter.ffi and memory_cache.ffi, "the adapters did not find the core through the FFI")

local keys = {}
for i = 1, 1024 do keys[i] = "user:" .. (100000 + i) end

local lim = limiter.new{ name = "bench:lua", rate = 1e9, burst = 1e9 }
for i = 1, 1024 do lim:allow(keys[i]) end

bench("LimiterLuaAllow", function(n)
  local sink = 0
  for i = 1, n do
    local ok, remaining = lim:allow(keys[i % 1024 + 1])
    if ok then sink = sink + remaining end
  end
  return sink
end)

bench("LimiterLuaAllowHotKey", function(n)
  local sink = 0
  for _ = 1, n do
    local ok = lim:allow("user:1")
    if ok then sink = sink + 1 end
  end
  return sink
end)

local handle = assert(lcore.open("bench:lua:classic", 1e9, 1e9, 100000, 600))
bench("LimiterLuaAllowClassic", function(n)
  local sink = 0
  for i = 1, n do
    local ok = handle:allow(keys[i % 1024 + 1], 1)
    if ok then sink = sink + 1 end
  end
  return sink
end)

local c = cache.new{ name = "bench:lua", max_bytes = 64 * 1024 * 1024 }
local value = '{"id":42,"name":"a cached value of some 60 bytes"}'
for i = 1, 1024 do c:set(keys[i], value) end
c:set("num", 42)

bench("CacheLuaGet", function(n)
  local sink = 0
  for i = 1, n do sink = sink + #c:get(keys[i % 1024 + 1]) end
  return sink
end)

bench("CacheLuaGetNumber", function(n)
  local sink = 0
  for _ = 1, n do sink = sink + c:get("num") end
  return sink
end)

bench("CacheLuaGetMiss", function(n)
  local sink = 0
  for _ = 1, n do if c:get("missing") == nil then sink = sink + 1 end end
  return sink
end)

bench("CacheLuaSet", function(n)
  for i = 1, n do c:set(keys[i % 1024 + 1], value) end
end)

local ch = assert(ccore.open("bench:lua:classic", 64 * 1024 * 1024))
for i = 1, 1024 do ch:set(keys[i], value, ccore.STRING, 0, 0) end
bench("CacheLuaGetClassic", function(n)
  local sink = 0
  for i = 1, n do sink = sink + #ch:get(keys[i % 1024 + 1]) end
  return sink
end)
