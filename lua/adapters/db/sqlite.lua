-- adapters.db.sqlite: the SQLite adapter of zever.db: a layer over the zever.sqlite binding
-- (host/sqlite/): conn:exec, query, first, each(sql, binds, n[, fn]) returning nil, code,
-- message on failure (zever.db's adapter contract), from the binding's nil, message, code (the
-- order of every binding, l_sqlite.c).
--
-- Reads and writes (first, query, exec) take an FFI path that LuaJIT compiles: the statement is
-- checked out of the binding's cache, bound, stepped and decoded through libsqlite3's own
-- functions, and given back. The first call with a text checks out by the text (the cache
-- hashes it: zv_sqlite_ffi_acquire); the slot and birth tick it reports are kept in a table
-- keyed by the text (an interned string: the lookup hashes nothing), and later calls check out
-- by slot (zv_sqlite_ffi_acquire_slot), falling back to the text when the slot was reused. The
-- table holds at most one text per cache slot.
--
-- Held statements: conn:hold(sql) prepares sql once outside the cache and keeps it for the
-- connection's life (self.held, keyed by the interned text; at most MAX_HELD texts). A call
-- with a held text skips the cache check-out altogether: bind, step, decode, reset, as a raw
-- caller's prepared statement. zever.db's prepared queries hold their texts (the prepared handle
-- the builder keeps), and the transaction statements (conn:control) are held on first use.
-- A held statement in use (re-entered from a __gc) is left alone: that call takes the cache.
--
-- Whatever this path does not handle plainly (a
-- closed handle, a prepare error, several statements, a wrong number of values, a BLOB or int64
-- value to bind) goes to the classic binding, which does the whole call and reports the error;
-- a failing step is reported by the binding (conn:_error) before the statement is given back.
-- Rows decode as in l_sqlite.c: NULL columns absent, integers beyond +-2^53 as int64_t cdata,
-- BLOBs as strings; exec returns changes, last_insert_id as the binding does.
--
-- One connection per worker; WAL, busy_timeout and foreign_keys=ON are set at open. It must not
-- render SQL: that is zever.sql's job, for the "sqlite" dialect named here. Between acquire and
-- release it must not run code that can raise or re-enter the connection.

local sqlite = require "zever.sqlite"
local ffi = require "ffi"

local C = ffi.C
local NULL = sqlite.null
local type, setmetatable, tonumber, rawequal, pairs = type, setmetatable, tonumber, rawequal, pairs
local ffi_string = ffi.string
local tnew = require "table.new"

require "zever.cdef.sqlite"

local ROW, DONE = 100, 101
local T_INTEGER, T_FLOAT, T_TEXT, T_BLOB = 1, 2, 3, 4
local STMTSTATUS_REPREPARE = 5
local EXACT = 2 ^ 53
local INT64_LO, INT64_HI = -2 ^ 63, 2 ^ 63
local MAX_TEXT = 0x7fffffff

local M = {
  dialect = "sqlite",
  -- IMMEDIATE takes the write lock at BEGIN: two writers never deadlock upgrading read locks,
  -- the second waits up to busy_timeout instead.
  begin_sql = "BEGIN IMMEDIATE",
  null = sqlite.null,
  blob = sqlite.blob,
}

local Conn = {}
Conn.__index = Conn

-- Binds v to parameter i of st; false when v needs the classic binding (or the bind failed).
local function bind_one(st, i, v)
  local t = type(v)
  local rc
  if t == "number" then
    if v % 1 == 0 and v >= INT64_LO and v < INT64_HI then
      rc = C.sqlite3_bind_int64(st, i, v)
    else
      rc = C.sqlite3_bind_double(st, i, v)
    end
  elseif t == "string" then
    if #v > MAX_TEXT then return false end
    rc = C.sqlite3_bind_text(st, i, v, #v, nil) -- SQLITE_STATIC: binds keeps v alive
  elseif t == "boolean" then
    rc = C.sqlite3_bind_int64(st, i, v and 1 or 0)
  elseif t == "nil" or (t == "userdata" and rawequal(v, NULL)) then
    rc = C.sqlite3_bind_null(st, i)
  else
    return false
  end
  return rc == 0
end

-- Binds binds[1..n]; returns true, or false when a value needs the classic binding. Up to three
-- values without a loop: a loop inside a request's trace makes LuaJIT abort the trace ("leaving
-- loop in root trace at sqlite.lua", jit.v on bench/tfb /queries), and most calls bind one to
-- three (a prepared query's id, an update's value and id).
local function bind_all(st, binds, n)
  if n <= 3 then
    if n >= 1 and not bind_one(st, 1, binds[1]) then return false end
    if n >= 2 and not bind_one(st, 2, binds[2]) then return false end
    if n >= 3 and not bind_one(st, 3, binds[3]) then return false end
    return true
  end
  for i = 1, n do
    if not bind_one(st, i, binds[i]) then return false end
  end
  return true
end

-- The value of column i of the current row (nil for NULL), as decode writes it. Numbers are read
-- from the column's value (sqlite3_column_value: one mutex round and API exit for the type and
-- the number together, where column_type + column_int64 take two); text and BLOBs through
-- column_text/blob, which convert and keep the bytes as SQLite's own API does.
local function column(st, i)
  local cv = C.sqlite3_column_value(st, i)
  local t = C.sqlite3_value_type(cv)
  if t == T_INTEGER then
    local v = C.sqlite3_value_int64(cv)
    if v >= -EXACT and v <= EXACT then return tonumber(v) end
    return v
  elseif t == T_TEXT then
    return ffi_string(C.sqlite3_column_text(st, i), C.sqlite3_column_bytes(st, i))
  elseif t == T_FLOAT then
    return C.sqlite3_value_double(cv)
  elseif t == T_BLOB then
    local p = C.sqlite3_column_blob(st, i)
    local n = C.sqlite3_column_bytes(st, i)
    return n > 0 and ffi_string(p, n) or ""
  end
  return nil
end

-- A row constructor for one statement's column names, made once per names entry: a table
-- constructor with the names as constant keys is a copy of a template that already holds them
-- (LuaJIT's TDUP), so a row costs no hash insert per column (lj_tab_newkey: ~150 instructions
-- a two-column row, callgrind, bench/db_overhead First). Up to MAX_SHAPED columns.
local MAX_SHAPED = 24
local function shaped(nm)
  local n = nm.n
  if n == 0 or n > MAX_SHAPED then return nil end
  local parts = {}
  for i = 1, n do parts[i] = string.format("[%q] = col(st, %d)", nm[i], i - 1) end
  local chunk = loadstring("local col = ... return function(st) return { " ..
    table.concat(parts, ", ") .. " } end", "=sqlite row")
  return chunk and chunk(column) or nil
end

-- The column names of the checked-out statement, cached per cache slot while the same handle
-- (its birth tick) is there and has not been re-prepared (a schema change can rename columns).
local function new_names(st, born, rep)
  local ncol = C.sqlite3_column_count(st)
  local nm = { born = born, rep = rep, n = ncol }
  for i = 1, ncol do nm[i] = ffi_string(C.sqlite3_column_name(st, i - 1)) end
  nm.make = shaped(nm)
  return nm
end

local function names_of(self, u, st)
  local rep = C.sqlite3_stmt_status(st, STMTSTATUS_REPREPARE, 0)
  local slot = tonumber(u.slot)
  local nm
  if u.cached ~= 0 then
    nm = self.names[slot]
    if nm and nm.born == u.born and nm.rep == rep then return nm end
  end
  nm = new_names(st, u.born, rep)
  if u.cached ~= 0 then self.names[slot] = nm end
  return nm
end

-- The same for a held statement h: kept in h while it has not been re-prepared.
local function held_names(h, st)
  local rep = C.sqlite3_stmt_status(st, STMTSTATUS_REPREPARE, 0)
  local nm = h.nm
  if nm and nm.rep == rep then return nm end
  nm = new_names(st, 0, rep)
  h.nm = nm
  return nm
end

local function decode(st, nm)
  local make = nm.make
  if make then return make(st) end
  local ncol = nm.n
  local row = tnew(0, ncol)
  for i = 0, ncol - 1 do
    local t = C.sqlite3_column_type(st, i)
    if t == T_INTEGER then
      local v = C.sqlite3_column_int64(st, i)
      if v >= -EXACT and v <= EXACT then
        row[nm[i + 1]] = tonumber(v)
      else
        row[nm[i + 1]] = v
      end
    elseif t == T_TEXT then
      local p = C.sqlite3_column_text(st, i)
      row[nm[i + 1]] = ffi_string(p, C.sqlite3_column_bytes(st, i))
    elseif t == T_FLOAT then
      row[nm[i + 1]] = C.sqlite3_column_double(st, i)
    elseif t == T_BLOB then
      local p = C.sqlite3_column_blob(st, i)
      local n = C.sqlite3_column_bytes(st, i)
      row[nm[i + 1]] = n > 0 and ffi_string(p, n) or ""
    end
  end
  return row
end

-- Gives back what checkout took: a held statement h (reset, idle again), else self.use.
local function give(self, h)
  if h then
    C.sqlite3_reset(h.st)
    h.busy = false
  else
    C.zv_sqlite_ffi_done(self.ptr, self.use)
  end
end

-- A failed step of the FFI path: the binding reports it (SQLite's message is read before the
-- statement is given back), in the adapter's order.
local function step_failed(self, rc, sql, h)
  local _, message, code = self.raw:_error(rc, sql)
  give(self, h)
  return true, nil, code, message
end

-- Checks the statement of sql out, bound to binds[1..n]: its handle and the held entry when sql
-- is held and idle (else the statement is in self.use, and h nil), or nil when the classic
-- binding must do the call (nothing is then checked out).
local function checkout(self, sql, binds, n)
  if type(sql) ~= "string" then return nil end
  if binds == nil then
    n = 0
  elseif type(binds) ~= "table" then
    return nil
  elseif n == nil then
    n = #binds
  elseif type(n) ~= "number" then
    return nil
  end
  local held = self.held
  local h = held and held[sql]
  if h and h.n == n and not h.busy then
    h.busy = true
    local st = h.st
    if n > 0 and not bind_all(st, binds, n) then
      give(self, h)
      return nil
    end
    return st, h
  end
  local u, ptr = self.use, self.ptr
  local slot = self.slot_of[sql]
  if slot == nil or C.zv_sqlite_ffi_acquire_slot(ptr, slot, self.born[slot], n, u) ~= 0 then
    if C.zv_sqlite_ffi_acquire(ptr, sql, #sql, n, u) ~= 0 then return nil end
    if u.cached ~= 0 then
      -- Remember sql -> slot, forgetting the text the slot held before (evicted).
      slot = tonumber(u.slot)
      local old = self.sql_at[slot]
      if old ~= sql then
        if old ~= nil then self.slot_of[old] = nil end
        self.sql_at[slot], self.slot_of[sql] = sql, slot
      end
      self.born[slot] = u.born
    end
  end
  local st = u.stmt
  if n > 0 and not bind_all(st, binds, n) then
    C.zv_sqlite_ffi_done(ptr, u)
    return nil
  end
  return st
end

-- The shared body of first/query: all == false returns the first row or nil.
local function read(self, sql, binds, n, all)
  local st, h = checkout(self, sql, binds, n)
  if st == nil then return nil end
  local rc = C.sqlite3_step(st)
  if not all then
    local row
    if rc == ROW then
      row = decode(st, h and held_names(h, st) or names_of(self, self.use, st))
    elseif rc ~= DONE then
      return step_failed(self, rc, sql, h)
    end
    give(self, h)
    return true, row
  end
  local rows, count = {}, 0
  if rc == ROW then
    local nm = h and held_names(h, st) or names_of(self, self.use, st)
    repeat
      count = count + 1
      rows[count] = decode(st, nm)
      rc = C.sqlite3_step(st)
    until rc ~= ROW
  end
  if rc ~= DONE then return step_failed(self, rc, sql, h) end
  give(self, h)
  return true, rows
end

-- The body of exec: true, changes, last_insert_id (an int64_t cdata beyond +-2^53, as the
-- binding returns it); true, nil, code, message when the step fails; nil for the classic path.
local function write(self, sql, binds, n)
  local st, h = checkout(self, sql, binds, n)
  if st == nil then return nil end
  local rc = C.sqlite3_step(st)
  while rc == ROW do rc = C.sqlite3_step(st) end
  if rc ~= DONE then return step_failed(self, rc, sql, h) end
  give(self, h)
  local db = self.db -- open: checkout succeeded
  local id = C.sqlite3_last_insert_rowid(db)
  if id >= -EXACT and id <= EXACT then id = tonumber(id) end
  return true, tonumber(C.sqlite3_changes64(db)), id
end

-- The binding's result a, b, c (value(s), or nil, message, code) in the adapter's order.
local function contract(a, b, c)
  if a == nil and c ~= nil then return nil, c, b end
  return a, b
end

function Conn:first(sql, binds, n)
  local done, row, code, message = read(self, sql, binds, n, false)
  if not done then return contract(self.raw:first(sql, binds, n)) end
  return row, code, message
end

function Conn:query(sql, binds, n)
  local done, rows, code, message = read(self, sql, binds, n, true)
  if not done then return contract(self.raw:query(sql, binds, n)) end
  return rows, code, message
end

function Conn:exec(sql, binds, n)
  local done, changes, id, message = write(self, sql, binds, n)
  if not done then return contract(self.raw:exec(sql, binds, n)) end
  return changes, id, message
end

-- conn:hold(sql) -> true when sql is held from now on (see the top), false when it cannot be
-- (closed, MAX_HELD texts held, not one statement, a prepare error: calls then take the cache).
-- The handles are finalized by close, or by the collector (ffi.gc) with the connection: the
-- binding closes with sqlite3_close_v2, so either order frees everything.
local MAX_HELD = 64
-- control's texts may go past MAX_HELD by this many: prepared queries filling the held set do
-- not push transactions back to the cache (BEGIN, COMMIT, ROLLBACK and 3 per savepoint depth).
local MAX_CONTROL = 16
local held_out, tail_out = ffi.new("sqlite3_stmt *[1]"), ffi.new("const char *[1]")

local function hold(self, sql, control)
  local held = self.held
  if held == nil or type(sql) ~= "string" then return nil end
  local h = held[sql]
  if h or self.nheld >= (control and MAX_HELD + MAX_CONTROL or MAX_HELD) then return h end
  held_out[0] = nil
  if C.sqlite3_prepare_v2(self.db, sql, #sql, held_out, tail_out) ~= 0 then return nil end
  local st = held_out[0]
  held_out[0] = nil
  if st == nil then return nil end
  if tail_out[0] - ffi.cast("const char *", sql) ~= #sql then
    C.sqlite3_finalize(st)
    return nil
  end
  local n = C.sqlite3_bind_parameter_count(st)
  -- ctl: no values and no columns, what control runs itself.
  h = { st = ffi.gc(st, C.sqlite3_finalize), n = n, busy = false, nm = false,
    ctl = n == 0 and C.sqlite3_column_count(st) == 0 }
  held[sql] = h
  self.nheld = self.nheld + 1
  return h
end

function Conn:hold(sql)
  return hold(self, sql) ~= nil
end

-- Transaction control: conn:control(sql) runs a statement without values or rows (BEGIN
-- IMMEDIATE, COMMIT, ROLLBACK, SAVEPOINT x, RELEASE SAVEPOINT x, ROLLBACK TO SAVEPOINT x: what
-- zever.db runs around every transaction) and returns true, or nil, code, message as exec does.
-- Its text is held: a call is one step and one reset, as a raw caller's prepared BEGIN/COMMIT,
-- with no cache check-out and no changes/last_insert_id read. Texts that cannot be held, or
-- have values or columns, go to exec.
--
-- Around the transaction, the process's write lock of the file (writegate.c): taken before
-- M.begin_sql, so the worker threads of one process queue for it in C instead of failing BEGIN
-- IMMEDIATE against each other in SQLite, and given on by the control statement that ends the
-- transaction (COMMIT, ROLLBACK, or the failed BEGIN), after COMMIT's checkpoint. Its wait and
-- SQLite's own busy wait share busy_timeout; another connection of this thread holding it
-- answers busy at once (waiting would block the only thread that can give it back).
local function control_exec(self, sql)
  local ok, code, message, fields = self:exec(sql)
  C.zv_sqlite_ffi_wdone(self.ptr)
  return ok, code, message, fields
end

function Conn:control(sql)
  local held = self.held
  local h = held and held[sql]
  if h == nil then h = hold(self, sql, true) end
  if sql == M.begin_sql then
    local refused = C.zv_sqlite_ffi_wtake(self.ptr)
    if refused ~= nil then
      return nil, "busy", ffi_string(refused) .. " (sql: " .. M.begin_sql .. ")"
    end
  end
  if h == nil or not h.ctl or h.busy then return control_exec(self, sql) end
  local st = h.st
  local rc = C.sqlite3_step(st)
  if rc ~= DONE then
    local _, message, code = self.raw:_error(rc, sql)
    C.sqlite3_reset(st)
    C.zv_sqlite_ffi_wdone(self.ptr)
    return nil, code, message
  end
  C.sqlite3_reset(st)
  C.zv_sqlite_ffi_wdone(self.ptr)
  return true
end

function Conn:each(sql, binds, n, fn)
  return contract(self.raw:each(sql, binds, n, fn))
end

function Conn:close()
  local held = self.held
  self.held = nil -- control goes to exec from now on, which reports "closed"
  if held then
    -- One in use (a __gc closing it mid-call) is left to the collector.
    for _, h in pairs(held) do
      if not h.busy then C.sqlite3_finalize(ffi.gc(h.st, nil)) end
    end
  end
  return self.raw:close()
end

function Conn:is_open()
  return self.raw:is_open()
end

function Conn:cached()
  return self.raw:cached()
end

-- target: a file path, or ":memory:". Returns conn | nil, code, message.
function M.open(target, opts)
  local raw, message, code = sqlite.open(target, opts)
  if not raw then return nil, code, message end
  local self = setmetatable({
    raw = raw, -- keeps the connection (and so ptr) alive
    ptr = ffi.cast("void *", raw:_ptr()),
    use = ffi.new("zv_sqlite_use_t"),
    names = {},
    slot_of = {}, -- SQL text -> cache slot (checkout), at most one text per slot
    sql_at = {}, -- cache slot -> the SQL text slot_of maps to it
    born = {}, -- cache slot -> the birth tick (uint64_t cdata) of the statement it held
    held = {}, -- held text -> { st =, n = placeholders, busy =, nm = names, ctl = } (hold)
    nheld = 0,
  }, Conn)
  -- The sqlite3 handle, read by write() only after a checkout (which fails once closed).
  self.db = C.zv_sqlite_ffi_db(self.ptr)
  return self
end

return M
