-- adapters.lock.postgres: leases as PostgreSQL session-level advisory locks, exclusive across
-- every process that uses the database with the same prefix. No table: the server's lock
-- manager holds the lock, and ends it by itself when the session that holds it ends (a process
-- that crashed, a connection that broke, pg_terminate_backend).
--
--   local impl = plock.new(dsn, { prefix = "zever:lock:", sequence = "zever_lock_fence",
--                                 clock = nil })
--   impl:acquire(key, ttl)        -> fence, token | false | nil, err   (valid arguments)
--   impl:extend(key, token, ttl)  -> true | false | nil, err
--   impl:unlock(key, token)       -> true | false | nil, err
--   impl:holder(key)              -> fence, ttl_left | false | nil, err
--   impl:close()                  -> true: ends the session, and with it every lock it held
--   plock.open(section, ctx)      -> impl on the DSN of ctx:get("db") (the adapter contract)
--
-- The session. The adapter opens a database of its own on the DSN with one connection (pool
-- size 1, no idle or lifetime limit): the session that holds its locks. Every statement of the
-- adapter goes through it, one at a time in FIFO order (the pool's waiters), so a worker holds
-- one server connection per lock table, whatever the number of leases. When that connection
-- breaks, the pool opens a new one on the next statement; the adapter sees it by the pool's
-- connect count and forgets every lease of the old session (the server already ended them):
-- their extend and unlock return false ("not_held").
--
-- The key: the advisory lock's bigint is the first 8 bytes of SHA-256(prefix .. key), read
-- big-endian as a signed 64-bit integer, so any client can compute it:
--   SELECT ('x' || left(encode(sha256('zever:lock:report:7'::bytea), 'hex'), 16))::bit(64)::bigint
-- Two keys whose hashes collide exclude each other (never two holders; a 2^-64 false "busy").
--
-- acquire is ONE statement:
--   SELECT CASE WHEN pg_try_advisory_lock($1) THEN nextval('<sequence>') ELSE 0 END AS fence
-- The fence comes from one sequence (created on first use, IF NOT EXISTS, under a transaction
-- advisory lock as every table of db_table), so it grows with every lease of every key and
-- process. An advisory lock is re-entrant within its session, so the adapter keeps the leases
-- of its session in a table (key -> token, fence, deadline) and answers "held" for a key it
-- holds, or is taking, without asking the server: two coroutines of one worker never share a
-- lock. The token is unique to this adapter object (pid, address, start time, count).
--
-- ttl: advisory locks have no expiry, so the adapter keeps the deadline. A lease whose ttl
-- passed without an extend is released (pg_advisory_unlock) by a timer of the adapter's loop
-- at its deadline, and by any call that meets it first; from then on its extend and unlock
-- return false. A holder whose process dies loses its leases at once, not after ttl. extend
-- is one statement that asks pg_locks whether the session still holds the lock (a broken
-- session answers false, not a stale true). unlock is one pg_advisory_unlock: it only ever
-- releases this session's own lock, never another holder's.
--
-- holder(key) answers from the table for this adapter's leases; for a lock another session
-- holds it asks pg_locks, which knows that the key is held but not that holder's fence or
-- deadline: it returns 0 and math.huge then. A database failure is nil, err with code
-- "unavailable". Argument checks belong to the front-end.

local zdb = require "zever.db"
local crypto = require "zever.crypto"
local loop = require "zever.loop"
local sched = require "zever.sched"
local sys = require "zever.sys"
local db_table = require "adapters.db_table"
local errors = require "zever.errors"
local ffi = require "ffi"

local byte, format, huge, setmetatable, pairs, type, error, tostring =
  string.byte, string.format, math.huge, setmetatable, pairs, type, error, tostring

local M = {}

local fail = db_table.failer("lock")

local U64 = ffi.typeof("uint64_t")
local I64 = ffi.typeof("int64_t")

-- The advisory lock of s: the int64 key, and its high and low 32 bits as pg_locks shows them
-- (classid, objid).
local function lock_key(s)
  local d = crypto.digest("sha256", s)
  local b1, b2, b3, b4, b5, b6, b7, b8 = byte(d, 1, 8)
  local hi = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
  local lo = ((b5 * 256 + b6) * 256 + b7) * 256 + b8
  return ffi.cast(I64, ffi.cast(U64, hi) * 4294967296ULL + lo), hi, lo
end
M.lock_key = lock_key

local function quote_ident(s)
  return '"' .. s:gsub('"', '""') .. '"'
end

local function statements(seq)
  return {
    acquire = format("SELECT CASE WHEN pg_try_advisory_lock(?::bigint) THEN nextval('%s') "
      .. "ELSE 0 END AS fence", quote_ident(seq):gsub("'", "''")),
    unlock = "SELECT pg_advisory_unlock(?::bigint) AS ok",
    mine = "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' "
      .. "AND pid = pg_backend_pid() AND classid = ?::bigint::oid AND objid = ?::bigint::oid "
      .. "AND objsubid = 1 AND granted",
    held = "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' "
      .. "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
      .. "AND classid = ?::bigint::oid AND objid = ?::bigint::oid AND objsubid = 1 AND granted",
  }
end

-- The lease being taken: a key in the table that is not a lease yet (see acquire).
local TAKING = { token = false, expires = huge }

local P = {}
P.__index = P

-- The pool's connect count: it changes when the session's connection was replaced.
local function generation(self)
  return self.db:pool_stats().connects
end

-- After a statement: when it ran on a new session, every lease of the old one is gone (the
-- server released them when that session ended). keep: the key just taken on the new one.
local function check_session(self, keep)
  local gen = generation(self)
  if gen == self.gen then return true end
  self.gen = gen
  local leases = self.leases
  for k in pairs(leases) do
    if k ~= keep and leases[k] ~= TAKING then
      leases[k] = nil
      self.lost = self.lost + 1
    end
  end
  return false
end

local arm

-- Releases the server lock of an ended lease l (its entry is already gone). A failure leaves
-- the lock to the session's end: nobody else could hold it meanwhile.
local function release(self, l)
  local row, err = self.db:first(self.sql.unlock, l.k)
  if row then check_session(self) end
  return row, err
end

-- Ends the leases of the table whose deadline passed: at the timer, or when a call meets one.
local function expire(self, now)
  local leases, ended = self.leases, nil
  for key, l in pairs(leases) do
    if l ~= TAKING and l.expires <= now then
      leases[key] = nil
      ended = ended or {}
      ended[#ended + 1] = l
    end
  end
  if ended then
    self.expired = self.expired + #ended
    for i = 1, #ended do release(self, ended[i]) end
  end
  arm(self)
end

-- Arms the timer for the earliest deadline in the table (on the adapter's clock).
function arm(self)
  local first
  for _, l in pairs(self.leases) do
    if l ~= TAKING and (not first or l.expires < first) then first = l.expires end
  end
  local tm = self.timer
  if not tm then return end
  if not first then
    tm:stop()
    self.timer_at = nil
    return
  end
  if self.timer_at == first then return end
  self.timer_at = first
  local wait = first - self.now()
  tm:start(wait > 0 and wait or 0)
end

local function ready(self)
  if self.ready then return true end
  return db_table.ensure(self, fail)
end

function P:acquire(key, ttl)
  local leases = self.leases
  local now = self.now()
  local l = leases[key]
  if l then
    if l == TAKING or l.expires > now then return false end
    expire(self, now)   -- the table's lease on key ran out: release it first
  end
  -- From here on a second coroutine of this adapter must not re-enter the lock: the first
  -- statements wait (the sequence's creation, the pool), and the lock is re-entrant.
  leases[key] = TAKING
  local ok, why = ready(self)
  if not ok then
    leases[key] = nil
    return nil, why
  end
  local k, hi, lo = lock_key(self.prefix .. key)
  local row, err = self.db:first(self.sql.acquire, k)
  leases[key] = nil
  if not row then return fail(err) end
  check_session(self, key)
  local fence = row.fence
  if fence == 0 then return false end
  self.count = self.count + 1
  local token = self.owner .. self.count
  leases[key] = { token = token, fence = fence, expires = self.now() + ttl, k = k, hi = hi,
    lo = lo }
  arm(self)
  return fence, token
end

-- The lease of key with token in the table, or nil (ended, lost, or another holder's).
local function own(self, key, token)
  local l = self.leases[key]
  if not l or l.token ~= token then return nil end
  local now = self.now()
  if l.expires <= now then
    expire(self, now)
    return nil
  end
  return l
end

function P:extend(key, token, ttl)
  local l = own(self, key, token)
  if not l then return false end
  local row, err = self.db:first(self.sql.mine, l.hi, l.lo)
  if not row then return fail(err) end
  if not check_session(self) or row.n == 0 then
    if self.leases[key] == l then self.leases[key] = nil end
    return false
  end
  if self.leases[key] ~= l then return false end   -- expired while the statement ran
  l.expires = self.now() + ttl
  arm(self)
  return true
end

function P:unlock(key, token)
  local l = own(self, key, token)
  if not l then return false end
  self.leases[key] = nil
  arm(self)
  local row, err = release(self, l)
  if not row then return fail(err) end
  -- false: the session that held the lock had ended (the server released it with it), and
  -- this unlock ran on the new one.
  return row.ok == true
end

function P:holder(key)
  local now = self.now()
  local l = self.leases[key]
  if l and l ~= TAKING then
    if l.expires > now then return l.fence, l.expires - now end
    expire(self, now)
  end
  local _, hi, lo = lock_key(self.prefix .. key)
  local row, err = self.db:first(self.sql.held, hi, lo)
  if not row then return fail(err) end
  if row.n == 0 then return false end
  return 0, huge   -- another session's lease: its fence and deadline are not visible here
end

function P:stats()
  local n = 0
  for _, l in pairs(self.leases) do if l ~= TAKING then n = n + 1 end end
  return { held = n, lost = self.lost, expired = self.expired }
end

function P:close()
  if self.closed then return true end
  self.closed = true
  if self.timer then
    self.timer:close()
    self.timer = nil
  end
  self.leases = {}
  self.db:close()   -- the session ends: the server releases every lock it held
  return true
end

-- target: a PostgreSQL DSN ("postgres://...") or a zever.db on one (its DSN is used: the
-- adapter opens its own session and never uses the given pool). opts: prefix ("zever:lock:"),
-- sequence ("zever_lock_fence"), clock (a function returning seconds: specs), connect_timeout.
-- nil, err ("unavailable") when the server cannot be reached.
function M.new(target, opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("lock.postgres: opts must be a table", 2) end
  local dsn = type(target) == "table" and target.dsn or target
  if type(dsn) ~= "string" or not (dsn:find("^postgres://") or dsn:find("^postgresql://")) then
    error("lock.postgres: expects a postgres:// DSN or a zever.db on one", 2)
  end
  local prefix, seq = opts.prefix or "zever:lock:", opts.sequence or "zever_lock_fence"
  if type(prefix) ~= "string" then error("lock.postgres: prefix must be a string", 2) end
  if type(seq) ~= "string" or seq == "" then
    error("lock.postgres: sequence must be a non-empty name", 2)
  end
  if opts.clock ~= nil and type(opts.clock) ~= "function" then
    error("lock.postgres: clock must be a function returning seconds", 2)
  end
  local db, err = zdb.open(dsn, { pool_size = 1, idle_timeout = 0, max_lifetime = 0,
    connect_timeout = opts.connect_timeout })
  if not db then
    return nil, errors.new("lock", "unavailable", "db: " .. tostring(err and err.message or err))
  end
  db = db:try_handle()
  local self = setmetatable({
    db = db, prefix = prefix, table = seq, sql = statements(seq),
    schema = { format("CREATE SEQUENCE IF NOT EXISTS %s", quote_ident(seq)) },
    ready = false, leases = {}, count = 0, owner = db_table.token_prefix(),
    now = opts.clock or sys.wall, lost = 0, expired = 0, closed = false,
  }, P)
  self.gen = generation(self)
  self.timer = loop.timer(function()
    self.timer_at = nil
    if not self.closed then sched.spawn(expire, self, self.now()) end
  end)
  self.timer:unref()   -- a script whose work is done does not wait for a lease's deadline
  return self
end

-- The adapter contract: the session is on the app's database (db.dsn: a postgres:// one).
function M.open(section, ctx)
  local db, err = ctx:get("db")
  if not db then return nil, err end
  if db.dialect ~= "postgres" then
    return nil, errors.new("lock", "invalid", "lock: the postgres adapter needs db.dsn to be "
      .. "a postgres:// database")
  end
  return M.new(db, { prefix = section.prefix ~= "" and section.prefix or nil,
    sequence = section.sequence ~= "" and section.sequence or nil })
end

return M
