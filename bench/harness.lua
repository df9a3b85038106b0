-- bench/harness.lua: the Lua side of the benchmark harness, for benchmarks of Lua-level APIs
-- run inside the host (`bin/zever run bench/<name>_bench.lua [filter]`).
--
--   local harness = require "bench.harness"
--   local bench = harness.new(arg and arg[1], { seconds = 0.5 })
--   bench("AppDispatchStatic", function() ... one op ... end)
--
-- Like bench/bench.h: n grows until one run takes `seconds`, then 5 runs at that n, and a
-- Go-style line with the medians: ns/op and B/op, the Lua heap allocated per op (measured with
-- the collector stopped, so it counts what an op allocates, not what survives).

local sys = require "zever.sys"

local M = {}

local function median(t)
  table.sort(t)
  return t[math.ceil(#t / 2)]
end

-- Returns bench(name, fn): runs fn repeatedly unless name lacks the filter text.
function M.new(filter, opts)
  local seconds = opts and opts.seconds or 0.5
  return function(name, fn)
    if filter and not name:find(filter, 1, true) then return end
    local n = 100
    while true do
      local t0 = sys.now()
      for _ = 1, n do fn() end
      local dt = sys.now() - t0
      if dt > seconds then break end
      n = math.floor(n * math.min(100, seconds * 1.2 / math.max(dt, 1e-6)))
    end
    local ns, bytes = {}, {}
    for r = 1, 5 do
      collectgarbage()
      collectgarbage("stop")
      local k0 = collectgarbage("count")
      local t0 = sys.now()
      for _ = 1, n do fn() end
      ns[r] = (sys.now() - t0) / n * 1e9
      bytes[r] = (collectgarbage("count") - k0) * 1024 / n
      collectgarbage("restart")
    end
    print(string.format("Benchmark%-28s %10d %12.1f ns/op %8.0f B/op", name, n, median(ns),
      median(bytes)))
  end
end

return M
