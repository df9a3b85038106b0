-- bench/db_overhead_lua_bench.lua: what zever.db costs over raw FFI calls of libsqlite3 doing
-- the same SQL, side by side in one run (issue #24: within 10 %).
-- Run: bin/zever run bench/db_overhead_lua_bench.lua [filter]
--
-- Each pair runs the same statements on the same database file (WAL, synchronous NORMAL, as
-- the adapter opens it) from two connections: "raw" prepares once and calls sqlite3_* through
-- LuaJIT's FFI the way a hand-tuned OpenResty handler does (bench/tfb/nginx/tfb.lua), building
-- the same row table; "zever" calls the db front-end as an application does. The pairs:
--
--   First        db:first("SELECT id, randomNumber FROM World WHERE id = ?", id)
--   FirstBuilder db:from("World"):where("id", id):first()
--   FirstPrepared  by_id:first(id), by_id = db:from("World"):where("id", db.param()):prepare()
--   FirstBuilderSQL, FirstPreparedSQL  the same two zever calls against a raw side that runs
--                exactly the SQL they send: first()'s text with its LIMIT (`LIMIT ?` bound to 1
--                before session 10, the literal `LIMIT 1` since), taken from the prepared query
--                at set-up. (First, FirstBuilder and FirstPrepared keep the hand-written raw
--                SELECT without LIMIT of earlier sessions, so their figures stay comparable.)
--   Exec         db:exec("UPDATE World SET randomNumber = ? WHERE id = ?", n, id)
--   ExecPrepared set:exec(n, id), set = db:update("World"):set("randomNumber", db.param())
--                :where("id", db.param()):prepare()
--   Transaction  db:transaction(fn) around one such UPDATE (BEGIN IMMEDIATE ... COMMIT)
--
-- Rounds alternate raw and zever (5 rounds each, CPU time of this process via os.clock, so a
-- busy machine inflates both sides alike); a line gives the medians in ns/op, the overhead in
-- ns and %, and B/op of each side (the Lua heap's growth over 20,000 ops with the collector
-- stopped). N (ops per round) defaults to 200,000 (ZV_DB_OVERHEAD_N).
--
-- Instructions instead of time (load-independent): ZV_DB_OVERHEAD_MODE=<Name>/raw or
-- <Name>/zever runs only that side N times after a warm-up and prints nothing else (N: arg[1]
-- or ZV_DB_OVERHEAD_N); run it under callgrind at two N and take the slope
-- (bench/db_overhead_callgrind.sh does, through bench/callgrind_delta.sh).

local ffi = require "ffi"
local zdb = require "zever.db"
require "zever.cdef.sqlite" -- sqlite_ffi.h: the adapter's calls and the raw ones used here

local C = ffi.C
local mode = os.getenv("ZV_DB_OVERHEAD_MODE")
local filter = (arg and arg[1]) or os.getenv("BENCH") or ""
local N = tonumber(os.getenv("ZV_DB_OVERHEAD_N")) or 200000
-- With a mode, arg[1] is N instead of a filter (bench/callgrind_delta.sh passes it so).
if mode and tonumber(filter) then N, filter = tonumber(filter), "" end
local ROWS = 10000
local ROW, DONE = 100, 101

local path = os.tmpname()
os.remove(path)
local db = assert(zdb.open("sqlite:" .. path))
db:exec("CREATE TABLE World (id INTEGER PRIMARY KEY, randomNumber INTEGER NOT NULL)")
db:transaction(function(tx)
  for i = 1, ROWS do tx:exec("INSERT INTO World VALUES (?, ?)", i, (i * 7919) % 10000 + 1) end
end)

local pdb = ffi.new("sqlite3 *[1]")
assert(C.sqlite3_open_v2(path, pdb, 0x02 + 0x8000, nil) == 0)
local raw = pdb[0]
local function prepare(sql)
  local p = ffi.new("sqlite3_stmt *[1]")
  assert(C.sqlite3_prepare_v2(raw, sql, #sql, p, nil) == 0, sql)
  return p[0]
end
for _, pragma in ipairs { "PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL" } do
  local st = prepare(pragma)
  local rc = C.sqlite3_step(st)
  assert(rc == ROW or rc == DONE, pragma)
  C.sqlite3_finalize(st)
end
local SELECT = "SELECT id, randomNumber FROM World WHERE id = ?"
local UPDATE = "UPDATE World SET randomNumber = ? WHERE id = ?"
local sel, upd = prepare(SELECT), prepare(UPDATE)
local begin, commit = prepare("BEGIN IMMEDIATE"), prepare("COMMIT")

local function run(st)
  local rc = C.sqlite3_step(st)
  C.sqlite3_reset(st)
  assert(rc == DONE)
end

local sink -- luacheck: ignore 231 (keeps each result alive, as the app would)

local function raw_first(id)
  C.sqlite3_bind_int64(sel, 1, id)
  assert(C.sqlite3_step(sel) == ROW)
  local row = { id = tonumber(C.sqlite3_column_int64(sel, 0)),
    randomNumber = tonumber(C.sqlite3_column_int64(sel, 1)) }
  C.sqlite3_reset(sel)
  return row
end

local function raw_update(n, id)
  C.sqlite3_bind_int64(upd, 1, n)
  C.sqlite3_bind_int64(upd, 2, id)
  run(upd)
end

local by_id = db:from("World"):where("id", db.param()):prepare()
-- The text first() sends (by_id's LIMIT 1 form: the builder's first() renders the same) and its
-- binds: the id, then 1 when the LIMIT is a bound `?`.
local FIRST_SQL, FIRST_N = by_id.one.text, by_id.one.n
assert(FIRST_N == 1 or (FIRST_N == 2 and by_id.one.list[2] == 1), FIRST_SQL)
local sel_same = prepare(FIRST_SQL)

local function raw_first_same(id)
  C.sqlite3_bind_int64(sel_same, 1, id)
  if FIRST_N == 2 then C.sqlite3_bind_int64(sel_same, 2, 1) end
  assert(C.sqlite3_step(sel_same) == ROW)
  local row = { id = tonumber(C.sqlite3_column_int64(sel_same, 0)),
    randomNumber = tonumber(C.sqlite3_column_int64(sel_same, 1)) }
  C.sqlite3_reset(sel_same)
  return row
end

local set_n = db:update("World"):set("randomNumber", db.param()):where("id", db.param()):prepare()

local pairs_ = {
  { "First",
    function(n) for i = 1, n do sink = raw_first(i % ROWS + 1) end end,
    function(n) for i = 1, n do sink = db:first(SELECT, i % ROWS + 1) end end },
  { "FirstBuilder",
    function(n) for i = 1, n do sink = raw_first(i % ROWS + 1) end end,
    function(n) for i = 1, n do sink = db:from("World"):where("id", i % ROWS + 1):first() end end },
  { "FirstPrepared",
    function(n) for i = 1, n do sink = raw_first(i % ROWS + 1) end end,
    function(n) for i = 1, n do sink = by_id:first(i % ROWS + 1) end end },
  { "FirstBuilderSQL",
    function(n) for i = 1, n do sink = raw_first_same(i % ROWS + 1) end end,
    function(n) for i = 1, n do sink = db:from("World"):where("id", i % ROWS + 1):first() end end },
  { "FirstPreparedSQL",
    function(n) for i = 1, n do sink = raw_first_same(i % ROWS + 1) end end,
    function(n) for i = 1, n do sink = by_id:first(i % ROWS + 1) end end },
  { "Exec",
    function(n) for i = 1, n do raw_update(i % 10000 + 1, i % ROWS + 1) end end,
    function(n) for i = 1, n do db:exec(UPDATE, i % 10000 + 1, i % ROWS + 1) end end },
  { "ExecPrepared",
    function(n) for i = 1, n do raw_update(i % 10000 + 1, i % ROWS + 1) end end,
    function(n) for i = 1, n do set_n:exec(i % 10000 + 1, i % ROWS + 1) end end },
  { "Transaction",
    function(n)
      for i = 1, n do
        run(begin)
        raw_update(i % 10000 + 1, i % ROWS + 1)
        run(commit)
      end
    end,
    function(n)
      local v, id
      local function body(tx) tx:exec(UPDATE, v, id) end
      for i = 1, n do
        v, id = i % 10000 + 1, i % ROWS + 1
        db:transaction(body)
      end
    end },
}

if not mode then print("# the SQL first() sends (FirstBuilderSQL, FirstPreparedSQL): " .. FIRST_SQL) end
require("bench.pairs").run(pairs_, { prefix = "DbOverhead", n = N, warm = 20000, filter = filter,
  mode = mode })
sink = nil

C.sqlite3_finalize(sel)
C.sqlite3_finalize(sel_same)
C.sqlite3_finalize(upd)
C.sqlite3_finalize(begin)
C.sqlite3_finalize(commit)
C.sqlite3_close_v2(raw)
db:close()
os.remove(path)
os.remove(path .. "-wal")
os.remove(path .. "-shm")
