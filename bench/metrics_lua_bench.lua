-- metrics_lua_bench.lua: what a handler pays for app.metrics from Lua, and the decision between
-- the classic C API and the FFI (STYLE.md): counter:inc and histogram:observe through the
-- zever.metrics front-end (FFI: the add is Lua arithmetic on the worker's cells, observe one FFI
-- call), against the same operations through the classic binding (zever.metrics_core.add /
-- observe), which LuaJIT cannot compile into the caller's trace.
--
--   bin/zever run bench/metrics_lua_bench.lua [filter]

local bench = require("bench.harness").new(arg and arg[1], { seconds = 0.2 }).loop

local metrics = require "zever.metrics"
local core = require "zever.metrics_core"

local m = metrics.new({ registry = "bench-lua" })
local counter = assert(m:counter("bench_total", "x", { "route" })):labels("/hello")
local hist = assert(m:histogram("bench_seconds", "x", { "route" }, metrics.HTTP_BUCKETS))
  :labels("/hello")
-- The classic binding takes light userdata: a slot of its own in the same registry, and the
-- histogram family's bounds as C holds them.
local h = core.open("bench-lua")
local _, lu_cells = h:claim()
local lu_bounds = h:bounds(assert(h:family("bench_seconds", "x", "histogram", { "route" },
  metrics.HTTP_BUCKETS)))

bench("MetricsLuaCounterIncFFI", function(n)
  for _ = 1, n do counter:inc() end
end)

bench("MetricsLuaHistogramObserveFFI", function(n)
  for i = 1, n do hist:observe((i % 100) * 1e-4) end
end)

bench("MetricsLuaCounterIncClassic", function(n)
  local add, cell = core.add, counter.cell
  for _ = 1, n do add(lu_cells, cell, 1) end
end)

bench("MetricsLuaHistogramObserveClassic", function(n)
  local observe, cell, nb = core.observe, hist.cell, hist.nb
  for i = 1, n do observe(lu_cells, cell, lu_bounds, nb, (i % 100) * 1e-4) end
end)
