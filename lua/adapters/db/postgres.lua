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
-- Five files, one a phase (#16): this one (the conn zever.db calls: a statement's checkout,
-- execute, decode and release; pipelines, pins, COPY, LISTEN/NOTIFY, open), postgres_pool.lua
-- (the connection life: connect, reuse checks, idle and lifetime expiry, waiters, close),
-- postgres_statement.lua (the statement path on one connection: binds, send, wait, the LRU of
-- prepared statements, pipelines), postgres_sql.lua (the `?` rewrite and the binds: what is
-- sent) and postgres_decode.lua (rows decoded by OID and server errors mapped to codes: what
-- comes back). Each requires only those after it in this list.
--
-- It must not render SQL (zever.sql does, for the "postgres" dialect named here) nor require
-- its front-end. It must not keep a raw connection when a call raises: binds are checked before
-- one is acquired.

local ffi = require "ffi"
local pg = require "zever.pg"
local sched = require "zever.sched"
local tnew = require "table.new"
local pool_mod = require "adapters.db.postgres_pool"
local st_mod = require "adapters.db.postgres_statement"
local sqltext = require "adapters.db.postgres_sql"
local pgdecode = require "adapters.db.postgres_decode"

require "zever.cdef.pg"

local NULL = pg.null
local type, setmetatable, error, pairs, ipairs, rawequal, next =
  type, setmetatable, error, pairs, ipairs, rawequal, next
local sub, format, gsub, concat = string.sub, string.format, string.gsub, table.concat
local await, token_of = sched.await, sched.token
local C = ffi.C

local M = {
  dialect = "postgres",
  begin_sql = "BEGIN",
  null = NULL,
  -- Statements wait on the loop (zever.db's transaction ends a trace after its commit's wait).
  waits = true,
}

local rewrite, check_binds, scalar_text = sqltext.rewrite, sqltext.check_binds, sqltext.scalar_text
local rows_of, changes_of, server_error = pgdecode.rows_of, pgdecode.changes_of,
  pgdecode.server_error
local acquire, release, connect, close_raw = pool_mod.acquire, pool_mod.release,
  pool_mod.connect, pool_mod.close_raw
local run, execute, run_pipeline, op_error, add_statement, register = st_mod.run,
  st_mod.execute, st_mod.run_pipeline, st_mod.op_error, st_mod.add_statement, st_mod.register
M.rewrite, M.blob_bytes, M.code_of = sqltext.rewrite_uncached, sqltext.blob_bytes,
  pgdecode.code_of

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
  pool_mod.close(pool)
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

-- target: "//user:pw@host:port/db?..." (the part after "postgres:"). Returns conn | nil, code,
-- message. Nothing connects yet: the first statement opens the first connection.
function M.open(target, opts)
  opts = opts or {}
  local size = opts.pool_size or 10
  if type(size) ~= "number" or size < 1 or size % 1 ~= 0 then
    error("db.open: pool_size must be a positive integer", 3)
  end
  local options = "-c TimeZone=UTC -c DateStyle=ISO -c IntervalStyle=iso_8601"
  local st = pool_mod.seconds(opts.statement_timeout, "statement_timeout", 0, 4)
  if st > 0 then options = options .. format(" -c statement_timeout=%d", math.ceil(st * 1000)) end
  if type(target) ~= "string" or sub(target, 1, 2) ~= "//" then
    return nil, "invalid", "a postgres DSN looks like postgres://user:password@host:5432/db"
  end
  local pool = pool_mod.new("postgresql:" .. target, options, size, opts)
  -- One connection now: a wrong host, user or password is an error of open, not of the
  -- first request.
  local raw, code, message = acquire(pool)
  if not raw then return nil, code, message end
  release(pool, raw)
  return setmetatable({ pool = pool }, Conn)
end

return M
