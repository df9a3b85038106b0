-- workflow_lua_bench.lua: what a workflow run costs on each store, through zever.workflow:
-- start, then one attempt (workflow.execute, what the job does) of a run of 10 steps, each
-- recorded once (record_step), to completion:
--
--   WorkflowRun10Memory   the memory store
--   WorkflowRun10Db       the db store on a SQLite file (WAL): one transaction per step
--   WorkflowRun10Redis    the redis store on a local redis-server: one EVALSHA per step
--
-- The jobs battery is left out (a dispatch that only counts), so the numbers are the store's
-- and the front-end's. After the timings it prints the Redis commands one run sends from the
-- client (INFO commandstats: calls outside scripts are the round trips).
--
-- Run: bin/zever run bench/workflow_lua_bench.lua [filter]  (starts its own redis-server)

local harness = require "bench.harness"
local workflow = require "zever.workflow"
local rwf = require "adapters.workflow.redis"
local zdb = require "zever.db"
local redis = require "zever.redis"
local redis_server = require "spec.support.redis_server"

local srv = assert(redis_server.start())
local bench = harness.new(arg and arg[1], { seconds = 0.3 })
local path = os.tmpname()

-- Counts dispatches instead of queueing them: execute is called directly.
local jobs = { dispatched = 0 }
function jobs.register() end
function jobs:dispatch() self.dispatched = self.dispatched + 1; return true end

local STEPS = 10
local function define(wf)
  wf:define("ten", function(ctx)
    local sum = 0
    for i = 1, STEPS do sum = sum + ctx:step("s" .. i, function() return i end) end
    return sum
  end)
  return wf
end

local function scenario(name, wf)
  local n = 0
  local function run()
    n = n + 1
    local id = assert(wf:start("ten", {}, name .. n))
    assert(workflow.execute(wf, id) == "completed")
  end
  bench(name, run)
  return run
end

local db
local ok, err = pcall(function()
  scenario("WorkflowRun10Memory", define(workflow.wrap(require("adapters.workflow.memory").new(),
    { jobs = jobs })))
  db = assert(zdb.open("sqlite:" .. path))
  scenario("WorkflowRun10Db", define(workflow.wrap(require("adapters.workflow.db").new(db),
    { jobs = jobs })))
  local rstore = define(workflow.wrap(assert(rwf.new{ url = srv.url, prefix = "bench:" }),
    { jobs = jobs }))
  local run = scenario("WorkflowRun10Redis", rstore)
  -- The commands of one run, from a private client's INFO commandstats before and after.
  local c = assert(redis.connect(srv.url, { sync = true }))
  local function stats()
    local t = {}
    for k, v in c:call("INFO", "commandstats"):gmatch("cmdstat_([%w_|]+):calls=(%d+)") do
      t[k] = tonumber(v)
    end
    return t
  end
  run() -- warm: scripts loaded
  local before = stats()
  run()
  local after = stats()
  local parts = {}
  for k, v in pairs(after) do
    local d = v - (before[k] or 0)
    if k ~= "info" and d > 0 then parts[#parts + 1] = k .. "=" .. d end
  end
  table.sort(parts)
  print(("one run of %d steps on redis: %s"):format(STEPS, table.concat(parts, " ")))
  c:close()
  rstore:close()
end)
if db then db:close() end
for _, s in ipairs{ "", "-wal", "-shm" } do os.remove(path .. s) end
srv:stop()
if not ok then error(err, 0) end
