-- bench/jobsdb_callgrind.lua N: JobsDbThroughput's shape (bench/jobs_lua_bench.lua) for
-- callgrind: N jobs dispatched on the SQLite queue (a WAL file), then one worker (concurrency 1)
-- on this thread's event loop runs them until the last handler stops the loop (no timer, so the
-- count does not depend on how long the run takes). PHASE=dispatch only dispatches. It uses only
-- the public APIs the pre-kit tree has, so two trees compare in instructions per job:
--
--   bash bench/callgrind_delta.sh "$PWD/bench/jobsdb_callgrind.lua" 500 1500
--   ZEVER_DIR=/work/base bash bench/callgrind_delta.sh "$PWD/bench/jobsdb_callgrind.lua" 500 1500
--
-- run = all - dispatch (claim + handler + ack per job: the bench's "jobs/s run").
local jobs = require "zever.jobs"
local worker = require "zever.worker"
local queue = require "zever.queue"
local zdb = require "zever.db"
local jq = require "adapters.jobs.queue"
local dbq = require "adapters.queue.db"
local loop = require "zever.loop"

local N = tonumber(arg and arg[1]) or 0
local PHASE = os.getenv("PHASE") or "all"
local path = os.tmpname()
local function clean() for _, x in ipairs{ "", "-wal", "-shm" } do os.remove(path .. x) end end
clean()
local db = assert(zdb.open("sqlite:" .. path))
local q = queue.wrap(dbq.new(db, { sweep_interval = 30 }), { visibility_timeout = 30 })
local j = jobs.wrap(jq.new(q, { db = db }), {})
local ran = 0
j:register("send_welcome", function(a)
  ran = ran + a.user_id - 41
  if ran >= N then loop.stop() end
end)
local args = { user_id = 42 }
for _ = 1, N do
  args.user_id = 42
  assert(j:dispatch("send_welcome", args))
end
if PHASE ~= "dispatch" and N > 0 then
  local w = worker.new(j, { poll_max = 0.01 })
  w:start()
  loop.run()
  assert(ran == N, "ran " .. ran .. " of " .. N)
  local drained = false
  w:drain(0, function() drained = true end)
  while not drained do loop.run("once") end
  assert(q:len("jobs:default") == 0, "the queue is not empty")
end
db:close()
clean()
