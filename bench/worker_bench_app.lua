-- bench/worker_bench_app.lua: what the queue benchmarks that run jobs through a worker share
-- (queue_throughput.lua, queue_pg_bench.lua, queue_pg_procs.lua: real `zever worker` processes;
-- queue_pg_acks.lua: a worker in this process), loaded with require "bench.worker_bench_app"
-- from the repository's root:
--
--   M.write_app()   -> dir, app_path   a new temporary folder holding the worker's app.lua
--   M.quote(s), M.alive(pid), M.slurp(path), M.median(list)
--   M.run_in_process(j, n) -> jobs/s                  n "noop" jobs through a 4-slot zever.worker
--
-- The app registers one job, "noop", whose handler only counts: once it has run BENCH_JOBS jobs
-- (the sum of their args.k) it writes the monotonic times of its first and last job, "%.9f
-- %.9f", to BENCH_OUT (through a rename, so a reader never sees half of it). BENCH_PREFETCH > 0
-- sets the db queue adapter's claim size. The caller removes the folder.

local M = {}

M.APP = [[
local zever = require "zever"
local sys = require "zever.sys"
local app = zever.app()
local total, out = tonumber(os.getenv("BENCH_JOBS")), os.getenv("BENCH_OUT")
local prefetch = tonumber(os.getenv("BENCH_PREFETCH") or "0")
if prefetch > 0 then require("adapters.queue.db").PREFETCH = prefetch end
local n, first = 0, 0
app.jobs:register("noop", function(args)
  n = n + args.k
  if n == 1 then first = sys.now() end
  if n == total then
    local f = assert(io.open(out .. ".tmp", "w"))
    f:write(string.format("%.9f %.9f", first, sys.now()))
    f:close()
    os.rename(out .. ".tmp", out)
  end
end)
return app
]]

-- The spec support's: s quoted for sh; whether process pid is still there (not a zombie); a
-- file's content, or nil when it cannot be read.
local process, files = require "spec.support.process", require "spec.support.files"
M.quote, M.alive, M.slurp = process.quote, process.alive, files.slurp

-- The median of the numbers of t (the middle two averaged for an even count); t is unchanged.
function M.median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  local m = #s
  if m % 2 == 1 then return s[(m + 1) / 2] end
  return (s[m / 2] + s[m / 2 + 1]) / 2
end

-- In this process (queue_pg_acks.lua, queue_pg_bench.lua's prefetch rows): registers "noop" on
-- the jobs front-end j, dispatches n of them, runs them with a zever.worker of 4 slots, and
-- drains it; returns jobs/s from the worker's start to the last job.
function M.run_in_process(j, n)
  local sys, worker, testing = require "zever.sys", require "zever.worker", require "zever.testing"
  local done = 0
  j:register("noop", function() done = done + 1 end)
  for _ = 1, n do assert(j:dispatch("noop", { k = 1 })) end
  local w = worker.new(j, { concurrency = 4 })
  local t0 = sys.now()
  w:start()
  assert(testing.run_until(function() return done >= n end, 300), "the jobs did not run")
  local rate = n / (sys.now() - t0)
  local drained = false
  w:drain(0, function() drained = true end)
  testing.run_until(function() return drained end, 5)
  return rate
end

-- Writes M.APP into a new temporary folder: returns the folder and the app file's path.
function M.write_app()
  local dir = files.tmpdir({ ["app.lua"] = M.APP }, "zever-bench")
  return dir, dir .. "/app.lua"
end

return M
