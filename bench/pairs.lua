-- bench/pairs.lua: the runner of the side-by-side "raw vs zever" pair benchmarks
-- (bench/db_overhead_lua_bench.lua on SQLite, bench/db_overhead_pg_bench.lua on PostgreSQL).
-- A pair is { name, raw(n), zever(n) }: each function runs its operation n times.
--
--   pairs.run(list, { prefix =, n =, warm =, filter =, mode = })
--
-- With mode "Name/raw" or "Name/zever" (the callgrind scripts' ZV_DB_OVERHEAD_MODE) it runs that
-- one side twice (warm, then n operations) and prints nothing: the script counts instructions
-- between two such runs. Otherwise, for every pair whose name holds filter: both sides warm,
-- then 5 alternating rounds of n operations each, CPU time (os.clock), and one line with the
-- medians, the overhead in ns and per cent, and each side's Lua heap bytes per operation
-- (counted over warm operations with the collector stopped).

local harness = require "bench.harness"

local M = {}

local function cpu_ns(fn, n) return harness.ns_per_op(fn, n, os.clock) end
local bytes, median = harness.bytes_per_op, harness.median

function M.run(list, o)
  local n, warm = o.n, math.min(o.n, o.warm)
  if o.mode then
    local name, side = o.mode:match("^(%w+)/(%w+)$")
    for _, p in ipairs(list) do
      if p[1] == name then
        local f = side == "raw" and p[2] or p[3]
        f(warm)
        f(n)
        return
      end
    end
    error("ZV_DB_OVERHEAD_MODE: no benchmark " .. o.mode, 2)
  end
  io.stdout:setvbuf("line")
  print(string.format("# %d ops per round, 5 alternating rounds, CPU time; load average %s", n,
    (io.open("/proc/loadavg"):read("*l"):match("^(%S+)"))))
  print(string.format("%-36s %9s %10s %11s %8s %8s %8s", "benchmark", "raw ns/op", "zever ns/op",
    "overhead", "", "raw B/op", "zever B/op"))
  for _, p in ipairs(list) do
    local name, rawf, zf = p[1], p[2], p[3]
    if name:find(o.filter or "", 1, true) then
      rawf(warm)
      zf(warm)
      local tr, tz = {}, {}
      for r = 1, 5 do
        tr[r] = cpu_ns(rawf, n)
        tz[r] = cpu_ns(zf, n)
      end
      local mr, mz = median(tr), median(tz)
      print(string.format("Benchmark%s%-15s %9.0f %10.0f %8.0f ns %+7.1f%% %8.0f %8.0f",
        o.prefix, name, mr, mz, mz - mr, (mz - mr) / mr * 100, bytes(rawf, o.warm),
        bytes(zf, o.warm)))
    end
  end
end

return M
