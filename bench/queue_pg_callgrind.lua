-- bench/queue_pg_callgrind.lua: the client side of the db queue on PostgreSQL, for callgrind
-- (instructions are load-independent; the server runs outside valgrind, it is a child process
-- valgrind does not follow). bench/queue_pg_callgrind.sh runs it and prints the slopes.
--
--   ZV_QCG_MODE=dispatch|run ZV_QCG_N=n [ZV_QCG_DBQ=file] bin/zever run bench/queue_pg_callgrind.lua
--
-- dispatch: n jobs with app.jobs:dispatch_batch (1,000 a call) into a fresh database, then
-- exits. run: the same, then a zever.worker with 4 slots in this process runs them (noop
-- handler) until the queue is empty.

local zdb = require "zever.db"
local queue = require "zever.queue"
local jobs = require "zever.jobs"
local worker = require "zever.worker"
local jq = require "adapters.jobs.queue"
-- ZV_QCG_DBQ: a file holding another version of lua/adapters/queue/db.lua, to count it instead
-- (`git show <rev>:lua/adapters/queue/db.lua > /tmp/old_db.lua`).
local dbq = os.getenv("ZV_QCG_DBQ") and dofile(os.getenv("ZV_QCG_DBQ")) or require "adapters.queue.db"
local testing = require "zever.testing"
local pg_server = require "spec.support.pg_server"

local MODE = os.getenv("ZV_QCG_MODE") or "run"
local N = tonumber(os.getenv("ZV_QCG_N") or "") or 2000

local srv = assert(pg_server.start())
local dsn = srv:database("qcg")
local db = assert(zdb.open(dsn, { connect_timeout = 300 }))   -- logins are slow under valgrind
local j = jobs.wrap(jq.new(queue.wrap(dbq.new(db), { visibility_timeout = 600 }), { db = db }), {})
local n = 0
j:register("noop", function() n = n + 1 end)
local list = {}
for i = 1, 1000 do list[i] = { k = 1 } end
for first = 1, N, 1000 do
  local c = math.min(1000, N - first + 1)
  for k = c + 1, #list do list[k] = nil end
  assert(#assert(j:dispatch_batch("noop", list)) == c)
end
if MODE == "run" then
  local w = worker.new(j, { concurrency = 4 })
  w:start()
  assert(testing.run_until(function() return n >= N end, 600), "the jobs did not run")
  local drained = false
  w:drain(0, function() drained = true end)
  testing.run_until(function() return drained end, 5)
end
-- Connections opened (each pays a SCRAM-SHA-256 login: ~40M instructions of libcrypto's
-- PBKDF2), so a slope between two runs that opened different counts can be corrected.
local st = db:pool_stats()
io.stderr:write(string.format("%s %d jobs, %d run, %d connections, %d listener connections\n",
  MODE, N, n, st.connects, st.listener_connects))
db:close()
srv:stop()
