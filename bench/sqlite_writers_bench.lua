-- bench/sqlite_writers_bench.lua: two worker threads of one process writing one SQLite file, as
-- `zever serve --workers 2` does on TechEmpower's /updates: each thread, on its own connection,
-- runs transactions of 20 point selects then BEGIN IMMEDIATE, 20 UPDATEs, COMMIT. SQLite has one
-- writer at a time, so the second thread waits for the lock; this measures how long a
-- transaction takes with both threads busy (wall time of the slower thread / its transactions),
-- i.e. how well the lock passes between them (host/sqlite/writegate.c).
--
-- Run: bin/zever run bench/sqlite_writers_bench.lua [transactions per thread, default 2000]
-- Prints: BenchmarkSqliteTwoWriters <n> <ns/op> ns/op   (median of 5 runs)
local sqlite = require "zever.sqlite"
local threads = require "zever.threads"
local sys = require "zever.sys"

local M = {}

-- The worker: "path|n|file": n transactions, then writes its wall time in seconds to file.<index>.
function M.worker(payload, index)
  local path, n, file = payload:match("^(.-)|(%d+)|(.*)$")
  n = tonumber(n)
  local c = assert(sqlite.open(path, { busy_timeout = 60000 }))
  local rnd = math.random
  local t0 = sys.now()
  for _ = 1, n do
    local ids = {}
    for j = 1, 20 do
      ids[j] = rnd(1, 10000)
      assert(c:first("SELECT id, n FROM w WHERE id = ?", { ids[j] }))
    end
    assert(c:exec("BEGIN IMMEDIATE"))
    for j = 1, 20 do assert(c:exec("UPDATE w SET n = ? WHERE id = ?", { rnd(1, 10000), ids[j] })) end
    assert(c:exec("COMMIT"))
  end
  local dt = sys.now() - t0
  c:close()
  local f = assert(io.open(file .. "." .. index, "w"))
  f:write(string.format("%.9f", dt))
  f:close()
end

if ... == "bench.sqlite_writers_bench" then return M end

local N = tonumber(arg and arg[1]) or 2000
local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))
local runs = {}
for r = 1, 5 do
  local path = dir .. "/w" .. r .. ".db"
  local c = assert(sqlite.open(path))
  assert(c:exec("CREATE TABLE w (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)"))
  assert(c:exec("BEGIN"))
  for i = 1, 10000 do assert(c:exec("INSERT INTO w (id, n) VALUES (?, ?)", { i, i })) end
  assert(c:exec("COMMIT"))
  local pool = threads.start(2, "bench.sqlite_writers_bench", path .. "|" .. N .. "|" .. dir .. "/t" .. r)
  pool:join()
  local dt = 0
  for i = 1, 2 do
    local h = assert(io.open(dir .. "/t" .. r .. "." .. i))
    dt = math.max(dt, tonumber(h:read("*a")))
    h:close()
  end
  runs[r] = dt / N * 1e9
  c:close()
end
os.execute("rm -rf " .. dir)
table.sort(runs)
print(string.format("BenchmarkSqliteTwoWriters %d %.1f ns/op", N, runs[3]))
if sqlite.gate then -- binaries with host/sqlite/writegate.c
  print(string.format("# waits ended by a commit: %d in %d transactions", select(2, sqlite.gate()), 10 * N))
end
