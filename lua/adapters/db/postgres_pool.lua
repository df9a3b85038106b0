-- adapters.db.postgres_pool: the connection life of adapters.db.postgres: raw connections
-- opened (with a backoff after a failed connect), handed out and taken back (FIFO waiters when
-- all are busy), checked before reuse, and closed when they broke, sat idle too long
-- (idle_timeout) or lived too long (max_lifetime).
--
--   pool.new(uri, options, opts) -> pool        (opts: db.open's, checked; nothing connects)
--   pool.acquire(pool) -> raw | nil, code, message   (waits when all pool_size are busy)
--   pool.release(pool, raw)                     to the first waiter, idle, or closed if broken
--   pool.connect(pool) -> raw | nil, code, message    one new raw connection (the listener's)
--   pool.close_raw(raw);  pool.close(pool)      the pool's idle ones, its timer and waiters
--
--   raw = { h = zever.pg conn, pg = its zv_pg_t *, cp = its zv_pgconn_t *, slot (the FFI
--           send's waiter), born, used, released, broken, pinned, pending, stmts (the LRU of
--           postgres_statement.lua), ... }
--
-- Split out of adapters/db/postgres.lua by phase (#16). It must not send statements (the
-- statement path is postgres_statement.lua) and never closes a connection someone holds.

local ffi = require "ffi"
local pg = require "zever.pg"
local sched = require "zever.sched"
local loop = require "zever.loop"

require "zever.cdef.pg"
require "zever.cdef.sys"

local type, setmetatable, error = type, setmetatable, error
local await, token_of, complete = sched.await, sched.token, sched.complete
local C = ffi.C
local now = C.zv_sys_clock -- sys.now's clock, read without a classic call
local pg_ptr, pgconn_ptr = ffi.typeof("zv_pg_t *"), ffi.typeof("zv_pgconn_t *")

local M = {}

local Raw = {}
Raw.__index = Raw

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
local function acquire_slow(pool)
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

-- acquire's common case, the last released connection still usable, without acquire_slow's
-- loops: a loop on the statement path would start traces of its own and cut the caller's
-- (LuaJIT: "inner loop in root trace").
local function acquire(pool)
  if pool.closed then return nil, "closed", "the database is closed" end
  local n = pool.nidle
  if n > 0 then
    local raw = pool.idle[n]
    pool.idle[n] = nil
    pool.nidle = n - 1
    if usable(pool, raw) then
      pool.busy = pool.busy + 1
      return raw
    end
    close_raw(raw)
    pool.open = pool.open - 1
  end
  return acquire_slow(pool)
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

-- An option in seconds: v, or default when nil; raises at level (error's) when it is not a
-- non-negative number.
local function seconds(v, name, default, level)
  if v == nil then return default end
  if type(v) ~= "number" or v < 0 then
    error("db.open: " .. name .. " must be a non-negative number of seconds", level)
  end
  return v
end
M.seconds = seconds

-- target: "//user:pw@host:port/db?..." (the part after "postgres:"). Returns conn | nil, code,

-- A pool of size connections for uri (a libpq URI) with the libpq options text and db.open's
-- opts (statements, idle_timeout, max_lifetime, connect_timeout, numeric, clock). Raises on a
-- bad option (blamed on the adapter's open's caller's caller, as open itself does); nothing
-- connects yet.
function M.new(uri, options, size, opts)
  local pool = setmetatable({
    uri = uri,
    options = options,
    size = size,
    idle_timeout = seconds(opts.idle_timeout, "idle_timeout", 300, 5),
    max_lifetime = seconds(opts.max_lifetime, "max_lifetime", 3600, 5),
    connect_timeout = seconds(opts.connect_timeout, "connect_timeout", 10, 5),
    max_stmts = opts.statements or 256,
    decode_opts = { numeric_number = opts.numeric == "number" },
    idle = {}, nidle = 0, open = 0, busy = 0,
    waiters = { first = 1, last = 0 },
    backoff = 0, next_try = 0, connects = 0, failures = 0, statements = 0, listener_connects = 0,
    channels = {}, idle_closed = 0,
  }, Pool)
  local clock = opts.clock or LOOP_CLOCK
  if type(clock) ~= "table" or type(clock.now) ~= "function" or type(clock.timer) ~= "function" then
    error("db.open: clock must be a table with now and timer functions", 4)
  end
  pool.now = clock.now
  pool.real_clock = clock == LOOP_CLOCK -- pool.now() is now(): read it once where both are due
  if pool.idle_timeout > 0 or pool.max_lifetime > 0 then
    pool.timer = clock.timer(function() sweep_idle(pool) end)
  end
  return pool
end

-- Closes the pool: its timer, its idle connections (busy ones are closed when given back), and
-- its waiters (each completes with nil: "closed").
function M.close(pool)
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
end

M.connect, M.close_raw, M.acquire, M.release = connect, close_raw, acquire, release

return M
