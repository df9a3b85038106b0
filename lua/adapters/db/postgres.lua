-- adapters.db.postgres: the PostgreSQL adapter of zever.db, over the zever.pg binding (host/pg/,
-- libpq in non-blocking mode on the worker's event loop). It speaks the conn contract of
-- adapters/db/sqlite.lua: exec/query/first/each(sql, binds, n[, fn]) returning
-- nil, code, message, fields on failure (fields: sqlstate, constraint, column, table).
--
--   conn (a pool, one per zever.db.open: the container opens one per worker per DSN)
--   +-------------------------------------------------------------+
--   | idle: [raw, raw]   open: 3 of pool_size   waiters: FIFO     |
--   | listener: raw (LISTEN only, re-LISTENs after a reconnect)   |
--   +-------------------------------------------------------------+
--   raw = one libpq connection + its prepared statements (an LRU keyed by SQL text)
--
-- A statement acquires a raw connection (waiting in FIFO order when all are busy), sends
-- (yielding when called from a coroutine, pumping the loop otherwise: zever.sched's one way to
-- wait), decodes the text result by type OID through the FFI (pg_ffi.h) and gives the
-- connection back. conn:pin() keeps one raw connection for a transaction; unpin() returns it.
-- A connection that broke is dropped, and the next acquire opens a new one, after a backoff
-- when the last connect failed. Statements are never retried behind the caller's back, except
-- a cached prepared statement the server forgot (26000) or whose plan changed (0A000), which is
-- prepared again once outside a transaction.
--
-- Three files: this one (raw connections, the pool, the conn, COPY, LISTEN/NOTIFY, open),
-- postgres_sql.lua (the `?` rewrite and the binds: what is sent) and postgres_decode.lua (rows
-- decoded by OID and server errors mapped to codes: what comes back).
--
-- It must not render SQL (zever.sql does, for the "postgres" dialect named here) nor require
-- its front-end. It must not keep a raw connection when a call raises: binds are checked before
-- one is acquired.

local ffi = require "ffi"
local pg = require "zever.pg"
local sched = require "zever.sched"
local loop = require "zever.loop"
local sys = require "zever.sys"
local tnew = require "table.new"

require "zever.cdef.pg"
require "zever.cdef.sys"

local NULL = pg.null
local type, setmetatable, error, pairs, ipairs, rawequal =
  type, setmetatable, error, pairs, ipairs, rawequal
local sub, format, gsub, concat, find = string.sub, string.format, string.gsub, table.concat,
  string.find
local await, token_of, complete = sched.await, sched.token, sched.complete
local C = ffi.C
local now = C.zv_sys_clock -- sys.now's clock, read without a classic call
local pg_ptr, pgconn_ptr = ffi.typeof("zv_pg_t *"), ffi.typeof("zv_pgconn_t *")
local ffi_string = ffi.string
local E_INVAL = sys.E.INVAL

local M = {
  dialect = "postgres",
  begin_sql = "BEGIN",
  null = NULL,
}

local sqltext = require "adapters.db.postgres_sql"
local pgdecode = require "adapters.db.postgres_decode"
local rewrite, check_binds, scalar_text = sqltext.rewrite, sqltext.check_binds, sqltext.scalar_text
local rows_of, changes_of, server_error = pgdecode.rows_of, pgdecode.changes_of,
  pgdecode.server_error
M.rewrite, M.blob_bytes, M.code_of = sqltext.rewrite_uncached, sqltext.blob_bytes,
  pgdecode.code_of

-- --- raw connections ----------------------------------------------------------------------

local Raw = {}
Raw.__index = Raw

-- The text parameters of a statement sent through the FFI (zv_pgconn_send): one set of buffers
-- for the worker, filled before each send and read by libpq (which copies them) during it.
-- Strings are passed as they are (the binds table keeps them alive), integers written as
-- digits into their slot of DIGITS, other numbers formatted into a string kept in ANCHOR until
-- the send returned. Statements with more binds go through conn:send (the classic API).
local MAX_FFI_BINDS = 16
local VALUES = ffi.new("const char *[?]", MAX_FFI_BINDS)
local LENS = ffi.new("int[?]", MAX_FFI_BINDS)
local DIGITS = ffi.new("char[?]", MAX_FFI_BINDS * 24)
local ANCHOR = {} -- luacheck: ignore 241 (holds each formatted bind until the send returned)
-- pg_ffi.h's ZV_PG_SEND_SIMPLE, ZV_PG_SEND_PARAMS, ZV_PG_SEND_PREPARED
local SEND_SIMPLE, SEND_PARAMS, SEND_PREPARED = 0, 1, 3
local FFI_MODE = { simple = SEND_SIMPLE, params = SEND_PARAMS, prepared = SEND_PREPARED }
local TWO53 = 2 ^ 53

-- Puts bind i (0-based) of a checked list (check_binds: a string, number, boolean, nil or
-- NULL) into VALUES/LENS, as l_pg.c's read_binds does for conn:send.
local function put_bind(i, v)
  local t = type(v)
  if t == "string" then
    VALUES[i], LENS[i] = v, #v
  elseif t == "number" then
    if v % 1 == 0 and v > -TWO53 and v < TWO53 then
      local neg = v < 0
      if neg then v = -v end
      local base = i * 24
      local k = base + 23
      DIGITS[k] = 0
      repeat
        k = k - 1
        local d = v % 10
        DIGITS[k] = 48 + d
        v = (v - d) / 10
      until v == 0
      if neg then k = k - 1 DIGITS[k] = 45 end
      VALUES[i], LENS[i] = DIGITS + k, base + 23 - k
    else
      local s = scalar_text(v)
      ANCHOR[i + 1] = s
      VALUES[i], LENS[i] = s, #s
    end
  elseif t == "boolean" then
    VALUES[i], LENS[i] = v and "t" or "f", 1
  else -- nil or NULL
    VALUES[i], LENS[i] = nil, 0
  end
end

-- Sends one statement through the FFI and makes token its waiter: true | nil, code, message.
local function send_ffi(raw, mode, text, binds, n, token)
  for i = 1, n do put_bind(i - 1, binds[i]) end
  local rc = C.zv_pgconn_send(raw.cp, mode, text, n, VALUES, LENS)
  for i = 1, n do ANCHOR[i] = nil end
  if rc ~= 0 then
    if rc == E_INVAL then error("pg: a statement is already running on this connection", 0) end
    return nil, "unavailable", ffi_string(C.zv_pgconn_errmsg(raw.cp))
  end
  raw.slot[1] = token
  return true
end

-- Runs one operation on raw and waits: true | nil, code, message, fields.
local function run(raw, mode, sql, binds, n, name)
  local token = token_of()
  local ok, code, message
  local fm = FFI_MODE[mode]
  if fm and n <= MAX_FFI_BINDS then
    ok, code, message = send_ffi(raw, fm, fm == SEND_PREPARED and name or sql, binds, n, token)
  else
    ok, code, message = raw.h:send(token, mode, sql, binds, n, name)
  end
  if not ok then
    raw.broken = true
    return nil, code, message
  end
  ok, code, message = await(token)
  if ok then return true end
  if code == "server" then
    local fields
    code, message, fields = server_error(raw.h)
    -- An administrator shutdown or a terminated backend (57P01...): the session is gone.
    if code == "unavailable" then raw.broken = true end
    return nil, code, message, fields
  end
  raw.broken = true
  return nil, code, message
end

-- The LRU of prepared statements: stmts[sql] = node {sql, name, prev, next}; head is newest.
local function lru_touch(raw, node)
  if raw.head == node then return end
  local p, nx = node.prev, node.next
  if p then p.next = nx end
  if nx then nx.prev = p end
  if raw.tail == node then raw.tail = p end
  node.prev, node.next = nil, raw.head
  if raw.head then raw.head.prev = node end
  raw.head = node
  if not raw.tail then raw.tail = node end
end

local function lru_remove(raw, node)
  local p, nx = node.prev, node.next
  if p then p.next = nx else raw.head = nx end
  if nx then nx.prev = p else raw.tail = p end
  raw.stmts[node.sql] = nil
  raw.nstmts = raw.nstmts - 1
end

-- --- pipelines ----------------------------------------------------------------------------
--
-- Pipeline mode sends several operations in one write and reads their results in one go: one
-- round trip (l_pg.c's conn:pipeline). The adapter uses it where a statement needed more than
-- one: a statement not yet prepared on the connection goes as [prepare, execute] (plus the
-- DEALLOCATE of the statement the LRU drops), and a transaction's BEGIN is held back
-- (raw.pending) and sent with the transaction's first statement, so a transaction of k
-- statements costs k + 1 round trips instead of k + 2 (an empty one none). Conn:pipeline is the
-- same for a list of statements (zever.db's db:pipeline).

-- Runs ops (n of them) on raw in one round trip: true | nil, code, message (the connection
-- failed; each op's own outcome is op_error's).
local function run_pipeline(raw, ops, n)
  local token = token_of()
  local ok, code, message = raw.h:pipeline(token, ops, n)
  if not ok then
    raw.broken = true
    return nil, code, message
  end
  ok, code, message = await(token)
  if ok then return true end
  raw.broken = true
  return nil, code, message
end

-- The failure of the finished pipeline's op i: code, message, fields | nil when it succeeded.
-- An op the server skipped (an earlier op of its segment failed) is "aborted", SQLSTATE 25P02
-- (what PostgreSQL itself says of a statement sent into a failed transaction).
local ABORTED = "not run: an earlier statement of its pipeline failed"
local PIPE_OK, PIPE_ABORTED = 0, 2 -- pg.h's ZV_PG_OK, ZV_PG_ABORTED
local function op_error(raw, i)
  local p = raw.pg
  local st = p and C.zv_pg_pipeline_status(p, i - 1) or PIPE_ABORTED
  if st == PIPE_OK then return nil end
  if st == PIPE_ABORTED then return "aborted", ABORTED, { sqlstate = "25P02" } end
  local code, message, fields = server_error(raw.h, i)
  if code == "unavailable" then raw.broken = true end
  return code, message, fields
end

-- Adds to ops (count k) what runs sql with binds: its prepare first when the statement is new
-- on raw (and the LRU has room or frees it), else the cached name. Returns k, the op that
-- executes, the node to register when its prepare succeeds (fresh: the ones of this
-- pipeline, by SQL text), and the statement's node (nil: unprepared).
local function add_statement(raw, ops, k, sql, binds, n, fresh)
  if n == 0 or raw.max_stmts <= 0 then
    k = k + 1
    ops[k] = { "params", sql, binds, n }
    return k, k, nil, nil
  end
  local node = raw.stmts[sql] or fresh[sql]
  local new
  if node then
    if raw.stmts[sql] then lru_touch(raw, node) end
  else
    if raw.nstmts >= raw.max_stmts and raw.tail then
      local old = raw.tail
      lru_remove(raw, old)
      k = k + 1
      -- its own segment: a statement the server forgot must not fail the new one
      ops[k] = { "params", "DEALLOCATE " .. old.name, nil, 0, nil, true, dealloc = true }
    end
    raw.seq = raw.seq + 1
    node = { sql = sql, name = "zv" .. raw.seq }
    k = k + 1
    ops[k] = { "prepare", sql, nil, 0, node.name }
    new = k
    fresh[sql] = node
  end
  k = k + 1
  ops[k] = { "prepared", sql, binds, n, node.name }
  return k, k, new and { node = node, op = new }, node
end

-- Registers the statements whose prepare went through (a prepared statement outlives a
-- rolled-back transaction: the server keeps it).
local function register(raw, news)
  for i = 1, #news do
    local nw = news[i]
    if raw.h:status(nw.op) == "ok" and not raw.stmts[nw.node.sql] then
      raw.stmts[nw.node.sql] = nw.node
      raw.nstmts = raw.nstmts + 1
      lru_touch(raw, nw.node)
    end
  end
end

-- Runs sql (already rewritten) with binds on raw: true, op, node | nil, code, message, fields;
-- op is the pipeline op holding the result (nil: the connection's last result), node the
-- prepared statement's LRU entry (nil when it ran unprepared), where the decode keeps the
-- result's shape.
local function execute(raw, sql, binds, n)
  raw.pool.statements = raw.pool.statements + 1
  local pre = raw.pending
  if not pre then
    if n == 0 then return run(raw, "simple", sql, nil, 0) end
    if raw.max_stmts <= 0 then return run(raw, "params", sql, binds, n) end
    local node = raw.stmts[sql]
    if node then
      lru_touch(raw, node)
      local ok, code, message, fields = run(raw, "prepared", sql, binds, n, node.name)
      if ok then return true, nil, node end
      local state = fields and fields.sqlstate
      if (state ~= "26000" and state ~= "0A000") or raw.pinned then
        return nil, code, message, fields
      end
      -- The server forgot it (26000) or its plan changed (0A000): prepared again, once.
      lru_remove(raw, node)
      if state == "0A000" then run(raw, "simple", "DEALLOCATE " .. node.name, nil, 0) end
    end
  elseif n > 0 and raw.max_stmts > 0 and raw.stmts[sql] then
    -- A transaction's first statement, already prepared: [BEGIN, execute] in one round trip,
    -- through the two op tables this connection keeps for it (a transaction allocates none).
    local node = raw.stmts[sql]
    lru_touch(raw, node)
    raw.pending = nil
    local ops = raw.begin_ops
    if not ops then
      ops = { { "params", nil, nil, 0 }, { "prepared" } }
      raw.begin_ops = ops
    end
    local b, e = ops[1], ops[2]
    b[2] = pre
    e[2], e[3], e[4], e[5] = sql, binds, n, node.name
    local ok, code, message = run_pipeline(raw, ops, 2)
    e[3] = nil -- keeps no bound value alive
    if not ok then return nil, code, message end
    for i = 1, 2 do
      local fields
      code, message, fields = op_error(raw, i)
      if code then return nil, code, message, fields end
    end
    return true, 2, node
  elseif n == 0 and find(sql, ";", 1, true) then
    -- Maybe several statements: the simple protocol only, which a pipeline cannot carry.
    raw.pending = nil
    local ok, code, message, fields = run(raw, "simple", pre, nil, 0)
    if not ok then return nil, code, message, fields end
    return run(raw, "simple", sql, nil, 0)
  end
  local ops, k, at, nw = {}, 0
  if pre then
    raw.pending = nil
    ops[1], k = { "params", pre, nil, 0 }, 1
  end
  local node
  k, at, nw, node = add_statement(raw, ops, k, sql, binds, n, {})
  local ok, code, message = run_pipeline(raw, ops, k)
  if not ok then return nil, code, message end
  if nw then register(raw, { nw }) end
  for i = 1, k do
    local fields
    if not ops[i].dealloc then code, message, fields = op_error(raw, i) end
    if code then return nil, code, message, fields end
  end
  return true, at, node
end

local function close_raw(raw)
  raw.pg, raw.cp = nil, nil -- freed by close: never used again
  if raw.h then
    raw.h:close()
    raw.h = nil
  end
end

-- --- the pool -----------------------------------------------------------------------------

local Pool = {}
Pool.__index = Pool

local function connect(pool)
  local wait = pool.next_try - now()
  if wait > 0 then sched.sleep(wait) end
  local token = token_of()
  local h, code, message = pg.connect(pool.uri, pool.options, pool.connect_timeout, token)
  local ok = code == nil
  if ok then ok, code, message = await(token) end
  if not ok then
    h:close()
    pool.failures = pool.failures + 1
    pool.backoff = math.min(math.max(pool.backoff * 2, 0.05), 2)
    pool.next_try = now() + pool.backoff
    return nil, code or "unavailable", message
  end
  pool.backoff, pool.next_try = 0, 0
  pool.connects = pool.connects + 1
  local t = pool.now()
  return setmetatable({ h = h, pg = ffi.cast(pg_ptr, h:ptr()), cp = ffi.cast(pgconn_ptr, h:cptr()),
    slot = h:slot(), pool = pool, born = t, used = t,
    released = -math.huge, stmts = {}, nstmts = 0, max_stmts = pool.max_stmts, seq = 0 }, Raw)
end

local function expired(pool, raw, t)
  return (pool.max_lifetime > 0 and t - raw.born > pool.max_lifetime) or
    (pool.idle_timeout > 0 and t - raw.used > pool.idle_timeout)
end

-- When idle raw turns expired (pool clock), or nil when neither limit is set.
local function deadline(pool, raw)
  local at
  if pool.idle_timeout > 0 then at = raw.used + pool.idle_timeout end
  if pool.max_lifetime > 0 then
    local d = raw.born + pool.max_lifetime
    if not at or d < at then at = d end
  end
  return at
end

-- The idle timer: armed while a connection sits idle, for the earliest deadline among them, so
-- idle_timeout and max_lifetime close connections nobody takes (a worker whose traffic fell
-- away gives its server slots back). It does not keep the loop running (timer:unref), so a
-- script ends as before. A connection is closed only from the idle stack, never while in use.
local function arm(pool, at)
  local tm = pool.timer
  if not tm or (pool.timer_at and pool.timer_at <= at) then return end
  pool.timer_at = at
  local wait = at - pool.now()
  tm:start(wait > 0 and wait or 0)
end

local function sweep_idle(pool)
  pool.timer_at = nil
  if pool.closed then return end
  local t, kept, next_at = pool.now(), 0, nil
  local idle = pool.idle
  for i = 1, pool.nidle do
    local raw = idle[i]
    idle[i] = nil
    -- deadline(...) <= t as well: the timer's millisecond rounding must not leave it armed.
    local at = deadline(pool, raw)
    if expired(pool, raw, t) or (at and at <= t) then
      close_raw(raw)
      pool.open = pool.open - 1
      pool.idle_closed = pool.idle_closed + 1
    else
      kept = kept + 1
      idle[kept] = raw
      if at and (not next_at or at < next_at) then next_at = at end
    end
  end
  pool.nidle = kept
  if next_at then arm(pool, next_at) end
end

-- How long after its release an idle connection is taken again without asking the socket
-- (seconds, real time). check() peeks at the socket (a recv syscall: a server that closed the
-- connection or terminated the backend while it sat idle shows up there, and the pool opens a
-- new one instead of failing the statement); a connection given back less than this ago (a
-- handler's next statement) is only asked what libpq already read (zv_pg_ok, no syscall). A
-- server that goes away inside that window fails the next statement with "unavailable", as one
-- that goes away between the peek and the send always could.
local RECHECK = 0.001

-- Whether idle raw can be used: not expired, and its socket still open.
local function usable(pool, raw)
  local t = now() -- one clock read when the pool's clock is this one (pool.real_clock)
  if expired(pool, raw, pool.real_clock and t or pool.now()) then return false end
  if t - raw.released < RECHECK and C.zv_pg_ok(raw.pg) == 1 then return true end
  return raw.h:check()
end

-- A raw connection: from the idle stack (checked), a new one, or the next one released.
local function acquire(pool)
  if pool.closed then return nil, "closed", "the database is closed" end
  while true do
    while pool.nidle > 0 do
      local raw = pool.idle[pool.nidle]
      pool.idle[pool.nidle] = nil
      pool.nidle = pool.nidle - 1
      if usable(pool, raw) then
        pool.busy = pool.busy + 1
        return raw
      end
      close_raw(raw)
      pool.open = pool.open - 1
    end
    if pool.open < pool.size then
      pool.open = pool.open + 1
      local raw, code, message = connect(pool)
      if raw then
        pool.busy = pool.busy + 1
        return raw
      end
      pool.open = pool.open - 1
      return nil, code, message
    end
    local token = token_of()
    local w = pool.waiters
    w.last = w.last + 1
    w[w.last] = token
    local raw = await(token)
    if raw then
      pool.busy = pool.busy + 1
      return raw
    end
    if pool.closed then return nil, "closed", "the database is closed" end
  end
end

-- Gives raw back: to the first waiter, to the idle stack, or closed when it broke.
local function release(pool, raw)
  pool.busy = pool.busy - 1
  local w = pool.waiters
  local waiter
  if w.first <= w.last then
    waiter = w[w.first]
    w[w.first] = nil
    w.first = w.first + 1
  end
  if raw.broken or pool.closed or not raw.h then
    close_raw(raw)
    pool.open = pool.open - 1
    if waiter then complete(waiter, nil) end -- it opens a new one
    return
  end
  local t = now()
  raw.used, raw.released = pool.real_clock and t or pool.now(), t
  if waiter then
    complete(waiter, raw)
  else
    pool.nidle = pool.nidle + 1
    pool.idle[pool.nidle] = raw
    local at = deadline(pool, raw)
    if at then arm(pool, at) end
  end
end

-- --- the conn of zever.db -----------------------------------------------------------------

local Conn = {}
Conn.__index = Conn

-- The connection a statement runs on: the transaction's pinned one, or one from the pool (the
-- caller releases it when self.raw is nil). nil, code, message when there is none.
local function checkout(self)
  local raw = self.raw
  if raw == nil then return acquire(self.pool) end
  if raw == false then return nil, "closed", "this pinned connection was given back" end
  if not raw.h then return nil, "unavailable", "the connection of this transaction was lost" end
  return raw
end

-- Runs one statement: acquires (unless pinned), executes, decodes with decode(pg, ...) (the
-- connection's zv_pg_t: FFI calls), releases.
local function statement(self, sql, binds, n, decode, all)
  if type(sql) ~= "string" then error("db: expects an SQL string", 3) end
  if binds == nil then n = 0
  elseif n == nil then n = binds.n or #binds end
  if n > 0 then binds = check_binds(binds, n) end
  sql = rewrite(sql)
  local pool = self.pool
  local raw, why, text = checkout(self)
  if not raw then return nil, why, text end
  local ok, code, message, fields = execute(raw, sql, binds, n)
  local res
  if ok then
    local p = raw.pg
    res = decode(p, pool.decode_opts, all, code, message)
    C.zv_pg_clear(p)
  end
  if self.raw == nil then release(pool, raw) end
  if not ok then return nil, code, message, fields end
  return res
end

local function exec_decode(p, _, _, i)
  return changes_of(p, i)
end

function Conn:exec(sql, binds, n)
  local raw = self.raw
  if raw and (binds == nil or n == 0) then
    -- A transaction's BEGIN waits for its first statement; COMMIT or ROLLBACK of a transaction
    -- that sent nothing is nothing to send.
    if sql == M.begin_sql and not raw.pending and raw.h then
      raw.pending = sql
      return 0, nil
    elseif raw.pending and (sql == "COMMIT" or sql == "ROLLBACK") then
      raw.pending = nil
      return 0, nil
    end
  end
  local changes, code, message, fields = statement(self, sql, binds, n, exec_decode)
  if changes == nil then return nil, code, message, fields end
  return changes, nil
end

function Conn:query(sql, binds, n)
  return statement(self, sql, binds, n, rows_of, true)
end

function Conn:first(sql, binds, n)
  local row, code, message, fields = statement(self, sql, binds, n, rows_of, false)
  if row == nil and code then return nil, code, message, fields end
  return row
end

function Conn:each(sql, binds, n, fn)
  if type(fn) ~= "function" then error("each: expects a function", 2) end
  local rows, code, message, fields = statement(self, sql, binds, n, rows_of, true)
  if not rows then return nil, code, message, fields end
  for i = 1, #rows do fn(rows[i]) end
  return #rows
end

-- Runs stmts[1..count] (each { sql, binds, n, kind }, kind "exec" | "query" | "first") in one
-- round trip. Returns results, errs: results[i] is statement i's (exec: changes, query: rows,
-- first: row or nil), errs nil or errs[i] = { code, message, fields } for each that failed; or
-- nil, code, message when the connection failed. independent: a sync point after each
-- statement, so outside a transaction each is its own and a failure skips nothing else; else
-- one segment (one implicit transaction outside an explicit one): the first failure rolls it
-- back and skips the rest, each "aborted" (SQLSTATE 25P02).
function Conn:pipeline(stmts, count, independent)
  local list = tnew(count, 0)
  for i = 1, count do
    local st = stmts[i]
    local sql, binds, n = st[1], st[2], st[3]
    if type(sql) ~= "string" then error("db: expects an SQL string", 2) end
    if binds == nil then n = 0 elseif n == nil then n = binds.n or #binds end
    if n > 0 then binds = check_binds(binds, n) end
    list[i] = { rewrite(sql), binds, n, st[4] }
  end
  local pool = self.pool
  local raw, why, text = checkout(self)
  if not raw then return nil, why, text end
  local ops, k, fresh, news, at = {}, 0, {}, {}, tnew(count, 0)
  local pre = raw.pending
  if pre then
    raw.pending = nil
    ops[1], k = { "params", pre, nil, 0 }, 1
  end
  for i = 1, count do
    local st = list[i]
    local nw
    k, at[i], nw = add_statement(raw, ops, k, st[1], st[2], st[3], fresh)
    if nw then news[#news + 1] = nw end
    if independent then ops[k][6] = true end
    pool.statements = pool.statements + 1
  end
  local ok, code, message = run_pipeline(raw, ops, k)
  local results, errs
  if ok then
    register(raw, news)
    results = { n = count }
    -- A failed BEGIN (or prepare) is the failure of the statements it skipped.
    local lead, lead_msg, lead_fields
    if pre then lead, lead_msg, lead_fields = op_error(raw, 1) end
    for i = 1, count do
      local j = at[i]
      local c, m, f = op_error(raw, j)
      if c == "aborted" and ops[j - 1] and ops[j - 1][1] == "prepare" then
        local pc, pm, pf = op_error(raw, j - 1)
        if pc and pc ~= "aborted" then c, m, f = pc, pm, pf end
      end
      if c == "aborted" and lead then c, m, f = lead, lead_msg, lead_fields end
      if c then
        errs = errs or {}
        errs[i] = { c, m, f }
      else
        local kind = list[i][4]
        if kind == "exec" then results[i] = changes_of(raw.pg, j)
        else results[i] = rows_of(raw.pg, pool.decode_opts, kind ~= "first", j) end
      end
    end
    if raw.h then raw.h:clear() end
  end
  if self.raw == nil then release(pool, raw) end
  if not ok then return nil, code, message end
  return results, errs
end

-- A conn bound to one raw connection until unpin() (a transaction's): same methods. The raw
-- connection keeps the conn of its last pin and hands it out again (a transaction allocates
-- none): an unpinned conn answers "closed" until the same raw connection is pinned again, as
-- zever.db's finished transaction handles raise until their depth is taken again.
function Conn:pin()
  if self.raw then error("db: this connection is already pinned", 2) end
  local raw, code, message = acquire(self.pool)
  if not raw then return nil, code, message end
  raw.pinned = true
  local pc = raw.pin_conn
  if pc and pc.raw == false and pc.parent == self then
    pc.raw = raw
    return pc
  end
  pc = setmetatable({ pool = self.pool, raw = raw, parent = self }, Conn)
  raw.pin_conn = pc
  return pc
end

function Conn:unpin()
  local raw = self.raw
  if not raw then return end
  self.raw = false -- later calls fail instead of acquiring
  raw.pinned, raw.pending = nil, nil
  release(self.pool, raw)
end

function Conn:is_open()
  return not self.pool.closed
end

function Conn:close()
  local pool = self.pool
  if self.raw ~= nil then return self:unpin() end
  if pool.closed then return end
  pool.closed = true
  if pool.timer then
    pool.timer:close()
    pool.timer, pool.timer_at = nil, nil
  end
  for i = 1, pool.nidle do close_raw(pool.idle[i]) pool.idle[i] = nil end
  pool.open = pool.open - pool.nidle
  pool.nidle = 0
  local w = pool.waiters
  while w.first <= w.last do
    local t = w[w.first]
    w[w.first] = nil
    w.first = w.first + 1
    complete(t, nil)
  end
  if pool.listener then
    close_raw(pool.listener)
    pool.listener = nil
  end
end

function Conn:pool_stats()
  local p = self.pool
  local w = p.waiters
  return { size = p.size, open = p.open, idle = p.nidle, busy = p.busy,
    waiting = w.last - w.first + 1, connects = p.connects, connect_failures = p.failures,
    statements = p.statements, listening = p.listener ~= nil,
    listener_connects = p.listener_connects, idle_closed = p.idle_closed }
end

-- The server's version: number (150004) and text ("15.4").
function Conn:server_version()
  local raw = self.raw
  if not raw then
    local code, message
    raw, code, message = acquire(self.pool)
    if not raw then return nil, code, message end
  end
  local _, _, v = raw.h:info()
  if not self.raw then release(self.pool, raw) end
  local major, minor = math.floor(v / 10000), v % 10000
  return v, major .. "." .. minor
end

-- --- COPY ---------------------------------------------------------------------------------

local function quote_ident(s)
  local parts = {}
  for part in s:gmatch("[^.]+") do parts[#parts + 1] = '"' .. gsub(part, '"', '""') .. '"' end
  return concat(parts, ".")
end
M.quote_ident = quote_ident

local COPY_ESC = { ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function copy_field(v)
  if v == nil or rawequal(v, NULL) then return "\\N" end
  return (gsub(scalar_text(v, "copy"), "[\\\n\r\t]", COPY_ESC))
end

-- Loads rows (arrays of values in columns' order) with COPY ... FROM STDIN: count | nil, ...
function Conn:copy_in(tbl, columns, rows)
  local cols = {}
  for i, c in ipairs(columns) do cols[i] = quote_ident(c) end
  local ncol = #columns
  local lines = tnew(#rows + 1, 0)
  for i, row in ipairs(rows) do
    local f = tnew(ncol, 0)
    for j = 1, ncol do f[j] = copy_field(row[j]) end
    lines[i] = concat(f, "\t")
  end
  lines[#lines + 1] = ""
  local data = #rows > 0 and concat(lines, "\n") or ""
  local sql = "COPY " .. quote_ident(tbl) .. " (" .. concat(cols, ", ") .. ") FROM STDIN"
  local pool = self.pool
  local raw = self.raw
  if not raw then
    local code, message
    raw, code, message = acquire(pool)
    if not raw then return nil, code, message end
  end
  if raw.pending then -- the transaction's BEGIN, held back (COPY cannot join a pipeline)
    local ok, code, message, fields = run(raw, "simple", raw.pending, nil, 0)
    raw.pending = nil
    if not ok then return nil, code, message, fields end
  end
  local token = token_of()
  local ok, code, message = raw.h:copy(token, sql, data)
  local fields
  if ok then
    ok, code, message = await(token)
    if not ok and code == "server" then code, message, fields = server_error(raw.h)
    elseif not ok then raw.broken = true end
  else
    raw.broken = true
  end
  local n = ok and changes_of(raw.pg)
  if raw.h then raw.h:clear() end
  if not self.raw then release(pool, raw) end
  if not ok then return nil, code, message, fields end
  return n
end

-- --- LISTEN / NOTIFY ----------------------------------------------------------------------

local Sub = {}
Sub.__index = Sub

local function listen_sql(verb, channel)
  return verb .. " " .. quote_ident(channel)
end

local start_listener

local function on_notify(pool)
  return function(channel, payload)
    if channel == nil then -- the connection broke: reconnect and LISTEN again
      if pool.listener then close_raw(pool.listener) end
      pool.listener = nil
      if not pool.closed and next(pool.channels) then sched.spawn(start_listener, pool) end
      return
    end
    local subs = pool.channels[channel]
    if not subs then return end
    for _, fn in ipairs(subs) do sched.spawn(fn, payload, channel) end
  end
end

-- Opens the listen connection and LISTENs on every channel (retrying with the pool's backoff).
function start_listener(pool)
  if pool.listener or pool.starting then return true end
  pool.starting = true
  local raw, code, message
  while not pool.closed do
    raw, code, message = connect(pool)
    if raw then break end
    if not pool.reconnecting then break end
  end
  pool.starting = false
  if not raw then return nil, code, message end
  if pool.closed then close_raw(raw) return nil, "closed", "the database is closed" end
  raw.h:listen(on_notify(pool))
  for channel in pairs(pool.channels) do
    local ok
    ok, code, message = run(raw, "simple", listen_sql("LISTEN", channel), nil, 0)
    if not ok then close_raw(raw) return nil, code, message end
  end
  pool.listener = raw
  pool.listener_connects = pool.listener_connects + 1
  pool.reconnecting = true
  return true
end

function Conn:listen(channel, fn)
  if type(channel) ~= "string" or channel == "" then error("listen: expects a channel name", 2) end
  if type(fn) ~= "function" then error("listen: expects a function", 2) end
  local pool = self.pool
  local subs = pool.channels[channel]
  local fresh = subs == nil
  if fresh then
    subs = {}
    pool.channels[channel] = subs
  end
  subs[#subs + 1] = fn
  local handle = setmetatable({ pool = pool, channel = channel, fn = fn }, Sub)
  if pool.listener then
    if fresh then
      local ok, code, message, fields = run(pool.listener, "simple", listen_sql("LISTEN", channel), nil, 0)
      if not ok then
        handle:close()
        return nil, code, message, fields
      end
    end
    return handle
  end
  local ok, code, message = start_listener(pool)
  if not ok then
    handle:close()
    return nil, code, message
  end
  return handle
end

function Sub:close()
  local pool, subs = self.pool, self.pool.channels[self.channel]
  if not subs or self.closed then return end
  self.closed = true
  for i = #subs, 1, -1 do
    if subs[i] == self.fn then table.remove(subs, i) break end
  end
  if #subs == 0 then
    pool.channels[self.channel] = nil
    if pool.listener and not pool.listener.broken then
      run(pool.listener, "simple", listen_sql("UNLISTEN", self.channel), nil, 0)
    end
  end
end

function Conn:notify(channel, payload)
  if type(channel) ~= "string" or channel == "" then error("notify: expects a channel name", 2) end
  if payload ~= nil and type(payload) ~= "string" then error("notify: payload must be a string", 2) end
  return self:first("SELECT pg_notify($1, $2)", { channel, payload or "" }, 2)
end

-- --- open ---------------------------------------------------------------------------------

-- The pool's clock: raw.born/used, expiry and the idle timer (opts.clock in specs:
-- spec/support/fake_clock.lua). The default timer is unref'd: see arm.
local LOOP_CLOCK = {
  now = function() return now() end,
  timer = function(fn)
    local tm = loop.timer(fn)
    tm:unref()
    return tm
  end,
}

local function seconds(v, name, default)
  if v == nil then return default end
  if type(v) ~= "number" or v < 0 then
    error("db.open: " .. name .. " must be a non-negative number of seconds", 4)
  end
  return v
end

-- target: "//user:pw@host:port/db?..." (the part after "postgres:"). Returns conn | nil, code,
-- message. Nothing connects yet: the first statement opens the first connection.
function M.open(target, opts)
  opts = opts or {}
  local size = opts.pool_size or 10
  if type(size) ~= "number" or size < 1 or size % 1 ~= 0 then
    error("db.open: pool_size must be a positive integer", 3)
  end
  local stmts = opts.statements or 256
  local options = "-c TimeZone=UTC -c DateStyle=ISO -c IntervalStyle=iso_8601"
  local st = seconds(opts.statement_timeout, "statement_timeout", 0)
  if st > 0 then options = options .. format(" -c statement_timeout=%d", math.ceil(st * 1000)) end
  if type(target) ~= "string" or sub(target, 1, 2) ~= "//" then
    return nil, "invalid", "a postgres DSN looks like postgres://user:password@host:5432/db"
  end
  local pool = setmetatable({
    uri = "postgresql:" .. target,
    options = options,
    size = size,
    idle_timeout = seconds(opts.idle_timeout, "idle_timeout", 300),
    max_lifetime = seconds(opts.max_lifetime, "max_lifetime", 3600),
    connect_timeout = seconds(opts.connect_timeout, "connect_timeout", 10),
    max_stmts = stmts,
    decode_opts = { numeric_number = opts.numeric == "number" },
    idle = {}, nidle = 0, open = 0, busy = 0,
    waiters = { first = 1, last = 0 },
    backoff = 0, next_try = 0, connects = 0, failures = 0, statements = 0, listener_connects = 0,
    channels = {}, idle_closed = 0,
  }, Pool)
  local clock = opts.clock or LOOP_CLOCK
  if type(clock) ~= "table" or type(clock.now) ~= "function" or type(clock.timer) ~= "function" then
    error("db.open: clock must be a table with now and timer functions", 3)
  end
  pool.now = clock.now
  pool.real_clock = clock == LOOP_CLOCK -- pool.now() is now(): read it once where both are due
  if pool.idle_timeout > 0 or pool.max_lifetime > 0 then
    pool.timer = clock.timer(function() sweep_idle(pool) end)
  end
  -- One connection now: a wrong host, user or password is an error of open, not of the
  -- first request.
  local raw, code, message = acquire(pool)
  if not raw then return nil, code, message end
  release(pool, raw)
  return setmetatable({ pool = pool }, Conn)
end

return M
