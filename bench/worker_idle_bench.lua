-- bench/worker_idle_bench.lua: what an idle `zever worker` costs: one zever.worker on an empty
-- memory queue, left alone on this thread's loop for a few seconds.
--
--   bin/zever run bench/worker_idle_bench.lua [seconds=5] [poll_max=1]
--
-- Prints the polls made, the wake timer's callbacks (w.stats.wakes) and the CPU time this
-- process used meanwhile (os.clock: user + system).

local jobs = require "zever.jobs"
local worker = require "zever.worker"
local queue = require "zever.queue"
local jq = require "adapters.jobs.queue"
local loop = require "zever.loop"

local seconds = tonumber(arg and arg[1] or "") or 5
local poll_max = tonumber(arg and arg[2] or "") or 1

local j = jobs.wrap(jq.new(queue.new{ name = "bench:idle" }), {})
local w = worker.new(j, { poll_max = poll_max })
local polls, poll = 0, w.poll
w.poll = function(self)
  polls = polls + 1
  return poll(self)
end
w:start()
local c0 = os.clock()
local t = loop.after(seconds, function() loop.stop() end)
loop.run()
t:stop()
local cpu = os.clock() - c0
print(string.format("BenchmarkWorkerIdle %gs poll_max %gs: %d polls %s wakes %.1f ms CPU",
  seconds, poll_max, polls, tostring(w.stats.wakes), cpu * 1000))
local drained = false
w:drain(0, function() drained = true end)
while not drained do loop.run("once") end
