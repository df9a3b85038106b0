-- bench/queue_redis_bench.lua: the redis queue adapter from Lua, against its own redis-server.
--
--   bin/zever run bench/queue_redis_bench.lua [filter]
--
-- QueueRedisRoundTrip: push + pop + ack of a string payload through zever.queue over
-- adapters.queue.redis (three EVALSHA round trips on the async client, outside a coroutine).
-- JobsRedisThroughput: 5 000 jobs dispatched, then one zever.worker (concurrency 1) on this
-- thread's loop runs them until drained; jobs/s for the dispatch and for the run.

local harness = require "bench.harness"
local queue = require "zever.queue"
local redis = require "zever.redis"
local rq = require "adapters.queue.redis"
local jobs = require "zever.jobs"
local worker = require "zever.worker"
local jq = require "adapters.jobs.queue"
local loop = require "zever.loop"
local sys = require "zever.sys"
local redis_server = require "spec.support.redis_server"

local filter = arg and arg[1]
local srv = assert(redis_server.start())
local bench = harness.new(filter, { seconds = 0.3 })

local ok, err = pcall(function()
  local c = assert(redis.connect(srv.url))
  local q = queue.wrap(rq.new{ client = c, prefix = "bench:" }, {})
  bench("QueueRedisRoundTrip", function()
    q:push("t", "hello")
    q:ack(q:pop("t"))
  end)

  if not filter or ("JobsRedisThroughput"):find(filter, 1, true) then
    local N = 5000
    local j = jobs.wrap(jq.new(q), {})
    local ran = 0
    j:register("noop", function() ran = ran + 1 end)
    local args = { k = 1 }
    local t0 = sys.now()
    for _ = 1, N do assert(j:dispatch("noop", args)) end
    local t1 = sys.now()
    local w = worker.new(j, { poll_max = 0.01 })
    w:start()
    local stop = loop.every(0.001, function() if ran >= N then loop.stop() end end)
    loop.run()
    local t2 = sys.now()
    stop:stop()
    local drained = false
    w:drain(0, function() drained = true end)
    while not drained do loop.run("once") end
    assert(q:len("jobs:default") == 0, "the queue is not empty")
    print(string.format("BenchmarkJobsRedisThroughput %10d jobs %9.0f jobs/s dispatch %9.0f jobs/s "
      .. "run (%.1f us/job)", N, N / (t1 - t0), N / (t2 - t1), (t2 - t1) / N * 1e6))
  end
  c:close()
end)
srv:stop()
if not ok then error(err, 0) end
