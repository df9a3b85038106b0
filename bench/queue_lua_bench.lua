-- bench/queue_lua_bench.lua: the queue battery from Lua.
--
--   bin/zever run bench/queue_lua_bench.lua [filter]
--
-- QueueMemoryRoundTrip*: push + pop + ack on the memory adapter through zever.queue (string and
-- table payloads; real clock). QueueDbRoundTrip: the same on the db adapter over a WAL file
-- database (jobs/s is 1e9 / ns/op). ReclaimStale: one queue sweep that reclaims a batch of 100
-- stale leases on SQLite (the UPDATE with its IN-subquery, rendered by the query builder); the
-- batch is leased again between runs, outside the timing.

local harness = require "bench.harness"
local queue = require "zever.queue"
local zdb = require "zever.db"
local dbq = require "adapters.queue.db"
local sys = require "zever.sys"

local filter = arg and arg[1]
local bench = harness.new(filter, { seconds = 0.5 })

local function wanted(name)
  return not filter or name:find(filter, 1, true)
end

local mq = queue.new{ name = "bench:queue" }
bench("QueueMemoryRoundTrip", function()
  mq:push("jobs", "payload of some thirty bytes..")
  mq:ack(mq:pop("jobs"))
end)

local job = { job = "send_welcome", args = { user_id = 42 } }
bench("QueueMemoryRoundTripTable", function()
  mq:push("jobs", job)
  mq:ack(mq:pop("jobs"))
end)

local path = os.tmpname()
os.remove(path)
local db = assert(zdb.open("sqlite:" .. path))
local dq = queue.wrap(dbq.new(db, { sweep_interval = 3600 }), { visibility_timeout = 30 })
bench("QueueDbRoundTrip", function()
  dq:push("jobs", job)
  dq:ack(dq:pop("jobs"))
end)

local BATCH = 100
if wanted("ReclaimStale") then
  local t = 1e6
  local impl = dbq.new(db, { table = "reclaim", clock = function() return t end,
    sweep_interval = 3600, sweep_batch = BATCH })
  local q = queue.wrap(impl, { visibility_timeout = 1 })
  for i = 1, BATCH do q:push("jobs", i) end
  local relax = 'UPDATE "reclaim" SET claimed_by = \'bench\', claimed_until = 1'
  local n, runs = 200, {}
  for r = 1, 5 do
    local total = 0
    for _ = 1, n do
      assert(db:exec(relax))
      local t0 = sys.now()
      local got = impl:sweep()
      total = total + (sys.now() - t0)
      assert(got == BATCH)
    end
    runs[r] = total / n * 1e9
  end
  table.sort(runs)
  print(string.format("Benchmark%-28s %10d %12.1f ns/op   batch %d rows", "ReclaimStale", n,
    runs[3], BATCH))
end

db:close()
for _, suffix in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. suffix) end
