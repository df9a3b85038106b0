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

local ffi = require "ffi"

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
