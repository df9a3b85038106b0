-- bench/db_overhead_pg_bench.lua: what zever.db costs on PostgreSQL over raw libpq calls through
-- LuaJIT's FFI doing the same SQL, side by side in one run (issue #24: within 10 %; the SQLite
-- pairs are bench/db_overhead_lua_bench.lua).
-- Run: bin/zever run bench/db_overhead_pg_bench.lua [filter]
--
-- It starts its own PostgreSQL 15 (spec/support/pg_server.lua: a temporary data directory on a
-- free loopback port, fsync off) and a table "World" of 10,000 rows, then opens two
-- connections to it: "raw" prepares its statements once and calls libpq the way a hand-tuned
-- FFI handler in a server would (host/pg/pg_ffi.h): PQsendQueryPrepared with text parameters
-- (as the adapter sends them; the id's digits written into a reused buffer, no string) on a
-- non-blocking connection, then the wait on the worker's loop: its socket watched by a
-- zever.loop.poll handle whose callback completes the waiting coroutine's zever.sched token,
-- then PQconsumeInput/PQisBusy/PQgetResult; the row read with PQgetvalue into the same row table
-- the adapter builds (digits parsed from the buffer, as the adapter does). A worker cannot block
-- in libpq (every other request would wait), so this is the raw side a server has.
-- ZV_DB_OVERHEAD_RAW=block makes it PQexecPrepared instead (blocking in libpq's own poll(): no
-- loop, no coroutine; session 10's raw side), for reference. "zever" calls the db front-end on
-- a pool of one connection, as an application does, from a coroutine (a request's shape: the
-- wait yields to the worker's loop and the socket's readiness resumes it). The pairs:
--
--   First        db:first('SELECT id, "randomNumber" FROM "World" WHERE id = ?', id)
--   FirstBuilder db:from("World"):where("id", id):first()
--   FirstPrepared  by_id:first(id), by_id = db:from("World"):where("id", db.param()):prepare()
--   Exec         db:exec('UPDATE "World" SET "randomNumber" = ? WHERE id = ?', n, id)
--   ExecDiscard  the same with its result dropped (as bench/db_overhead_lua_bench.lua's Exec):
--                LuaJIT then sinks exec's { changes, last_insert_id } table (0 B/op)
--   ExecPrepared set:exec(n, id), set = db:update("World"):set("randomNumber", db.param())
--                :where("id", db.param()):prepare()
--   Transaction  db:transaction(fn) around one such UPDATE
--
-- The raw side of the First pairs is the one prepared SELECT (the builder's text adds LIMIT 1,
-- as on SQLite). The raw side of Exec reads the changed-row count (PQcmdTuples), as db:exec
-- answers it. The raw Transaction has the adapter's wire shape: BEGIN and the UPDATE go in one
-- pipeline (PQenterPipelineMode: one round trip), then COMMIT (a second), so the pair measures
-- the client's work, not a round trip more or less.
--
-- Rounds alternate raw and zever (5 rounds each, CPU time of this process via os.clock: the
-- kernel's send/poll/recv included, the server excluded, and a busy machine inflates both sides
-- alike); a line gives the medians in ns/op, the overhead in ns and %, and B/op of each side
-- (the Lua heap's growth over 5,000 ops with the collector stopped). N (ops per round) defaults
-- to 20,000 (ZV_DB_OVERHEAD_N).
--
-- Instructions instead of time (load-independent, this process only: the server is another
-- process valgrind does not follow): ZV_DB_OVERHEAD_MODE=<Name>/raw or <Name>/zever runs only
-- that side N times (N from arg[1] then, as bench/callgrind_delta.sh passes it) after a warm-up
-- and prints nothing else; bench/db_overhead_pg_callgrind.sh runs it through
-- bench/callgrind_delta.sh (two N, the slope).

local ffi = require "ffi"
local zdb = require "zever.db"
local sched = require "zever.sched"
local loop = require "zever.loop"
local pg_server = require "spec.support.pg_server"
require "zever.cdef.pg" -- pg_ffi.h: the adapter's decode calls and the raw ones used here

local C = ffi.C
local mode = os.getenv("ZV_DB_OVERHEAD_MODE")
local filter = (not mode and arg and arg[1]) or os.getenv("BENCH") or ""
local N = (mode and tonumber(arg and arg[1])) or tonumber(os.getenv("ZV_DB_OVERHEAD_N")) or 20000
local BLOCKING = os.getenv("ZV_DB_OVERHEAD_RAW") == "block"
local ROWS = 10000
local PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_PIPELINE_SYNC = 1, 2, 10
local CONNECTION_OK = 0

local srv = assert(pg_server.start())
local dsn = srv:database("overhead")
-- Logins are slow under valgrind (SCRAM's PBKDF2): a long connect timeout.
local db = assert(zdb.open(dsn, { pool_size = 1, connect_timeout = 300 }))
local SELECT = 'SELECT id, "randomNumber" FROM "World" WHERE id = ?'
local UPDATE = 'UPDATE "World" SET "randomNumber" = ? WHERE id = ?'

local raw -- the raw PGconn
local sel_name, upd_name = "raw_sel", "raw_upd"
local values = ffi.new("const char *[2]")
local lens = ffi.new("int[2]")
local digits = ffi.new("char[2][24]")

-- Writes v's decimal digits into digits[k], NUL-terminated (libpq reads a text parameter up
-- to its NUL), and points values[k] at them (no Lua string).
local function put_int(k, v)
  local buf, n = digits[k], 0
  buf[23] = 0
  repeat
    buf[22 - n] = 48 + v % 10
    v = (v - v % 10) / 10
    n = n + 1
  until v == 0
  values[k] = buf + 23 - n
  lens[k] = n
end

local function int_at(r, i, j)
  local p, len = C.PQgetvalue(r, i, j), C.PQgetlength(r, i, j)
  local v, k, neg = 0, 0, false
  if p[0] == 45 then neg, k = true, 1 end
  while k < len do v = v * 10 + (p[k] - 48) k = k + 1 end
  return neg and -v or v
end

local function expect(r, status, what)
  if C.PQresultStatus(r) ~= status then
    local msg = ffi.string(C.PQerrorMessage(raw))
    C.PQclear(r)
    error(what .. ": " .. msg, 2)
  end
  return r
end

-- The wait on the loop: the poll handle's callback completes the token of the coroutine that
-- waits for the raw connection's socket.
local await, token_of, complete = sched.await, sched.token, sched.complete
local watcher, waiting

local function on_readable()
  local t = waiting
  if t then
    waiting = nil
    complete(t)
  end
end

-- The next result of the raw connection, waiting on the loop while libpq has none complete.
local function next_result()
  while C.PQisBusy(raw) == 1 do
    waiting = token_of()
    await(waiting)
    if C.PQconsumeInput(raw) ~= 1 then error("raw: " .. ffi.string(C.PQerrorMessage(raw))) end
  end
  return C.PQgetResult(raw)
end

-- Sends what was queued (usually all at once on a loopback socket).
local function flush()
  local rc = C.PQflush(raw)
  while rc == 1 do rc = C.PQflush(raw) end
  if rc ~= 0 then error("raw: " .. ffi.string(C.PQerrorMessage(raw))) end
end

-- Runs a prepared statement on the loop (PQexecPrepared when BLOCKING): its one result.
local function exec_prepared(name, n)
  if BLOCKING then return C.PQexecPrepared(raw, name, n, values, lens, nil, 0) end
  assert(C.PQsendQueryPrepared(raw, name, n, values, lens, nil, 0) == 1)
  flush()
  local r = next_result()
  assert(next_result() == nil)
  return r
end

local function exec_text(sql)
  if BLOCKING then return C.PQexec(raw, sql) end
  assert(C.PQsendQueryParams(raw, sql, 0, nil, nil, nil, nil, 0) == 1)
  flush()
  local r = next_result()
  assert(next_result() == nil)
  return r
end

local function raw_first(id)
  put_int(0, id)
  local r = expect(exec_prepared(sel_name, 1), PGRES_TUPLES_OK, "select")
  local row
  if C.PQntuples(r) > 0 then
    row = { id = int_at(r, 0, 0), randomNumber = int_at(r, 0, 1) }
  end
  C.PQclear(r)
  return row
end

local function raw_update(v, id)
  put_int(0, v)
  put_int(1, id)
  local r = expect(exec_prepared(upd_name, 2), PGRES_COMMAND_OK, "update")
  local changes = tonumber(ffi.string(C.PQcmdTuples(r)))
  C.PQclear(r)
  return changes
end

-- BEGIN and the UPDATE in one pipeline (one round trip), then COMMIT: the adapter's shape.
local function raw_transaction(v, id)
  put_int(0, v)
  put_int(1, id)
  assert(C.PQenterPipelineMode(raw) == 1)
  assert(C.PQsendQueryParams(raw, "BEGIN", 0, nil, nil, nil, nil, 0) == 1)
  assert(C.PQsendQueryPrepared(raw, upd_name, 2, values, lens, nil, 0) == 1)
  assert(C.PQpipelineSync(raw) == 1)
  local get = C.PQgetResult
  if not BLOCKING then
    flush()
    get = next_result
  end
  C.PQclear(expect(get(raw), PGRES_COMMAND_OK, "begin"))
  assert(get(raw) == nil)
  local r = expect(get(raw), PGRES_COMMAND_OK, "update")
  local changes = tonumber(ffi.string(C.PQcmdTuples(r)))
  C.PQclear(r)
  assert(get(raw) == nil)
  C.PQclear(expect(get(raw), PGRES_PIPELINE_SYNC, "sync"))
  assert(C.PQexitPipelineMode(raw) == 1)
  C.PQclear(expect(exec_text("COMMIT"), PGRES_COMMAND_OK, "commit"))
  return changes
end

local sink -- luacheck: ignore 231 (keeps each result alive, as the app would)

local by_id, set_n

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
  { "Exec",
    function(n) for i = 1, n do sink = raw_update(i % 10000 + 1, i % ROWS + 1) end end,
    function(n) for i = 1, n do sink = db:exec(UPDATE, i % 10000 + 1, i % ROWS + 1) end end },
  { "ExecDiscard",
    function(n) for i = 1, n do raw_update(i % 10000 + 1, i % ROWS + 1) end end,
    function(n) for i = 1, n do db:exec(UPDATE, i % 10000 + 1, i % ROWS + 1) end end },
  { "ExecPrepared",
    function(n) for i = 1, n do sink = raw_update(i % 10000 + 1, i % ROWS + 1) end end,
    function(n) for i = 1, n do sink = set_n:exec(i % 10000 + 1, i % ROWS + 1) end end },
  { "Transaction",
    function(n) for i = 1, n do sink = raw_transaction(i % 10000 + 1, i % ROWS + 1) end end,
    function(n)
      local v, id
      local function body(tx) return tx:exec(UPDATE, v, id) end
      for i = 1, n do
        v, id = i % 10000 + 1, i % ROWS + 1
        sink = db:transaction(body)
      end
    end },
}

-- Both sides agree on what they read: the same row for an id, the same count of changes.
local function check_pairs()
  local a, b = raw_first(42), db:first(SELECT, 42)
  assert(a.id == b.id and a.randomNumber == b.randomNumber, "raw and zever read different rows")
  assert(by_id:first(42).randomNumber == a.randomNumber)
  assert(db:from("World"):where("id", 42):first().randomNumber == a.randomNumber)
  assert(raw_update(a.randomNumber, 42) == 1 and db:exec(UPDATE, a.randomNumber, 42).changes == 1)
  assert(set_n:exec(a.randomNumber, 42) == 1 and raw_transaction(a.randomNumber, 42) == 1)
  assert(db:transaction(function(tx) return tx:exec(UPDATE, a.randomNumber, 42) end).changes == 1)
end

local function main()
  db:exec('CREATE TABLE "World" (id integer PRIMARY KEY, "randomNumber" integer NOT NULL)')
  db:exec('INSERT INTO "World" SELECT i, (i * 7919) % 10000 + 1 FROM generate_series(1, ' ..
    ROWS .. ') AS i')
  raw = C.PQconnectdb(dsn)
  if C.PQstatus(raw) ~= CONNECTION_OK then
    error("raw connect failed: " .. ffi.string(C.PQerrorMessage(raw)))
  end
  C.PQclear(expect(C.PQexec(raw, "SET TimeZone = 'UTC'"), PGRES_COMMAND_OK, "set"))
  C.PQclear(expect(C.PQprepare(raw, sel_name, (SELECT:gsub("%?", "$1")), 1, nil),
    PGRES_COMMAND_OK, "prepare"))
  C.PQclear(expect(C.PQprepare(raw, upd_name, 'UPDATE "World" SET "randomNumber" = $1 WHERE id = $2',
    2, nil), PGRES_COMMAND_OK, "prepare"))
  if not BLOCKING then
    assert(C.PQsetnonblocking(raw, 1) == 0)
    watcher = assert(loop.poll(C.PQsocket(raw), "r", on_readable))
  end
  by_id = db:from("World"):where("id", db.param()):prepare()
  set_n = db:update("World"):set("randomNumber", db.param()):where("id", db.param()):prepare()
  check_pairs()

  require("bench.pairs").run(pairs_, { prefix = "DbOverheadPg", n = N, warm = 2000,
    filter = filter, mode = mode })
end

-- The benchmark runs in a coroutine (a request's shape); this plain caller drives the loop as
-- a worker does (run until nothing is active: an idle connection does not keep it running).
local done, failure = false, nil
sched.spawn(function()
  local ok, err = xpcall(main, debug.traceback)
  if not ok then failure = err end
  if watcher then watcher:stop() end -- the loop may end now
  done = true
end)
while not done do loop.run() end
sink = nil
if raw then C.PQfinish(raw) end
db:close()
srv:stop()
if failure then error(failure, 0) end
