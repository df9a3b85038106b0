-- bench/jobs_lua_bench.lua: the jobs battery and its worker, from Lua.
--
--   bin/zever run bench/jobs_lua_bench.lua [filter]
--
-- WorkerEmptyPoll: one poll of an idle worker on the memory queue (a pop that finds nothing plus
-- the next backoff delay): the cost an idle worker pays per wake-up (the Go framework: 241.7
-- ns/op). WorkerEmptyPollOtherTopic: the same with one message waiting in another topic of the
-- queue (the core's shortcut for a queue with no message at all does not apply).
-- JobsDispatchMemory: app.jobs:dispatch of a small table on the memory queue.
-- JobsDbThroughput: end to end on SQLite (a WAL file): dispatch N jobs, then one worker
-- (concurrency 1) on this thread's event loop runs them until the queue is drained; prints
-- jobs/s for the dispatch and for the run (claim + handler + ack per job).

local harness = require "bench.harness"
local jobs = require "zever.jobs"
local worker = require "zever.worker"
local queue = require "zever.queue"
local zdb = require "zever.db"
local jq = require "adapters.jobs.queue"
local dbq = require "adapters.queue.db"
local loop = require "zever.loop"
local sys = require "zever.sys"

local filter = arg and arg[1]
local bench = harness.new(filter, { seconds = 0.5 })

local function wanted(name)
  return not filter or name:find(filter, 1, true)
end

local mj = jobs.wrap(jq.new(queue.new{ name = "bench:jobs" }), {})
local w = worker.new(mj, { poll_max = 1 })
bench("WorkerEmptyPoll", function() w:poll() end)

if wanted("WorkerEmptyPollOtherTopic") then
  local oq = queue.new{ name = "bench:jobs-other" }
  assert(oq:push("jobs:elsewhere", "waiting"))
  local ow = worker.new(jobs.wrap(jq.new(oq), {}), { poll_max = 1 })
  bench("WorkerEmptyPollOtherTopic", function() ow:poll() end)
  oq:close()
end

local args = { user_id = 42 }
local mq = mj.impl.queue
bench("JobsDispatchMemory", function()
  mj:dispatch("send_welcome", args)
  mq:ack(mq:pop("jobs:default"))
end)

if wanted("JobsDbThroughput") then
  local N = tonumber(os.getenv("JOBS") or "") or 20000
  local path = os.tmpname()
  os.remove(path)
  local db = assert(zdb.open("sqlite:" .. path))
  local q = queue.wrap(dbq.new(db, { sweep_interval = 30 }), { visibility_timeout = 30 })
  local j = jobs.wrap(jq.new(q, { db = db }), {})
  local ran = 0
  j:register("send_welcome", function(a) ran = ran + a.user_id - 41 end)
  local t0 = sys.now()
  for _ = 1, N do
    args.user_id = 42
    assert(j:dispatch("send_welcome", args))
  end
  local t1 = sys.now()
  local dw = worker.new(j, { poll_max = 0.01 })
  dw:start()
  local stop = loop.every(0.001, function() if ran >= N then loop.stop() end end)
  loop.run()
  local t2 = sys.now()
  stop:stop()
  local drained = false
  dw:drain(0, function() drained = true end)
  while not drained do loop.run("once") end
  assert(q:len("jobs:default") == 0, "the queue is not empty")
  print(string.format("BenchmarkJobsDbThroughput %14d jobs %9.0f jobs/s dispatch %9.0f jobs/s run "
    .. "(%.1f us/job)", N, N / (t1 - t0), N / (t2 - t1), (t2 - t1) / N * 1e6))
  db:close()
  os.remove(path)
  os.remove(path .. "-wal")
  os.remove(path .. "-shm")
end
