-- bench/queue_pg_acks.lua: what batching the acks of one loop turn buys on PostgreSQL.
--
--   bin/zever run bench/queue_pg_acks.lua [jobs=3000] [rounds=2]
--
-- Starts its own PostgreSQL 15 (spec/support/pg_server). Each round runs, one after the other,
-- a zever.worker with 4 slots in this process over `jobs` pre-dispatched jobs with
-- adapters.queue.db's ACK_BATCH set to 1 (every ack its own statement) and to 64 (the
-- default), on a fresh table each time; prints jobs/s from the worker's start to the last job,
-- per round and the median per setting.

local zdb = require "zever.db"
local queue = require "zever.queue"
local jobs = require "zever.jobs"
local jq = require "adapters.jobs.queue"
local dbq = require "adapters.queue.db"
local pg_server = require "spec.support.pg_server"
local helpers = require "bench.worker_bench_app"

local N = tonumber(arg and arg[1] or "") or 3000
local ROUNDS = tonumber(arg and arg[2] or "") or 2
local format = string.format

local srv = assert(pg_server.start())
local dsn = srv:database("acks")
local db = assert(zdb.open(dsn))
local serial = 0

local function run(batch)
  dbq.ACK_BATCH = batch
  serial = serial + 1
  local j = jobs.wrap(jq.new(queue.wrap(dbq.new(db, { table = "acks_" .. serial }),
    { visibility_timeout = 30 }), { db = db }), {})
  return helpers.run_in_process(j, N)
end

local median = helpers.median

local rates = { [1] = {}, [64] = {} }
for r = 1, ROUNDS do
  for _, batch in ipairs{ 1, 64 } do
    local rate = run(batch)
    rates[batch][r] = rate
    io.stderr:write(format("round %d, ack batch %d: %.0f jobs/s\n", r, batch, rate))
  end
end
dbq.ACK_BATCH = 64
for _, batch in ipairs{ 1, 64 } do
  print(format("BenchmarkQueuePgAckBatch/%d %6d jobs %8.0f jobs/s run (in process, 4 slots; "
    .. "median of %d)", batch, N, median(rates[batch]), ROUNDS))
end
db:close()
srv:stop()
