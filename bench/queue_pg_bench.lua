-- bench/queue_pg_bench.lua: the db queue on PostgreSQL beside SQLite, end to end with a real
-- `zever worker --concurrency 4`, and what an idle worker sends.
--
--   bin/zever run bench/queue_pg_bench.lua [jobs=20000] [runs=3] [idle_seconds=5] [only]
--
-- only = "worker": the dispatch+run rows alone (serial dispatch, then batched dispatch), no
-- idle, overlap or prefetch rows.
--
-- Starts its own PostgreSQL 15 (spec/support/pg_server: a temporary data directory, fsync off,
-- on loopback). For each backend and run: a fresh database (an SQLite file in WAL mode, or a
-- new PostgreSQL database); this process dispatches `jobs` jobs one statement each through
-- app.jobs' own path (zever.jobs over adapters.jobs.queue over the db queue), then starts one
-- `zever worker --concurrency 4` process on a generated app whose handler only counts; when it
-- has run `jobs` jobs it writes the monotonic times of its first and last job to a file. This
-- process waits for the file, stops the worker and checks the queue is empty. Printed, with
-- medians:
--   dispatch   jobs / dispatch time (this process, one INSERT a job)
--   run        jobs / (last job - first job) in the worker: claim + handler + ack
--   both       jobs / (dispatch time + run time): dispatch and run one after the other
-- Batch (BenchmarkQueueDbWorker4Batch): the same, dispatched with app.jobs:dispatch_batch, 1,000
-- jobs a call (on PostgreSQL 16 INSERTs of 64 rows in one pipeline, one round trip a call).
-- Overlap (PostgreSQL): the worker is started first, on an empty queue; then this process
-- dispatches the jobs from 64 coroutines at once (as 64 requests would: their pushes meet in
-- one loop turn and go as one INSERT each turn), and the worker runs them as they come:
--   dispatch   jobs / dispatch time (64 coroutines)
--   overlap    jobs / (the worker's last job - the first dispatch): dispatch+run together
-- The statements this process sent for the dispatches are counted (a wrapper on query/first).
-- Prefetch: the same run in this process (a zever.worker with 4 slots) with the postgres
-- adapter claiming 1 row a statement and 8 (the default).
-- Idle: a zever.worker with 4 slots in this process, on an empty queue, for idle_seconds after
-- its first empty poll; the statements its queue adapter sends are counted (a wrapper around
-- the handle's exec/query/first). On PostgreSQL the server counts too: log_statement = 'all'
-- for the database, and the statements it logged in the window (every connection of the
-- database, the LISTEN one included) are counted from its log.

local sys = require "zever.sys"
local sched = require "zever.sched"
local zdb = require "zever.db"
local queue = require "zever.queue"
local jobs = require "zever.jobs"
local worker = require "zever.worker"
local jq = require "adapters.jobs.queue"
local dbq = require "adapters.queue.db"
local testing = require "zever.testing"
local pg_server = require "spec.support.pg_server"

local N = tonumber(arg and arg[1] or "") or 20000
local RUNS = tonumber(arg and arg[2] or "") or 3
local IDLE = tonumber(arg and arg[3] or "") or 5
local ONLY = arg and arg[4]
local format = string.format

local helpers = require "bench.worker_bench_app"
local quote, alive, slurp, median = helpers.quote, helpers.alive, helpers.slurp, helpers.median
local dir, app_path = helpers.write_app()

local srv = assert(pg_server.start())

-- A fresh database of backend: its DSN and a cleanup function.
local function fresh(backend, i)
  if backend == "sqlite" then
    local path = format("%s/q%d.db", dir, i)
    return "sqlite:" .. path, function()
      for _, suffix in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. suffix) end
    end
  end
  local dsn = srv:database("bench")
  return dsn, function() srv:drop(dsn) end
end

local function spawn_dispatchers(j, k, total, on_done)
  local per, left = math.floor(total / k), k
  for c = 1, k do
    local count = c == k and total - per * (k - 1) or per
    sched.spawn(function()
      for _ = 1, count do assert(j:dispatch("noop", { k = 1 })) end
      left = left - 1
      if left == 0 then on_done() end
    end)
  end
end

local function start_worker(dsn, out, prefetch)
  local env = format("DB_DSN=%s QUEUE_POLL_MAX=10ms LOG_LEVEL=error BENCH_JOBS=%d BENCH_OUT=%s "
    .. "BENCH_PREFETCH=%d ", quote(dsn), N, quote(out), prefetch or 0)
  local log = dir .. "/worker.log"
  local p = assert(io.popen(env .. "exec " .. quote(sys.exe()) .. " worker " .. quote(app_path)
    .. " --concurrency 4 >" .. quote(log) .. " 2>&1 & echo $!"))
  local pid = assert(tonumber(p:read("*l")), "no worker pid")
  p:close()
  return pid, log
end

local function wait_worker(pid, out, log)
  local deadline = sys.now() + 300
  local text
  repeat
    sched.sleep(0.002)
    text = slurp(out)
  until text or sys.now() > deadline or not alive(pid)
  if alive(pid) then os.execute("kill -TERM " .. pid) end
  local stop_by = sys.now() + 10
  while alive(pid) and sys.now() < stop_by do sched.sleep(0.01) end
  if alive(pid) then os.execute("kill -KILL " .. pid) end
  assert(text, "the worker did not finish: " .. (slurp(log) or ""))
  local first, last = text:match("^(%S+) (%S+)$")
  return tonumber(first), tonumber(last)
end

-- Overlap: the worker runs while this process dispatches from 64 coroutines.
local function overlap_run(i, prefetch)
  local dsn, cleanup = fresh("postgres", 200 + i)
  local out = format("%s/done-overlap-%d", dir, i)
  local db = assert(zdb.open(dsn))
  local impl = dbq.new(db)
  local q = queue.wrap(impl, { visibility_timeout = 30 })
  local j = jobs.wrap(jq.new(q, { db = db }), {})
  assert(q:len("jobs:default"))
  local pid, log = start_worker(dsn, out, prefetch)
  -- The worker is up when it listens (its LISTEN connection shows in pg_stat_activity).
  local up = sys.now() + 30
  repeat
    sched.sleep(0.01)
    local row = db:first("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = "
      .. "current_database() AND query LIKE 'LISTEN%'")
  until row.n > 0 or sys.now() > up
  local statements = 0
  for _, m in ipairs{ "query", "first" } do
    local orig = impl.db[m]
    impl.db[m] = function(...)
      statements = statements + 1
      return orig(...)
    end
  end
  local done = false
  local t0 = sys.now()
  spawn_dispatchers(j, 64, N, function() done = true end)
  assert(testing.run_until(function() return done end, 300), "the dispatches did not finish")
  local dispatch_s = sys.now() - t0
  local _, last = wait_worker(pid, out, log)
  local left = db:first('SELECT count(*) AS n FROM "queue_messages"').n
  assert(left == 0, "the queue is not empty: " .. tostring(left))
  db:close()
  cleanup()
  os.remove(out)
  return { dispatch = N / dispatch_s, overlap = N / (last - t0), per_job = statements / N }
end

local function one_run(backend, i, batch)
  local dsn, cleanup = fresh(backend, i)
  local out = format("%s/done-%s-%d", dir, backend, i)
  local db = assert(zdb.open(dsn))
  local q = queue.wrap(dbq.new(db), { visibility_timeout = 30 })
  local j = jobs.wrap(jq.new(q, { db = db }), {})
  local args = { k = 1 }
  assert(q:len("jobs:default"))   -- creates the table outside the timing
  local t0 = sys.now()
  if batch then
    local list = {}
    for k = 1, math.min(N, 1000) do list[k] = args end
    for first = 1, N, 1000 do
      local n = math.min(1000, N - first + 1)
      if n < #list then for k = n + 1, #list do list[k] = nil end end
      assert(#assert(j:dispatch_batch("noop", list)) == n)
    end
  else
    for _ = 1, N do assert(j:dispatch("noop", args)) end
  end
  local dispatch_s = sys.now() - t0
  local pid, log = start_worker(dsn, out)
  local first, last = wait_worker(pid, out, log)
  local run_s = last - first
  local left = q:len("jobs:default")
  assert(left == 0, "the queue is not empty: " .. tostring(left))
  db:close()
  cleanup()
  os.remove(out)
  return { dispatch = N / dispatch_s, run = (N - 1) / run_s, both = N / (dispatch_s + run_s) }
end

-- The statements the adapter of an idle in-process worker sends in IDLE seconds (and, on
-- PostgreSQL, the statements the server logged for the database meanwhile).
local function idle(backend)
  local dsn, cleanup = fresh(backend, 0)
  local dbname = dsn:match("/([%w_]+)$")
  if backend == "postgres" then
    assert(srv:psql("postgres", format("ALTER DATABASE %s SET log_statement = 'all'", dbname))
      .code == 0)
  end
  local logfile = srv.dir .. "/server.log"
  local start = #(slurp(logfile) or "")
  local db = assert(zdb.open(dsn))
  local impl = dbq.new(db)
  local sent = 0
  for _, m in ipairs{ "exec", "query", "first" } do
    local orig = impl.db[m]
    impl.db[m] = function(...)
      sent = sent + 1
      return orig(...)
    end
  end
  local j = jobs.wrap(jq.new(queue.wrap(impl, { visibility_timeout = 30 }), { db = db }), {})
  local w = worker.new(j, { concurrency = 4 })
  w:start()
  assert(testing.run_until(function() return w.waiting ~= nil and sent > 0 end, 10))
  local log0 = #(slurp(logfile) or "")
  local before, t0 = sent, sys.now()
  testing.run_until(function() return sys.now() - t0 >= IDLE end, IDLE + 5)
  local secs = sys.now() - t0
  local n = sent - before
  local listening = w.sub ~= nil
  local server, warmup
  if backend == "postgres" then
    local function logged(text)
      local k = 0
      for line in text:gmatch("[^\n]+") do
        if line:find("LOG:  statement:", 1, true) or line:find("LOG:  execute", 1, true) then
          k = k + 1
        end
      end
      return k
    end
    local text = slurp(logfile) or ""
    server = logged(text:sub(log0 + 1))
    -- The log does count: the statements before the window (schema, LISTEN, first poll).
    warmup = logged(text:sub(start + 1, log0))
    assert(warmup > 0, "the server logged no statement at all: log_statement is not on")
  end
  local drained = false
  w:drain(0, function() drained = true end)
  testing.run_until(function() return drained end, 5)
  db:close()
  cleanup()
  return n / secs, server and server / secs, listening, warmup
end

-- In this process: a zever.worker with 4 slots runs N pre-dispatched jobs from a queue whose
-- adapter claims `prefetch` rows a statement (PostgreSQL); returns jobs/s from start to the
-- last job.
local function in_process(prefetch)
  local dsn, cleanup = fresh("postgres", 100 + prefetch)
  local db = assert(zdb.open(dsn))
  local j = jobs.wrap(jq.new(queue.wrap(dbq.new(db, { prefetch = prefetch }),
    { visibility_timeout = 30 }), { db = db }), {})
  local rate = helpers.run_in_process(j, N)
  db:close()
  cleanup()
  return rate
end

local function list(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = format("%.0f", v) end
  return table.concat(s, " ")
end

for _, backend in ipairs{ "sqlite", "postgres" } do
 for _, batch in ipairs{ false, true } do
  local dispatch, run, both = {}, {}, {}
  for i = 1, RUNS do   -- runs=0: the idle part only
    local r = one_run(backend, i + (batch and 50 or 0), batch)
    dispatch[i], run[i], both[i] = r.dispatch, r.run, r.both
    io.stderr:write(format("%s%s run %d: %.0f jobs/s dispatch, %.0f jobs/s run, %.0f jobs/s both\n",
      backend, batch and " batch" or "", i, r.dispatch, r.run, r.both))
  end
  if RUNS > 0 then
    print(format("BenchmarkQueueDbWorker4%s/%-8s %6d jobs %8.0f jobs/s dispatch %8.0f jobs/s run "
      .. "%8.0f jobs/s both (median of %d; run: %s; both: %s)", batch and "Batch" or "", backend,
      N, median(dispatch), median(run), median(both), RUNS, list(run), list(both)))
  end
 end
 if ONLY ~= "worker" then
  local qps, server, listening, warmup = idle(backend)
  print(format("BenchmarkQueueDbIdle/%-8s %5.1f s idle: %.2f statements/s from the adapter%s%s",
    backend, IDLE, qps, server and format(", %.2f statements/s logged by the server (%d logged "
    .. "before the window)", server, warmup) or "",
    listening and " (LISTEN)" or " (polling, poll_max 1 s)"))
 end
end
if ONLY == "worker" then
  srv:stop()
  os.execute("rm -rf " .. quote(dir))
  os.exit(0)
end

for _, prefetch in ipairs{ 8, 32 } do
  local dispatch, overlap, per_job = {}, {}, {}
  for i = 1, RUNS do
    local r = overlap_run(i, prefetch)
    dispatch[i], overlap[i], per_job[i] = r.dispatch, r.overlap, r.per_job
    io.stderr:write(format("overlap prefetch %d run %d: %.0f jobs/s dispatch (64 coroutines), "
      .. "%.0f jobs/s dispatch+run, %.3f statements a dispatch\n", prefetch, i, r.dispatch,
      r.overlap, r.per_job))
  end
  if RUNS > 0 then
    print(format("BenchmarkQueuePgOverlap/prefetch%-3d %6d jobs %8.0f jobs/s dispatch (64 "
      .. "coroutines) %8.0f jobs/s dispatch+run, %.3f statements a dispatch (median of %d; "
      .. "dispatch+run: %s)", prefetch, N, median(dispatch), median(overlap), median(per_job),
      RUNS, list(overlap)))
  end
end

for _, prefetch in ipairs{ 1, 8, 32 } do
  local rates = {}
  for i = 1, math.max(RUNS, 1) do rates[i] = in_process(prefetch) end
  print(format("BenchmarkQueuePgPrefetch/%d %6d jobs %8.0f jobs/s run (in process, 4 slots; "
    .. "median of %d: %s)", prefetch, N, median(rates), #rates, list(rates)))
end

srv:stop()
os.execute("rm -rf " .. quote(dir))
