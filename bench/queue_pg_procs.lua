-- bench/queue_pg_procs.lua: the db queue on PostgreSQL end to end, dispatch and run together,
-- with M `zever worker` processes of S slots each (issue 17's target: >= 10,000 jobs/s
-- dispatch+run with 4 workers on this machine, PostgreSQL on it).
--
--   bin/zever run bench/queue_pg_procs.lua [jobs=20000] [runs=3] [configs=1x4,2x4,4x1,4x4]
--   BENCH_QUEUE_DB_OLD=/tmp/old_db.lua bin/zever run bench/queue_pg_procs.lua ...
--
-- Starts its own PostgreSQL 15 (spec/support/pg_server: a temporary data directory, fsync
-- off, on loopback). For each run of each config (MxS: M processes, --concurrency S): a fresh
-- database; the M workers are started on the empty queue (this process waits until each
-- LISTENs); then this process dispatches `jobs` noop jobs with app.jobs:dispatch_batch, 1,000
-- a call (one round trip each), while the workers run them. Each worker's handler counts and
-- keeps the monotonic time of its first and last job, and writes them to a file of its own at
-- most every 20 ms; this process waits until the counts add up to `jobs`, then stops the
-- workers (SIGTERM) and checks the queue is empty. Printed per config, medians of the runs:
--   dispatch   jobs / dispatch time (this process)
--   e2e        jobs / (the last job of any worker - the first dispatch): dispatch+run together
--   hot        the table's updates that were HOT (pg_stat_user_tables, read after the workers
--              exited: their backends flushed their counts), and the duplicates run (a job
--              run twice: at-least-once; expected 0 with 30 s leases)
-- With BENCH_QUEUE_DB_OLD (a file holding another version of lua/adapters/queue/db.lua, e.g.
-- `git show <rev>:lua/adapters/queue/db.lua > /tmp/old_db.lua`), every run is made twice, the
-- two versions alternating (this process and the workers load that file for the "old" row):
-- a side-by-side comparison on one machine at one load.

local sys = require "zever.sys"
local sched = require "zever.sched"
local zdb = require "zever.db"
local queue = require "zever.queue"
local jobs = require "zever.jobs"
local jq = require "adapters.jobs.queue"
local pg_server = require "spec.support.pg_server"

local N = tonumber(arg and arg[1] or "") or 20000
local RUNS = tonumber(arg and arg[2] or "") or 3
local CONFIGS = arg and arg[3] or "1x4,2x4,4x1,4x4"
local OLD = os.getenv("BENCH_QUEUE_DB_OLD")
local format = string.format

local helpers = require "bench.worker_bench_app"
local quote, alive, slurp, median = helpers.quote, helpers.alive, helpers.slurp, helpers.median

local APP = [[
local old = os.getenv("BENCH_QUEUE_DB")
if old and old ~= "" then package.loaded["adapters.queue.db"] = dofile(old) end
local zever = require "zever"
local sys = require "zever.sys"
local sched = require "zever.sched"
local loop = require "zever.loop"
local app = zever.app()
local out = os.getenv("BENCH_OUT")
local n, first, last, dirty, seen, dup = 0, 0, 0, false, {}, 0
local function flush()
  dirty = false
  local f = assert(io.open(out .. ".tmp", "w"))
  f:write(string.format("%d %.9f %.9f %d", n, first, last, dup))
  f:close()
  os.rename(out .. ".tmp", out)
end
app.jobs:register("noop", function(args)
  local now = sys.now()
  if n == 0 then first = now end
  n, last = n + 1, now
  if seen[args.i] then dup = dup + 1 end
  seen[args.i] = true
  if not dirty then
    dirty = true
    loop.after(0.02, flush)
  end
end)
return app
]]

local function list(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = format("%.0f", v) end
  return table.concat(s, " ")
end

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. quote(dir)))
local app_path = dir .. "/app.lua"
local af = assert(io.open(app_path, "w"))
af:write(APP)
af:close()

local srv = assert(pg_server.start())

local function load_dbq(version)
  if version == "old" then return dofile(OLD) end
  return require "adapters.queue.db"
end

local function start_worker(dsn, out, slots, version)
  local env = format("DB_DSN=%s LOG_LEVEL=error BENCH_OUT=%s BENCH_QUEUE_DB=%s ", quote(dsn),
    quote(out), quote(version == "old" and OLD or ""))
  local log = out .. ".log"
  local p = assert(io.popen(env .. "exec " .. quote(sys.exe()) .. " worker " .. quote(app_path)
    .. " --concurrency " .. slots .. " >" .. quote(log) .. " 2>&1 & echo $!"))
  local pid = assert(tonumber(p:read("*l")), "no worker pid")
  p:close()
  return pid, log
end

local function stop(pid)
  if alive(pid) then os.execute("kill -TERM " .. pid) end
  local by = sys.now() + 10
  while alive(pid) and sys.now() < by do sched.sleep(0.01) end
  if alive(pid) then os.execute("kill -KILL " .. pid) end
end

local function one_run(i, procs, slots, version)
  local dsn = srv:database("procs")
  local db = assert(zdb.open(dsn))
  local dbq = load_dbq(version)
  local q = queue.wrap(dbq.new(db), { visibility_timeout = 30 })
  local j = jobs.wrap(jq.new(q, { db = db }), {})
  assert(q:len("jobs:default"))   -- the table exists before the workers start
  local pids, outs, logs = {}, {}, {}
  for k = 1, procs do
    outs[k] = format("%s/done-%d-%d", dir, i, k)
    pids[k], logs[k] = start_worker(dsn, outs[k], slots, version)
  end
  local up = sys.now() + 60
  repeat
    sched.sleep(0.01)
    local row = db:first("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = "
      .. "current_database() AND query LIKE 'LISTEN%'")
  until row.n >= procs or sys.now() > up
  local list_ = {}
  local t0 = sys.now()
  for first = 1, N, 1000 do
    local n = math.min(1000, N - first + 1)
    for k = 1, n do list_[k] = { i = first + k - 1 } end
    for k = n + 1, #list_ do list_[k] = nil end
    assert(#assert(j:dispatch_batch("noop", list_)) == n)
  end
  local dispatch_s = sys.now() - t0
  local deadline = sys.now() + 300
  local total, last, dup
  repeat
    sched.sleep(0.005)
    total, last, dup = 0, 0, 0
    for k = 1, procs do
      local text = slurp(outs[k])
      if text then
        local n, _, l, d = text:match("^(%d+) (%S+) (%S+) (%d+)$")
        total, dup = total + tonumber(n), dup + tonumber(d)
        if tonumber(l) > last then last = tonumber(l) end
      end
    end
  until total >= N or sys.now() > deadline
  for k = 1, procs do stop(pids[k]) end
  assert(total >= N, "the workers did not finish: " .. (slurp(logs[1]) or ""))
  local left = q:len("jobs:default")
  assert(left == 0, "the queue is not empty: " .. tostring(left))
  local st = db:first("SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables "
    .. "WHERE relname = 'queue_messages'")
  local idx = db:first("SELECT string_agg(indexname, ',' ORDER BY indexname) AS s FROM pg_indexes "
    .. "WHERE tablename = 'queue_messages'").s
  q:close()
  db:close()
  srv:drop(dsn)
  for k = 1, procs do os.remove(outs[k]); os.remove(logs[k]) end
  return { dispatch = N / dispatch_s, e2e = N / (last - t0), hot = st.upd > 0 and st.hot / st.upd
    or 0, upd = st.upd, dup = dup, idx = idx }
end

local versions = OLD and { "old", "new" } or { "new" }
io.stderr:write(format("load before: %s", slurp("/proc/loadavg") or "?\n"))
for config in CONFIGS:gmatch("[^,]+") do
  local procs, slots = config:match("^(%d+)x(%d+)$")
  procs, slots = assert(tonumber(procs), "configs: MxS,..."), tonumber(slots)
  local res = {}
  for _, v in ipairs(versions) do res[v] = { dispatch = {}, e2e = {}, hot = {}, dup = 0 } end
  for i = 1, RUNS do
    for _, v in ipairs(versions) do
      local r = one_run(i, procs, slots, v)
      local t = res[v]
      t.dispatch[i], t.e2e[i], t.hot[i], t.dup = r.dispatch, r.e2e, r.hot, t.dup + r.dup
      io.stderr:write(format("%s %s run %d: %.0f jobs/s dispatch, %.0f jobs/s e2e, %d updates "
        .. "(%.0f%% HOT), %d duplicates; indexes %s\n", config, v, i, r.dispatch, r.e2e, r.upd,
        100 * r.hot, r.dup, r.idx))
    end
  end
  for _, v in ipairs(versions) do
    local t = res[v]
    print(format("BenchmarkQueuePgProcs/%s/%s %6d jobs %8.0f jobs/s dispatch %8.0f jobs/s e2e "
      .. "(median of %d; e2e: %s) HOT %.0f%% duplicates %d", config, v, N, median(t.dispatch),
      median(t.e2e), RUNS, list(t.e2e), 100 * median(t.hot), t.dup))
  end
end
io.stderr:write(format("load after: %s", slurp("/proc/loadavg") or "?\n"))
srv:stop()
os.execute("rm -rf " .. quote(dir))
