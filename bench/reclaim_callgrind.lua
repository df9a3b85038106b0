-- reclaim_callgrind.lua N: ReclaimStale's shape (queue_lua_bench.lua) for callgrind: N times, 100
-- rows leased stale by an UPDATE run through the classic binding (l_exec), then one queue sweep
-- through the adapter (the FFI path). bench/callgrind_delta.sh counts the pair per iteration and,
-- with TOGGLE=l_exec, the stale-making UPDATE alone; the sweep is the difference:
--
--   bash bench/callgrind_delta.sh bench/reclaim_callgrind.lua 200 400
--   bash bench/callgrind_delta.sh bench/reclaim_callgrind.lua 200 400 l_exec
local zdb = require "zever.db"
local dbq = require "adapters.queue.db"
local queue = require "zever.queue"

local N = tonumber(arg and arg[1]) or 0
local path = os.tmpname()
os.remove(path)
local db = assert(zdb.open("sqlite:" .. path))
local t = 1e6
local impl = dbq.new(db, { table = "reclaim", clock = function() return t end,
  sweep_interval = 3600, sweep_batch = 100 })
local q = queue.wrap(impl, { visibility_timeout = 1 })
for i = 1, 100 do q:push("jobs", i) end
local relax = 'UPDATE "reclaim" SET claimed_by = \'bench\', claimed_until = 1'
for _ = 1, N do
  assert(db.conn.raw:exec(relax))
  assert(impl:sweep() == 100)
end
db:close()
for _, suffix in ipairs{ "", "-wal", "-shm" } do os.remove(path .. suffix) end
