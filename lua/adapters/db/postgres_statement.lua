-- adapters.db.postgres_statement: the statement path of adapters.db.postgres on one raw
-- connection (a pool's member, postgres_pool.lua): the binds put into the FFI send's buffers,
-- the send (zv_pgconn_send, or zever.pg's classic conn:send/conn:pipeline), the wait, the LRU of
-- prepared statements and the pipelines that save round trips (a statement not yet prepared, a
-- transaction's held-back BEGIN). What comes back is decoded by the caller (postgres_decode.lua).
--
--   st.execute(raw, sql, binds, n) -> true, op, node | nil, code, message, fields
--   st.run(raw, mode, sql, binds, n[, name]) -> true | nil, code, message, fields
--   st.run_pipeline(raw, ops, n) -> true | nil, code, message;  st.op_error(raw, i)
--   st.add_statement(raw, ops, k, sql, binds, n, fresh);  st.register(raw, news)
--
-- Split out of adapters/db/postgres.lua by phase (#16). It must not acquire or release a
-- connection (the caller holds raw for the whole call) nor decode rows; a connection that
-- fails here is marked raw.broken, and the pool drops it on release.

local ffi = require "ffi"
local sched = require "zever.sched"
local sys = require "zever.sys"
local pgdecode = require "adapters.db.postgres_decode"

require "zever.cdef.pg"

local type, error, find = type, error, string.find
local await, token_of = sched.await, sched.token
local C = ffi.C
local ffi_string = ffi.string
local E_INVAL, E_NOMEM = sys.E.INVAL, sys.E.NOMEM
local server_error = pgdecode.server_error

local M = {}

-- --- sending ------------------------------------------------------------------------------

-- The text parameters of a statement sent through the FFI (zv_pgconn_send): one set of buffers
-- for the worker, filled before each send and copied by zv_pgconn_send. Strings are passed as
-- they are (the binds table keeps them alive), numbers as doubles in NUMS with a negative
-- length (formatted in C, as conn:send formats them). Statements with more binds go through
-- conn:send (the classic API).
local MAX_FFI_BINDS = 16 -- pg_ffi.h's ZV_PG_FFI_BINDS
local VALUES = ffi.new("const char *[?]", MAX_FFI_BINDS)
local LENS = ffi.new("int[?]", MAX_FFI_BINDS)
local NUMS = ffi.new("double[?]", MAX_FFI_BINDS)
-- pg_ffi.h's ZV_PG_SEND_SIMPLE, ZV_PG_SEND_PARAMS, ZV_PG_SEND_PREPARED
local SEND_SIMPLE, SEND_PARAMS, SEND_PREPARED = 0, 1, 3
local FFI_MODE = { simple = SEND_SIMPLE, params = SEND_PARAMS, prepared = SEND_PREPARED }

-- Puts bind i (0-based) of a checked list (check_binds: a string, number, boolean, nil or
-- NULL) into VALUES/LENS/NUMS.
local function put_bind(i, v)
  local t = type(v)
  if t == "string" then
    VALUES[i], LENS[i] = v, #v
  elseif t == "number" then
    NUMS[i], LENS[i] = v, -1
  elseif t == "boolean" then
    VALUES[i], LENS[i] = v and "t" or "f", 1
  else -- nil or NULL
    VALUES[i], LENS[i] = nil, 0
  end
end

-- Sends one statement (after pre, SQL without binds, in one pipeline when given) through the
-- FFI and makes token its waiter: true | nil, code, message.
local function send_ffi(raw, mode, pre, text, binds, n, token)
  if n <= 4 then -- without a loop, as check_binds
    if n >= 1 then put_bind(0, binds[1]) end
    if n >= 2 then put_bind(1, binds[2]) end
    if n >= 3 then put_bind(2, binds[3]) end
    if n >= 4 then put_bind(3, binds[4]) end
  else
    for i = 1, n do put_bind(i - 1, binds[i]) end
  end
  local rc = C.zv_pgconn_send(raw.cp, mode, pre, text, n, VALUES, LENS, NUMS)
  if rc ~= 0 then
    if rc == E_INVAL then error("pg: a statement is already running on this connection", 0) end
    if rc == E_NOMEM then error("pg: out of memory", 0) end
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
    ok, code, message = send_ffi(raw, fm, nil, fm == SEND_PREPARED and name or sql, binds, n, token)
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
  elseif n <= MAX_FFI_BINDS and (n == 0 and not find(sql, ";", 1, true) or raw.max_stmts <= 0 or
      raw.stmts[sql]) then
    -- A transaction's first statement, without binds or already prepared (or never, with no
    -- LRU): [BEGIN, the statement] in one round trip, one FFI send (zv_pgconn_send's pre).
    local node = n > 0 and raw.max_stmts > 0 and raw.stmts[sql] or nil
    raw.pending = nil
    local token = token_of()
    local ok, code, message
    if node then
      lru_touch(raw, node)
      ok, code, message = send_ffi(raw, SEND_PREPARED, pre, node.name, binds, n, token)
    else
      ok, code, message = send_ffi(raw, SEND_PARAMS, pre, sql, binds, n, token)
    end
    if ok then ok, code, message = await(token) end
    if not ok then
      raw.broken = true
      return nil, code, message
    end
    local fields
    code, message, fields = op_error(raw, 1)
    if not code then code, message, fields = op_error(raw, 2) end
    if code then return nil, code, message, fields end
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

M.run, M.execute, M.run_pipeline, M.op_error, M.add_statement, M.register = run, execute,
  run_pipeline, op_error, add_statement, register

return M
