-- bench/queue_throughput.lua: db queue throughput end to end, with a real `zever worker`.
--
--   bin/zever run bench/queue_throughput.lua [jobs=20000] [runs=3]
--
-- Each run: a fresh SQLite file (WAL); this process dispatches `jobs` jobs through app.jobs'
-- own path (zever.jobs over adapters.jobs.queue over the db queue), then starts one separate
-- `zever worker` process (concurrency 1) on a generated app whose handler does nothing but
-- count. When the handler has run `jobs` times it writes the monotonic times (shared by every
-- process) of its first and last job to a file; this process waits for that file, stops the
-- worker with SIGTERM and checks that the queue is empty. Printed, with the median of the runs:
--   run       jobs / (last job - first job): claim + decode + handler + ack in the worker
--   e2e       jobs / (file seen - worker spawned): also process start, app load, first poll
--   dispatch  jobs / dispatch time in this process
-- The target of issue #7 is >= 5,000 jobs/s with one worker on SQLite.

local sys = require "zever.sys"
local sched = require "zever.sched"
local zdb = require "zever.db"
local queue = require "zever.queue"
local jobs = require "zever.jobs"
local jq = require "adapters.jobs.queue"
local dbq = require "adapters.queue.db"

local N = tonumber(arg and arg[1] or "") or 20000
local RUNS = tonumber(arg and arg[2] or "") or 3
local format = string.format

local helpers = require "bench.worker_bench_app"
local quote, alive, slurp, median = helpers.quote, helpers.alive, helpers.slurp, helpers.median
local dir, app_path = helpers.write_app()

local function one_run(i)
  local path = format("%s/q%d.db", dir, i)
  local out = format("%s/done%d", dir, i)
  local db = assert(zdb.open("sqlite:" .. path))
  local q = queue.wrap(dbq.new(db), { visibility_timeout = 30 })
  local j = jobs.wrap(jq.new(q, { db = db }), {})
  local args = { k = 1 }
  local t0 = sys.now()
  for _ = 1, N do assert(j:dispatch("noop", args)) end
  local dispatch = N / (sys.now() - t0)
  local env = format("DB_DSN=%s QUEUE_POLL_MAX=10ms LOG_LEVEL=error BENCH_JOBS=%d BENCH_OUT=%s ",
    quote("sqlite:" .. path), N, quote(out))
  local log = dir .. "/worker.log"
  local spawned = sys.now()
  local p = assert(io.popen(env .. "exec " .. quote(sys.exe()) .. " worker " .. quote(app_path)
    .. " >" .. quote(log) .. " 2>&1 & echo $!"))
  local pid = assert(tonumber(p:read("*l")), "no worker pid")
  p:close()
  local deadline = sys.now() + 120
  local text
  repeat
    sched.sleep(0.002)
    text = slurp(out)
  until text or sys.now() > deadline or not alive(pid)
  local seen = sys.now()
  if alive(pid) then os.execute("kill -TERM " .. pid) end
  local stop_by = sys.now() + 10
  while alive(pid) and sys.now() < stop_by do sched.sleep(0.01) end
  if alive(pid) then os.execute("kill -KILL " .. pid) end
  assert(text, "the worker did not finish: " .. (slurp(log) or ""))
  local first, last = text:match("^(%S+) (%S+)$")
  first, last = tonumber(first), tonumber(last)
  local left = q:len("jobs:default")
  assert(left == 0, "the queue is not empty: " .. tostring(left))
  db:close()
  for _, suffix in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. suffix) end
  os.remove(out)
  return { run = (N - 1) / (last - first), e2e = N / (seen - spawned), dispatch = dispatch }
end

local runs, e2e, dispatch = {}, {}, {}
for i = 1, RUNS do
  local r = one_run(i)
  runs[i], e2e[i], dispatch[i] = r.run, r.e2e, r.dispatch
  io.stderr:write(format("run %d: %.0f jobs/s run, %.0f jobs/s e2e, %.0f jobs/s dispatch\n", i,
    r.run, r.e2e, r.dispatch))
end
os.execute("rm -rf " .. quote(dir))

local function list(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = format("%.0f", v) end
  return table.concat(s, " ")
end
print(format("BenchmarkQueueThroughputDbWorker %8d jobs %9.0f jobs/s run %9.0f jobs/s e2e "
  .. "%9.0f jobs/s dispatch (median of %d; run: %s)", N, median(runs), median(e2e),
  median(dispatch), RUNS, list(runs)))
