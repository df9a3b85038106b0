-- outbox_lua_bench.lua: the outbox relay's throughput on a SQLite file (issue #22's target:
-- >= 10,000 messages/s): 20,000 messages recorded in one transaction, then relayed in batches
-- of 100 and of 500 to a sink that does nothing (the relay's own cost: claim, decode, settle).
-- Prints the median of 5 runs per batch size, plus the record rate (one transaction).
--
-- Run: bin/zever run bench/outbox_lua_bench.lua   (or make bench BENCH=outbox)

local zdb = require "zever.db"
local outbox = require "zever.outbox"
local sys = require "zever.sys"

local N = 20000
local function median(t)
  table.sort(t)
  return t[math.ceil(#t / 2)]
end

local function run(batch)
  local path = os.tmpname()
  local db = assert(zdb.open("sqlite:" .. path))
  local ob = outbox.new(db, { batch = batch })
  local t0 = sys.now()
  db:transaction(function(tx)
    for i = 1, N do ob:record(tx, { topic = "orders.created", payload = { id = i } }) end
  end)
  local recorded = N / (sys.now() - t0)
  local sink = function() return true end
  t0 = sys.now()
  local total = 0
  while total < N do total = total + assert(ob:relay(sink)) end
  local relayed = N / (sys.now() - t0)
  db:close()
  os.remove(path)
  os.remove(path .. "-wal")
  os.remove(path .. "-shm")
  return relayed, recorded
end

for _, batch in ipairs({ 100, 500 }) do
  local rel, rec = {}, {}
  for i = 1, 5 do rel[i], rec[i] = run(batch) end
  print(("BenchmarkOutboxRelaySQLiteBatch%d  %d msgs  %.0f msgs/s relayed  %.0f msgs/s recorded")
    :format(batch, N, median(rel), median(rec)))
end
