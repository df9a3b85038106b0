-- zever.db: the database front-end. It opens a connection through an adapter
-- (lua/adapters/db/<scheme>.lua), offers raw SQL (exec/query/first), the query builder
-- (from/insert_into/update/delete_from) and transactions with savepoints.
--
--   local db = zever.db.open("sqlite:app.db")          -- or "sqlite::memory:"; | nil, err
--   db:exec(sql, ...)   -> { changes =, last_insert_id = }   raises on an SQL error
--   db:query(sql, ...)  -> { row, ... } (a json.array)       raises on an SQL error
--   db:first(sql, ...)  -> row | nil (no row)                raises on an SQL error
--   db:transaction(function(tx, a, b) ... end[, a, b]) -> fn's results; rollback + re-raise on error
--   db:try(fn[, code, ...]) -> fn(db)'s results | nil, err   the expected-failure form
--
-- A database error is never a value by accident: every statement (raw, builder, BEGIN/COMMIT)
-- raises a zever error (battery "db"; err.code from the adapter: "constraint", "busy",
-- "syntax", "schema", "io", "closed", ...; err.sql the statement's text, never the bound
-- values), so nil from first() means only "no row". Callers who expect a failure (a unique
-- email) ask for it with db:try, which returns nil, err for db errors (of the given codes, when
-- codes are given) and re-raises the rest; inside a transaction it runs fn in a savepoint, so
-- the failed statement leaves the transaction usable (PostgreSQL aborts it otherwise).
-- db.open returns nil, err (a bad DSN, a file it cannot open). A misuse (wrong argument type,
-- an unsupported dialect feature) raises a string.
--
-- An adapter module exports dialect, begin_sql, waits (true when its statements wait on the
-- loop: a coroutine yields in them) and open(target, opts) -> conn | nil, code, message;
-- conn has exec/query/first/each(sql, binds, n[, fn]) and close/is_open with the conventions
-- of zever.sqlite (l_sqlite.c); a failure may carry a 4th value, fields (sqlstate, constraint,
-- column, table), copied onto the error. A conn may have control(sql) -> true |
-- nil, code, message, fields: exec for the transaction statements (BEGIN, COMMIT, ROLLBACK,
-- the savepoints' texts), which it may keep prepared (sqlite); transaction uses it when
-- present. It may have hold(sql) -> boolean: keep sql's statement ready for later calls (a
-- prepared query asks it for its texts). A conn with a pool (postgres) also has
-- pin() -> a conn on one connection, and unpin(): a transaction runs on a pinned conn with a
-- state of its own, so coroutines sharing the db each get their own transaction. It may also
-- have listen/notify/copy_in/pool_stats/server_version, which db forwards (and refuses with
-- "unsupported" on an adapter without them). This file must not know any adapter's internals.
--
-- DSNs: "sqlite:app.db", "sqlite::memory:", "postgres://user:pw@host:5432/db" (also
-- "postgresql://"). Messages never contain a DSN's password (redact_dsn).

local expr = require "zever.db.expr"
local query = require "zever.db.query"
local release_shared = require("zever.db.render").release
local prepared = require "zever.db.prepared"
local errors = require "zever.errors"
local array_mt = require("zever.json").array_mt

local type, select, error, pcall, setmetatable, getmetatable, tostring =
  type, select, error, pcall, setmetatable, getmetatable, tostring
local unpack = unpack
local tnew = require "table.new"

local M = {}

M.null = expr.null
M.col, M.val, M.raw, M.fn = expr.col, expr.val, expr.raw, expr.fn
M.excluded, M.rollup, M.cube, M.exists = expr.excluded, expr.rollup, expr.cube, expr.exists
M.array = expr.array
-- The placeholder of a prepared builder query (q:prepare(), zever.db.prepared).
M.param = prepared.param

-- A db error: a zever error of battery "db" (fields: sql, ...).
function M.error(code, message, fields)
  return errors.new("db", code, message, fields)
end

-- The DSN with its password replaced by "***" (for messages and logs).
local function redact_dsn(dsn)
  return (tostring(dsn):gsub("^([%a][%w+.-]*://[^:/@]*):[^@/]*@", "%1:***@"))
end
M.redact_dsn = redact_dsn

-- A value that binds as a BLOB on sqlite and as bytea on postgres (strings bind as text).
M.blob = require("zever.sqlite").blob

local function is_error(v)
  return errors.is(v) and v.battery == "db"
end
M.is_error = is_error

local DB = {}
DB.__index = DB
M.DB = DB

-- Helpers reachable from an instance too: db.col("x"), db.fn.lower(...), db.null, ...
DB.null, DB.col, DB.val, DB.raw, DB.fn = M.null, M.col, M.val, M.raw, M.fn
DB.excluded, DB.rollup, DB.cube, DB.exists = M.excluded, M.rollup, M.cube, M.exists
DB.array = M.array
DB.param = M.param
DB.blob = M.blob

-- Raises the db error of a failed statement: its code, the adapter's message, the SQL text
-- (binds are never part of it). A try handle (DB:try_handle) returns nil, err instead.
local function db_error(code, message, text, fields)
  local f = text and { sql = text } or nil
  if fields then
    f = f or {}
    f.sqlstate, f.constraint, f.column, f.table, f.position =
      fields.sqlstate, fields.constraint, fields.column, fields.table, fields.position
  end
  return M.error(code or "error", message or "database error", f)
end

local function fail(self, code, message, text, fields)
  local e = db_error(code, message, text, fields)
  if self.soft then return nil, e end
  error(e, 0)
end

local function check_live(self)
  if self.finished then error("db: this transaction has finished; use the outer handle", 3) end
end

-- Parses "scheme:target": "sqlite:app.db", "sqlite::memory:", "sqlite:///abs/path.db",
-- "postgres://u:p@h/db" (target "//u:p@h/db"; "postgresql" is the same adapter).
local SCHEME_ALIAS = { postgresql = "postgres" }

local function parse_dsn(dsn)
  local scheme, target = dsn:match("^([%a][%w+.-]*):(.*)$")
  if not scheme then return nil end
  scheme = SCHEME_ALIAS[scheme] or scheme
  if scheme == "sqlite" and target:sub(1, 2) == "//" then target = target:sub(3) end
  return scheme, target
end
M.parse_dsn = parse_dsn

-- Opens a database: db | nil, err. opts go to the adapter (sqlite: busy_timeout, statements,
-- wal, foreign_keys).
function M.open(dsn, opts)
  if type(dsn) ~= "string" then error("db.open: expects a DSN string like 'sqlite:app.db'", 2) end
  if opts ~= nil and type(opts) ~= "table" then error("db.open: opts must be a table", 2) end
  local scheme, target = parse_dsn(dsn)
  local shown = redact_dsn(dsn)
  if not scheme then return nil, M.error("invalid", "bad DSN '" .. shown .. "' (expected scheme:target)") end
  if target == "" then return nil, M.error("invalid", "DSN '" .. shown .. "' names no database") end
  if not scheme:match("^[%w_]+$") then
    return nil, M.error("invalid", "no database adapter for '" .. scheme .. "'")
  end
  local ok, adapter = pcall(require, "adapters.db." .. scheme)
  if not ok then
    return nil, M.error("unavailable", "no database adapter for '" .. scheme .. "': " .. tostring(adapter))
  end
  local conn, code, message = adapter.open(target, opts)
  if not conn then return nil, M.error(code, message and redact_dsn(message)) end
  return setmetatable({
    conn = conn,
    adapter = adapter,
    dialect = adapter.dialect,
    dsn = dsn,
    state = { depth = 0 },
    -- Present (false) so that every call's `self.finished` check finds it in the handle's own
    -- table instead of missing it there and in DB too.
    finished = false,
  }, DB)
end

-- The raw API's arguments: either values (db:exec(sql, a, b)) or one list (db:exec(sql, {a, b})).
--
-- Up to SCRATCH values given one by one go to the adapter in one reused list instead of a new
-- `{ ... }`: a call then allocates no Lua heap of its own, and LuaJIT compiles it (`{ ... }` is
-- TSETM, which LuaJIT 2.1 compiles with guards on the table's shape that fail for 4 values and
-- more: every call left the trace, and the side traces grown on those exits ran out, ~13 KB a
-- call). The values are read as a fixed number of locals, never as a vararg list, so the trace
-- does not depend on how many there are.
--
-- The list is taken for the adapter call only and emptied right after (it must not keep values
-- alive). A call that finds it taken (the adapter re-entered: a __gc running db calls) builds
-- its own list, as does an adapter raising midway (out of memory), which leaves it taken: later
-- calls are then as slow as before, never wrong.
local SCRATCH = 8
local scratch = tnew(SCRATCH, 0)
local scratch_taken = false

local function take(a1, a2, a3, a4, a5, a6, a7, a8)
  local s = scratch
  scratch_taken = true
  s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8] = a1, a2, a3, a4, a5, a6, a7, a8
  return s
end

local function give_back()
  local s = scratch
  s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8] = nil, nil, nil, nil, nil, nil, nil, nil
  scratch_taken = false
end

-- The list of values to bind, for more than SCRATCH values or when the scratch list is taken.
local function plain_list(a)
  local mt = getmetatable(a)
  return mt == nil or mt == array_mt
end

local function args(...)
  local n = select("#", ...)
  if n == 0 then return nil, 0 end
  if n == 1 then
    local a = ...
    if type(a) == "table" and plain_list(a) then return a, a.n or #a end
  end
  return { ... }, n
end

local function check_sql(s, fname)
  if type(s) ~= "string" then error(fname .. ": expects an SQL string", 3) end
end

-- True when the values a call was given one by one can go through the scratch list: at most
-- SCRATCH of them (at least one: the caller checks), and not one plain table (the list form).
local function by_scratch(n, a1)
  if n > SCRATCH or scratch_taken then return false end
  return n > 1 or type(a1) ~= "table" or not plain_list(a1)
end

-- The results of the adapter's calls; *_values run them with the scratch list. They are not
-- vararg functions: LuaJIT cannot compile the return of a vararg function to the frame below
-- a trace's start (the trace stitched after the adapter's C call starts there), so DB:exec and
-- friends only tail-call them.
local function exec_result(self, text, changes, id, message, fields)
  if not changes then return fail(self, id, message, text, fields) end
  -- Constant values first: precompiled bytecode keeps the two slots (hot_templates_spec).
  local r = { changes = 0, last_insert_id = false }
  r.changes, r.last_insert_id = changes, id
  return r
end

-- Rows are a json.array: a query with no rows encodes as [].
local function query_result(self, text, rows, code, message, fields)
  if not rows then return fail(self, code, message, text, fields) end
  if getmetatable(rows) == nil then setmetatable(rows, array_mt) end
  return rows
end

local function first_result(self, text, row, code, message, fields)
  if row == nil and code then return fail(self, code, message, text, fields) end
  return row
end

local function exec_values(self, text, n, a1, a2, a3, a4, a5, a6, a7, a8)
  if self.finished then check_live(self) end
  local changes, id, message, fields = self.conn:exec(text, take(a1, a2, a3, a4, a5, a6, a7, a8), n)
  give_back()
  return exec_result(self, text, changes, id, message, fields)
end

-- The checkers of a prepared query's adapter call (zever.db.prepared): they put its bind list
-- back (restore) before raising or returning, like *_values with the scratch list.
local restore = prepared.restore
prepared.results.first = function(self, text, own, f, row, code, message, fields)
  restore(f, own)
  return first_result(self, text, row, code, message, fields)
end
prepared.results.query = function(self, text, own, f, rows, code, message, fields)
  restore(f, own)
  return query_result(self, text, rows, code, message, fields)
end
prepared.results.exec = function(self, text, own, f, changes, id, message, fields)
  restore(f, own)
  if not changes then return fail(self, id, message, text, fields) end
  return changes
end

function DB:exec(text, ...)
  check_sql(text, "exec")
  local n = select("#", ...)
  local a1, a2, a3, a4, a5, a6, a7, a8 = ...
  if n == 0 then return self:_exec(text, nil, 0) end
  if not by_scratch(n, a1) then return self:_exec(text, args(...)) end
  return exec_values(self, text, n, a1, a2, a3, a4, a5, a6, a7, a8)
end

local function query_values(self, text, n, a1, a2, a3, a4, a5, a6, a7, a8)
  if self.finished then check_live(self) end
  local rows, code, message, fields = self.conn:query(text, take(a1, a2, a3, a4, a5, a6, a7, a8), n)
  give_back()
  return query_result(self, text, rows, code, message, fields)
end

function DB:query(text, ...)
  check_sql(text, "query")
  local n = select("#", ...)
  local a1, a2, a3, a4, a5, a6, a7, a8 = ...
  if n == 0 then return self:_query(text, nil, 0) end
  if not by_scratch(n, a1) then return self:_query(text, args(...)) end
  return query_values(self, text, n, a1, a2, a3, a4, a5, a6, a7, a8)
end

local function first_values(self, text, n, a1, a2, a3, a4, a5, a6, a7, a8)
  if self.finished then check_live(self) end
  local row, code, message, fields = self.conn:first(text, take(a1, a2, a3, a4, a5, a6, a7, a8), n)
  give_back()
  return first_result(self, text, row, code, message, fields)
end

function DB:first(text, ...)
  check_sql(text, "first")
  local n = select("#", ...)
  local a1, a2, a3, a4, a5, a6, a7, a8 = ...
  if n == 0 then return self:_first(text, nil, 0) end
  if not by_scratch(n, a1) then return self:_first(text, args(...)) end
  return first_values(self, text, n, a1, a2, a3, a4, a5, a6, a7, a8)
end

-- The calls every path ends in (the builder uses them with rendered SQL). _changes is exec
-- returning the number of changed rows, without exec's result table (update/delete).
function DB:_changes(text, binds, n)
  if self.finished then check_live(self) end
  local changes, id, message, fields = self.conn:exec(text, binds, n)
  if not changes then return fail(self, id, message, text, fields) end
  return changes
end

function DB:_exec(text, binds, n)
  if self.finished then check_live(self) end
  local changes, id, message, fields = self.conn:exec(text, binds, n)
  return exec_result(self, text, changes, id, message, fields)
end

function DB:_query(text, binds, n)
  if self.finished then check_live(self) end
  local rows, code, message, fields = self.conn:query(text, binds, n)
  return query_result(self, text, rows, code, message, fields)
end

function DB:_first(text, binds, n)
  if self.finished then check_live(self) end
  local row, code, message, fields = self.conn:first(text, binds, n)
  return first_result(self, text, row, code, message, fields)
end

-- _first and _query for a builder's render_shared (zever.db.render): binds may be the shared
-- list (shared true), given back before anything can raise. call: the adapter's method name,
-- result: its checker (first_result, query_result). The methods tail-call it, so check_live's
-- error still names their caller.
local function run_shared(self, call, result, text, binds, n, shared)
  if self.finished then
    if shared then release_shared(n) end
    check_live(self)
  end
  local conn = self.conn
  local r, code, message, fields = conn[call](conn, text, binds, n)
  if shared then release_shared(n) end
  return result(self, text, r, code, message, fields)
end

function DB:_first_shared(text, binds, n, shared)
  return run_shared(self, "first", first_result, text, binds, n, shared)
end

function DB:_query_shared(text, binds, n, shared)
  return run_shared(self, "query", query_result, text, binds, n, shared)
end

function DB:_each(text, binds, fn)
  if self.finished then check_live(self) end
  local count, code, message, fields = self.conn:each(text, binds, nil, fn)
  if not count then return fail(self, code, message, text, fields) end
  return count
end

-- The query builder.
function DB:from(t)
  if t == nil then error("from: expects a table name or a subquery", 2) end
  return query.select(self, t)
end

-- A select without FROM (db:select(db.raw("1"))), or with from() added later.
function DB:select(...)
  return query.select(self, nil):select(...)
end

function DB:insert_into(t)
  return query.insert(self, t)
end

function DB:update(t)
  return query.update(self, t)
end

function DB:delete_from(t)
  return query.delete(self, t)
end

local function pack(...)
  return { n = select("#", ...), ... }
end

-- The statements of the savepoint that opens depth (2, 3, ...): made once per depth.
local savepoints = {}
local function savepoint(depth)
  local sp = savepoints[depth]
  if not sp then
    local name = "zever_sp_" .. depth
    sp = { "SAVEPOINT " .. name, "RELEASE SAVEPOINT " .. name, "ROLLBACK TO SAVEPOINT " .. name }
    savepoints[depth] = sp
  end
  return sp
end

-- The handle a transaction hands to fn. A handle keeps one per depth it opens and reuses it
-- once its transaction has finished (with its state, when the transaction pinned conn: a pool's
-- connection, handed out again for the next pin of the same connection): a transaction then
-- allocates nothing of its own. A finished handle raises when used, until the next transaction
-- at that depth from the same handle takes it again.
local function tx_handle(self, conn, st, depth)
  local txs = rawget(self, "_txs")
  local tx = txs and txs[depth]
  if tx and tx.finished and tx.conn == conn and tx.state == st then
    tx.finished = false
    return tx
  end
  tx = setmetatable({
    conn = conn, adapter = self.adapter, dialect = self.dialect, dsn = self.dsn, state = st,
    soft = self.soft, depth = depth, finished = false,
  }, DB)
  if not txs then
    txs = {}
    rawset(self, "_txs", txs)
  end
  txs[depth] = tx
  return tx
end

-- The state of a transaction on a pinned conn: its last one's when that has finished on the
-- same conn (depth 0 again), else a new one.
local function pinned_state(self, pinned)
  local txs = rawget(self, "_txs")
  local tx = txs and txs[1]
  if tx and tx.finished and tx.conn == pinned then
    local st = tx.state
    st.depth = 0
    return st
  end
  return { depth = 0 }
end

-- fn's results as a count and up to three values, or the count and a list when there are more
-- (the only case that allocates). Not returned through a vararg frame: see run_tx.
local function fn_results(...)
  local n = select("#", ...)
  if n <= 3 then
    local a, b, c = ...
    return n, a, b, c
  end
  return n, { n = n, ... }
end

local running = coroutine.running

-- The body of a transaction, run by pcall: fn, then COMMIT (RELEASE for a savepoint), then the
-- bookkeeping of a committed transaction. Returns n, r1, r2, r3 (fn's results, see fn_results),
-- or nil, code, message, fields when the commit failed (the caller rolls back).
--
-- Why it has this shape (LuaJIT): on an adapter whose statements wait on the loop (waits), the
-- code after each wait runs in a trace that starts there, below pcall's frame. Such a trace
-- cannot return into pcall's frame ("NYI: return to lower frame") nor read the varargs of a
-- frame below its start ("NYI: bytecode 71"): it aborts, and everything from the wait on ran
-- interpreted. So the commit is issued from inside pcall (the trace after fn's last statement
-- continues into it), fn's results pass as fixed values, and after the commit's wait one call
-- of a function LuaJIT does not compile (coroutine.running: a "stitch") ends that trace before
-- the return into pcall, which is then the only part left to the interpreter.
local function run_tx(fn, tx, conn, control, commit, st, depth, pinned, waits, a1, a2, a3)
  local n, r1, r2, r3 = fn_results(fn(tx, a1, a2, a3))
  tx.finished = true
  local done, code, message, fields = control(conn, commit)
  if not done then return nil, code, message, fields end
  st.depth = depth
  if pinned then pinned:unpin() end
  if waits then running() end
  return n, r1, r2, r3
end

-- Runs fn(tx, ...) in a transaction (a savepoint when one is already open): commits when fn
-- returns and returns its results; on an error, rolls back and re-raises it unchanged. A
-- failing BEGIN or COMMIT raises a db error (after a rollback). tx has the API of db. Up to
-- three arguments after fn are passed on (fn(tx, a1, a2, a3)), so a request can hand a function
-- defined once (a module's) its values instead of making a closure per call, which LuaJIT does
-- not compile (FNEW). Three named parameters, not `...`: a vararg call here is NYI and would
-- abort the caller's trace (spec/host/hotpath_spec.lua); a fourth raises.
function DB:transaction(fn, a1, a2, a3, a4)
  if type(fn) ~= "function" then error("transaction: expects a function", 2) end
  if a4 ~= nil then error("transaction: at most three arguments after fn (pass a table)", 2) end
  check_live(self)
  local st = self.state
  local depth = st.depth
  local conn = self.conn
  local adapter = self.adapter
  local pinned
  if depth == 0 and conn.pin then
    -- A pool: the transaction keeps one connection, and has a state of its own.
    local code, message, fields
    pinned, code, message, fields = conn:pin()
    if not pinned then return fail(self, code, message, adapter.begin_sql or "BEGIN", fields) end
    conn, st = pinned, pinned_state(self, pinned)
  end
  local begin, commit, rollback, release
  if depth == 0 then
    begin, commit, rollback = adapter.begin_sql or "BEGIN", "COMMIT", "ROLLBACK"
  else
    local sp = savepoint(depth + 1)
    begin, commit, rollback, release = sp[1], sp[2], sp[3], sp[2]
  end
  local control = conn.control or conn.exec
  local ok, code, message, fields = control(conn, begin)
  if not ok then
    if pinned then pinned:unpin() end
    return fail(self, code, message, begin, fields)
  end
  st.depth = depth + 1
  local tx = tx_handle(self, conn, st, depth + 1)
  local r1, r2, r3
  ok, code, r1, r2, r3 = pcall(run_tx, fn, tx, conn, control, commit, st, depth, pinned,
    adapter.waits, a1, a2, a3)
  if ok and code then -- committed: code is the count of fn's results
    if code == 1 then return r1 end
    if code == 0 then return end
    if code == 2 then return r1, r2 end
    if code == 3 then return r1, r2, r3 end
    return unpack(r1, 1, code)
  end
  -- fn raised (code: its error), or the commit failed (r1, r2, r3: code, message, fields)
  tx.finished = true
  control(conn, rollback)
  if release then control(conn, release) end
  st.depth = depth
  if pinned then pinned:unpin() end
  if ok then return fail(self, r1, r2, commit, r3) end
  error(code, 0)
end

-- db:pipeline(function(p) p:exec(sql, ...) p:query(sql, ...) p:first(sql, ...) end[, opts])
-- collects the statements fn queues, then runs them: on PostgreSQL in one round trip (pipeline
-- mode), elsewhere one after the other. Returns results: results[i] is the i-th call's (exec:
-- { changes = }, query: rows, first: row or nil), results.n the count. Default (atomic): one
-- transaction (within the current one, if any): the first failing statement raises its db error
-- (err.index = its place) and nothing of the pipeline stays. opts.atomic = false: each
-- statement on its own (outside a transaction, each commits), a failure skips nothing else;
-- returns results, errs, errs[i] the db error of each failed statement (nil when none).
local Pipe = {}
Pipe.__index = Pipe
local function queue_stmt(kind)
  return function(p, text, ...)
    check_sql(text, kind)
    local n = select("#", ...)
    local binds
    if n == 1 and type((...)) == "table" and plain_list((...)) then
      binds = ...
      n = binds.n or #binds
    elseif n > 0 then
      binds = { n = n, ... }
    end
    p.count = p.count + 1
    p[p.count] = { text, binds, n, kind }
  end
end
Pipe.exec, Pipe.query, Pipe.first = queue_stmt("exec"), queue_stmt("query"), queue_stmt("first")

local function pipe_error(st, i, code, message, fields)
  local e = db_error(code, message, st[1], fields)
  e.index = i
  return e
end

local function pipe_result(kind, r)
  if kind == "exec" then return { changes = r } end
  if kind == "query" and getmetatable(r) == nil then setmetatable(r, array_mt) end
  return r
end

function DB:pipeline(fn, opts)
  if type(fn) ~= "function" then error("pipeline: expects a function", 2) end
  if opts ~= nil and type(opts) ~= "table" then error("pipeline: opts must be a table", 2) end
  check_live(self)
  local atomic = not opts or opts.atomic ~= false
  local p = setmetatable({ count = 0 }, Pipe)
  fn(p)
  local count = p.count
  if count == 0 then return { n = 0 } end
  local conn = self.conn
  if conn.pipeline then
    -- Atomic on a pool: its own connection; one segment is one implicit transaction.
    local results, errs, message = conn:pipeline(p, count, not atomic)
    if not results then return fail(self, errs, message, "pipeline") end
    local out, outerr = { n = count }, nil
    for i = 1, count do
      local e = errs and errs[i]
      if e then
        if atomic and e[1] ~= "aborted" then
          local err = pipe_error(p[i], i, e[1], e[2], e[3])
          if self.soft then return nil, err end
          error(err, 0)
        end
        outerr = outerr or {}
        outerr[i] = pipe_error(p[i], i, e[1], e[2], e[3])
      else
        out[i] = pipe_result(p[i][4], results[i])
      end
    end
    return out, outerr
  end
  -- No pipeline mode (SQLite): the same outcomes, one statement at a time.
  local run = function(h, st)
    if st[4] == "exec" then return h:_exec(st[1], st[2], st[3]) end
    if st[4] == "query" then return h:_query(st[1], st[2], st[3]) end
    return h:_first(st[1], st[2], st[3])
  end
  local out = { n = count }
  if atomic then
    self:transaction(function(tx)
      for i = 1, count do
        local ok, r = pcall(run, tx, p[i])
        if not ok then
          if is_error(r) then r.index = i end
          error(r, 0)
        end
        out[i] = r
      end
    end)
    return out
  end
  local errs
  for i = 1, count do
    local ok, r = pcall(run, self, p[i])
    if ok then out[i] = r
    elseif is_error(r) then
      errs = errs or {}
      r.index = i
      errs[i] = r
    else
      error(r, 0)
    end
  end
  return out, errs
end

-- Runs fn(db) and returns its results; a db error it raises comes back as nil, err instead (only
-- one of the given codes, when codes are given: db:try(fn, "constraint")), any other error is
-- re-raised. Inside a transaction fn runs in a savepoint, rolled back when it fails.
function DB:try(fn, ...)
  if type(fn) ~= "function" then error("try: expects a function", 2) end
  local res
  if self.state.depth > 0 then
    res = pack(pcall(self.transaction, self, fn))
  else
    res = pack(pcall(fn, self))
  end
  if res[1] then return unpack(res, 2, res.n) end
  local e = res[2]
  if is_error(e) then
    local ncodes = select("#", ...)
    if ncodes == 0 then return nil, e end
    for i = 1, ncodes do
      if e.code == select(i, ...) then return nil, e end
    end
  end
  error(e, 0)
end

-- True inside a transaction (on a tx handle or on the db while one is open).
function DB:in_transaction()
  return self.state.depth > 0
end

local function handle(self, soft)
  local h = {}
  for k, v in pairs(self) do h[k] = v end
  h._txs = nil -- its transaction handles are its own (tx_handle)
  h.soft = soft
  return setmetatable(h, DB)
end

-- A handle on the same connection whose failing statements raise (every handle does, unless
-- made by try_handle; migrations ask for it by name).
function DB:strict_handle()
  return handle(self, nil)
end

-- A handle on the same connection whose failing statements return nil, err instead of raising:
-- for the db adapters of batteries whose contract reports a failing backend as a value
-- (cache, queue, idempotency, search, ... answer "unavailable"). Applications use db:try.
function DB:try_handle()
  return handle(self, true)
end

-- Extras of a server database (postgres): LISTEN/NOTIFY, COPY, pool state, version. On an
-- adapter without them they raise a db error "unsupported".
local function extra(self, name)
  local f = self.conn[name]
  if not f then
    error(M.error("unsupported", "db: unsupported on " .. tostring(self.dialect), { operation = name }), 0)
  end
  return f
end

local function checked(self, text, r1, code, message, fields)
  if r1 == nil and code then return fail(self, code, message, text, fields) end
  return r1
end

-- db:listen(channel, fn(payload, channel)) -> sub (sub:close()); fn runs in a coroutine.
function DB:listen(channel, fn)
  if type(channel) ~= "string" or channel == "" then error("listen: expects a channel name", 2) end
  if type(fn) ~= "function" then error("listen: expects a function", 2) end
  return checked(self, "LISTEN", extra(self, "listen")(self.conn, channel, fn))
end

-- db:notify(channel[, payload]) -> true
function DB:notify(channel, payload)
  if type(channel) ~= "string" or channel == "" then error("notify: expects a channel name", 2) end
  if payload ~= nil and type(payload) ~= "string" then error("notify: payload must be a string", 2) end
  local f = extra(self, "notify")
  local row, code, message, fields = f(self.conn, channel, payload)
  if row == nil and code then return fail(self, code, message, "NOTIFY", fields) end
  return true
end

-- db:copy_in(table, columns, rows) -> number of rows loaded (COPY FROM STDIN).
function DB:copy_in(tbl, columns, rows)
  if type(tbl) ~= "string" or tbl == "" then error("copy_in: expects a table name", 2) end
  if type(columns) ~= "table" or #columns == 0 then error("copy_in: expects a list of columns", 2) end
  if type(rows) ~= "table" then error("copy_in: expects a list of rows", 2) end
  for i = 1, #rows do
    if type(rows[i]) ~= "table" then error("copy_in: row " .. i .. " is not a list", 2) end
  end
  for i = 1, #columns do
    if type(columns[i]) ~= "string" then error("copy_in: column " .. i .. " is not a name", 2) end
  end
  return checked(self, "COPY " .. tbl, extra(self, "copy_in")(self.conn, tbl, columns, rows))
end

-- db:pool_stats() -> { size, open, idle, busy, waiting, connects, connect_failures, ... }
function DB:pool_stats()
  return extra(self, "pool_stats")(self.conn)
end

-- db:server_version() -> 150004, "15.4"
function DB:server_version()
  local v, text, message = extra(self, "server_version")(self.conn)
  if v == nil then return fail(self, text, message, nil) end
  return v, text
end

function DB:close()
  if self.depth then error("close: close the database, not a transaction handle", 2) end
  self.conn:close()
  return true
end

function DB:is_open()
  return self.conn:is_open()
end

return M
