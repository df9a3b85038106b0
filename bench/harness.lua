-- bench/harness.lua: the Lua side of the benchmark harness, for benchmarks of Lua-level APIs
-- run inside the host (`bin/zever run bench/<name>_bench.lua [filter]`).
--
--   local harness = require "bench.harness"
--   local bench = harness.new(arg and arg[1])
--   bench("AppDispatchStatic", function() ... one op ... end)
--   bench.loop("DurationLuaParse", function(n) for i = 1, n do ... end end)
--
-- bench.loop takes a function that runs n ops itself, so the op sits in a loop LuaJIT can
-- compile as a whole (a call per op through a closure would be measured too). Like
-- bench/bench.h: n grows until one run takes `seconds` (default 0.5; ZV_BENCH_TIME overrides),
-- then 5 timed runs with the collector running, as in a service, and a Go-style line with the
-- median ns/op. B/op is the Lua heap's growth over one more run (at most 1e5 ops) with the
-- collector stopped: what an op allocates, not what survives. The filter (first argument or
-- BENCH) keeps only benchmarks whose name contains it.
--
-- Each benchmark starts with no compiled code (jit.flush), and bench(name, op) runs op in a
-- loop compiled from source of its own: LuaJIT keys a trace by its bytecode, so one loop
-- shared by every bench() would be compiled for the first op and leave later ones on side
-- exits (WorkerEmptyPollOtherTopic measured 113-218 ns after WorkerEmptyPoll, 15-23 alone).

local sys = require "zever.sys"

local M = {}

-- The loop bench(name, op) runs; loaded once per benchmark, so each has its own bytecode.
local OP_LOOP = "local op = ... return function(n) for _ = 1, n do op() end end"

local function op_loop(op)
  return assert(loadstring(OP_LOOP, "=bench.harness op loop"))(op)
end

-- The shared measuring pieces (bench/pairs.lua uses them too).

-- ns per op of run(n), timed by clock (default sys.now, wall time; os.clock for CPU time) after
-- a full collection.
function M.ns_per_op(run, n, clock)
  clock = clock or sys.now
  collectgarbage("collect")
  local t0 = clock()
  run(n)
  return (clock() - t0) / n * 1e9
end

-- Lua heap bytes one op of run(n) allocates: the heap's growth over run(n) with the collector
-- stopped (what an op allocates, not what survives).
function M.bytes_per_op(run, n)
  collectgarbage("collect")
  collectgarbage("stop")
  local kb = collectgarbage("count")
  run(n)
  local bytes = (collectgarbage("count") - kb) * 1024
  collectgarbage("restart")
  return bytes / n
end

-- The median of the numbers in t (sorts t).
function M.median(t)
  table.sort(t)
  return t[math.floor((#t + 1) / 2)]
end

-- Returns bench(name, op) with bench.loop(name, run) beside it.
function M.new(filter, opts)
  filter = filter or os.getenv("BENCH") or ""
  local seconds = tonumber(os.getenv("ZV_BENCH_TIME")) or (opts and opts.seconds) or 0.5
  local target = seconds * 1e9

  local function measure(name, run)
    if not name:find(filter, 1, true) then return end
    jit.flush()
    local n = 100
    while true do
      local ns = M.ns_per_op(run, n)
      if ns * n >= target or n >= 1e9 then break end
      n = math.min(n * 100, math.max(n + 1, math.floor(target / math.max(ns, 0.01) * 1.2)))
    end
    local times = {}
    for i = 1, 5 do times[i] = M.ns_per_op(run, n) end
    print(string.format("Benchmark%-28s %10d %12.2f ns/op %8.0f B/op", name, n, M.median(times),
      M.bytes_per_op(run, math.min(n, 100000))))
  end

  return setmetatable({ loop = measure }, {
    __call = function(_, name, op)
      if not name:find(filter, 1, true) then return end
      return measure(name, op_loop(op))
    end,
  })
end

return M
