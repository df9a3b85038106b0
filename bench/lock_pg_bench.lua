-- lock_pg_bench.lua: a lease on PostgreSQL, side by side: the postgres adapter (session-level
-- advisory locks, adapters.lock.postgres) against the db adapter's lease table on the same
-- server (adapters.lock.db over zever.db), through the front-end (zever.lock). One pair is an
-- uncontended try_acquire + unlock of one key; rounds alternate the two adapters.
--
-- Starts its own PostgreSQL 15 (spec/support/pg_server: a temporary data directory, fsync off,
-- a free loopback port) and stops it at the end. For each adapter it prints the median over
-- the rounds of: wall-clock microseconds per pair, client CPU microseconds per pair (os.clock:
-- this process only), statements sent per pair (the pool's counter: each is one round trip
-- once its prepared statement is cached), and the server's CPU per pair: the utime + stime of
-- the adapter's backend process (/proc/<pid>/stat, clock ticks) over all rounds.
--
-- Run: bin/zever run bench/lock_pg_bench.lua [pairs per round, 2000] [rounds, 7]
-- Client instructions per pair (callgrind, this process only; the difference of two runs
-- cancels start-up): for N in 1000 2000: BENCH_SIDE=postgres valgrind --tool=callgrind
--   bin/zever run bench/lock_pg_bench.lua N 1   then (Ir(2000) - Ir(1000)) / 2000
-- (a run does a warm-up round plus 1 round of N pairs).

local pg_server = require "spec.support.pg_server"
local lock = require "zever.lock"
local plock = require "adapters.lock.postgres"
local ldb = require "adapters.lock.db"
local zdb = require "zever.db"
local sys = require "zever.sys"

local pairs_n, rounds = tonumber(arg and arg[1]) or 2000, tonumber(arg and arg[2]) or 7

local srv = assert(pg_server.start())
local dsn = srv:database("lockbench")

local pimpl = assert(plock.new(dsn, { prefix = "bench:" }))
local padv = lock.wrap(pimpl)
local db = assert(zdb.open(dsn, { pool_size = 1 }))
local ltab = lock.wrap(ldb.new(db, {}))

local sides = {
  { name = "postgres (advisory)", locks = padv, stats = function() return pimpl.db:pool_stats() end,
    db = pimpl.db },
  { name = "db (lease table)", locks = ltab, stats = function() return db:pool_stats() end,
    db = db },
}

local TICK = tonumber(io.popen("getconf CLK_TCK"):read("*l")) or 100

-- utime + stime of a backend, in seconds.
local function backend_cpu(pid)
  local f = assert(io.open("/proc/" .. pid .. "/stat"))
  local line = f:read("*l")
  f:close()
  local rest = line:match("%) (.*)$")
  local fields = {}
  for w in rest:gmatch("%S+") do fields[#fields + 1] = w end
  -- after the comm field: state is 1, utime 12, stime 13 (proc(5) numbers 14 and 15)
  return (tonumber(fields[12]) + tonumber(fields[13])) / TICK
end

-- BENCH_SIDE=postgres|db runs one side only (for callgrind: instructions of this process).
local only = os.getenv("BENCH_SIDE")
if only then
  local keep = only == "postgres" and sides[1] or only == "db" and sides[2]
  assert(keep, "BENCH_SIDE must be postgres or db")
  sides = { keep }
end

local function round(side)
  local locks = side.locks
  local s0 = side.stats().statements
  local c0, t0 = os.clock(), sys.now()
  for _ = 1, pairs_n do
    local lease = assert(locks:try_acquire("job:1", 30))
    assert(lease:unlock())
  end
  local t1, c1 = sys.now(), os.clock()
  local s1 = side.stats().statements
  return (t1 - t0) * 1e6 / pairs_n, (c1 - c0) * 1e6 / pairs_n, (s1 - s0) / pairs_n
end

local function median(t)
  table.sort(t)
  local n = #t
  if n % 2 == 1 then return t[(n + 1) / 2] end
  return (t[n / 2] + t[n / 2 + 1]) / 2
end

for _, side in ipairs(sides) do
  side.wall, side.cpu, side.stmts = {}, {}, {}
  round(side)   -- warm-up: the sequence / table, prepared statements, traces
  side.pid = side.db:first("SELECT pg_backend_pid() AS pid").pid
  side.server0 = backend_cpu(side.pid)
end
for _ = 1, rounds do
  for _, side in ipairs(sides) do
    local w, c, s = round(side)
    side.wall[#side.wall + 1], side.cpu[#side.cpu + 1], side.stmts[#side.stmts + 1] = w, c, s
  end
end
for _, side in ipairs(sides) do
  side.server = (backend_cpu(side.pid) - side.server0) * 1e6 / (pairs_n * rounds)
  -- the pid query and the two reads are the session's only other statements in that window
  assert(side.db:first("SELECT pg_backend_pid() AS pid").pid == side.pid, "the session changed")
end

print(("%d pairs x %d rounds (medians)"):format(pairs_n, rounds))
print(("%-22s %13s %13s %15s %16s"):format("adapter", "wall us/pair", "client cpu us",
  "server cpu us", "statements/pair"))
for _, side in ipairs(sides) do
  side.mw, side.mc, side.ms = median(side.wall), median(side.cpu), median(side.stmts)
  print(("%-22s %13.1f %13.1f %15.1f %16.2f"):format(side.name, side.mw, side.mc, side.server,
    side.ms))
end
if #sides == 2 then
  print(("ratio postgres/db: wall %.2fx  client cpu %.2fx  server cpu %.2fx"):format(
    sides[1].mw / sides[2].mw, sides[1].mc / sides[2].mc, sides[1].server / sides[2].server))
end

padv:close()
ltab:close()
db:close()
srv:drop(dsn)
srv:stop()
