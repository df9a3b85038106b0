-- adapters.idempotency.db: the idempotency store in a table of the app's database, shared by
-- every process that uses the database (`zever serve` workers, other machines on PostgreSQL
-- later). No setup: the table is created on first use.
--
--   local impl = idb.new(db, { table = "idempotency_keys", clock = nil, sweep_interval = 60,
--                              sweep_batch = 500 })
--   impl:begin(key, fp, ttl, pending_ttl) / complete(key, result, token) / forget(key, token)
--   impl:close()                  (valid arguments: zever.idempotency checks them)
--   impl:sweep([now])  -> removed  deletes at most sweep_batch expired rows (one statement)
--   impl:ensure()      -> true | nil, err   CREATE TABLE IF NOT EXISTS (run by the first call)
--   idb.open(section, ctx)        -> a zever.idempotency over ctx:get("db") (the factory)
--
--   idempotency_keys: key BLOB PRIMARY KEY, fingerprint BLOB, state (0 pending, 1 complete),
--                     token TEXT, ttl REAL, kind INTEGER, result BLOB, expires_at REAL
--
-- begin reads the row first (a replay, a pending key or a mismatch is one SELECT; the
-- fingerprint is checked before the state). An absent or expired row is reserved by one
-- statement, INSERT ... ON CONFLICT (key) DO UPDATE ... WHERE expires_at <= now: it inserts a
-- new row or takes over an expired one, and changes nothing when another process reserved the
-- key in between (then begin reads again). complete is one UPDATE guarded by state, expiry
-- and token; forget one DELETE (guarded by the token when given). Tokens are strings unique to
-- this process (pid, address, start time, counter). Keys and fingerprints are bound as BLOBs,
-- so any bytes compare exactly. Time is wall-clock seconds (processes share it); clock is for
-- specs. Expired rows are overwritten when their key is begun again, and deleted in bounded
-- batches by a sweep that a reservation runs at most once per sweep_interval. A database
-- failure is nil, err with code "unavailable" (the middleware then answers 503).

local errors = require "zever.errors"
local db_table = require "adapters.db_table"
local result_codec = require "adapters.idempotency_result"

local type, format, setmetatable = type, string.format, setmetatable

local M = {}

local SCHEMA = {
  sqlite = [[
CREATE TABLE IF NOT EXISTS "%s" (
  "key" BLOB PRIMARY KEY,
  fingerprint BLOB NOT NULL,
  state INTEGER NOT NULL,
  token TEXT NOT NULL,
  ttl REAL NOT NULL,
  kind INTEGER,
  result BLOB,
  expires_at REAL NOT NULL
)]],
  -- A logged table on purpose, unlike the cache's: see docs/idempotency.md (a crash must not
  -- forget which requests already ran).
  postgres = [[
CREATE TABLE IF NOT EXISTS "%s" (
  "key" bytea PRIMARY KEY,
  fingerprint bytea NOT NULL,
  state integer NOT NULL,
  token text NOT NULL,
  ttl double precision NOT NULL,
  kind integer,
  result bytea,
  expires_at double precision NOT NULL
)]],
}

local function schema(dialect, t)
  return { format(SCHEMA[dialect], t),
    format('CREATE INDEX IF NOT EXISTS "%s_expires" ON "%s" (expires_at)', t, t) }
end
M.schema = schema

-- The statements read the same on both dialects (zever.db's postgres adapter numbers the ?).
local function statements(t)
  return {
    read = format('SELECT fingerprint, state, kind, result, expires_at FROM "%s" WHERE "key" = ?',
      t),
    reserve = format('INSERT INTO "%s" ("key", fingerprint, state, token, ttl, expires_at) '
      .. "VALUES (?, ?, 0, ?, ?, ?) ON CONFLICT (\"key\") DO UPDATE SET "
      .. "fingerprint = excluded.fingerprint, state = 0, token = excluded.token, "
      .. "ttl = excluded.ttl, kind = NULL, result = NULL, expires_at = excluded.expires_at "
      .. 'WHERE "%s".expires_at <= ?', t, t),
    complete = format('UPDATE "%s" SET state = 1, kind = ?, result = ?, expires_at = ? + ttl '
      .. 'WHERE "key" = ? AND state = 0 AND expires_at > ?', t),
    complete_token = format('UPDATE "%s" SET state = 1, kind = ?, result = ?, '
      .. 'expires_at = ? + ttl WHERE "key" = ? AND state = 0 AND expires_at > ? AND token = ?', t),
    why = format('SELECT state, token FROM "%s" WHERE "key" = ? AND expires_at > ?', t),
    forget = format('DELETE FROM "%s" WHERE "key" = ?', t),
    forget_token = format('DELETE FROM "%s" WHERE "key" = ? AND token = ?', t),
    sweep = format('DELETE FROM "%s" WHERE "key" IN (SELECT "key" FROM "%s" '
      .. "WHERE expires_at <= ? LIMIT ?)", t, t),
  }
end

M.statements = statements

local BUSY = errors.new("idempotency", "in_progress", "the key changed hands while it was reserved")

local encode, decode = result_codec.encode, result_codec.decode
local IN_PROGRESS, KEY_MISMATCH = result_codec.IN_PROGRESS, result_codec.KEY_MISMATCH
local COMPLETED, NO_RESERVATION = result_codec.COMPLETED, result_codec.NO_RESERVATION
local fail = db_table.failer("idempotency")
local now_of = db_table.now

local D = {}
D.__index = D

function D:ensure()
  return db_table.ensure(self, fail)
end

-- Deletes at most sweep_batch rows that expired before now; returns how many.
function D:sweep(now)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local r, derr = self.db:exec(self.sql.sweep, now or now_of(self), self.sweep_batch)
  if not r then return fail(derr) end
  return r.changes
end

function D:begin(key, fp, ttl, pending)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local db, sql, blob = self.db, self.sql, self.blob
  local bkey = blob(key)
  local now = now_of(self)
  -- Two rounds: a reservation lost to another process is read back once.
  for _ = 1, 2 do
    local row, err = db:first(sql.read, bkey)
    if err then return fail(err) end
    if row and row.expires_at > now then
      if row.fingerprint ~= fp then return nil, KEY_MISMATCH end
      if row.state == 0 then return nil, IN_PROGRESS end
      return { replay = true, result = decode(row.result, row.kind) }
    end
    self.claims = self.claims + 1
    local token = self.worker .. self.claims
    local b = self.binds
    b[1], b[2], b[3], b[4], b[5], b[6], b.n = bkey, blob(fp), token, ttl, now + pending, now, 6
    local r, ierr = db:exec(sql.reserve, b)
    if not r then return fail(ierr) end
    if r.changes == 1 then
      if db_table.due(self, now) then self:sweep(now) end
      return { replay = false, token = token }
    end
  end
  return nil, BUSY
end

function D:complete(key, result, token)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local raw, kind = encode(result)
  local db, sql = self.db, self.sql
  local bkey, now = self.blob(key), now_of(self)
  local b = self.binds
  local tok = type(token) == "string" and token ~= "" and token or nil
  b[1], b[2], b[3], b[4], b[5], b[6], b.n = kind, self.blob(raw), now, bkey, now, tok, tok and 6 or 5
  local r, err = db:exec(tok and sql.complete_token or sql.complete, b)
  b[2] = nil   -- do not pin a large result
  if not r then return fail(err) end
  if r.changes == 1 then return true end
  if token ~= nil and not tok then return nil, NO_RESERVATION end
  local row, rerr = db:first(sql.why, bkey, now)
  if rerr then return fail(rerr) end
  if row and row.state == 1 and (not tok or row.token == tok) then return nil, COMPLETED end
  return nil, NO_RESERVATION
end

function D:forget(key, token)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local r, err
  if type(token) == "string" and token ~= "" then
    r, err = self.db:exec(self.sql.forget_token, self.blob(key), token)
  elseif token ~= nil then
    return true   -- a token this store never handed out holds nothing
  else
    r, err = self.db:exec(self.sql.forget, self.blob(key))
  end
  if not r then return fail(err) end
  return true
end

function D:close()
  self.closed = true   -- the database is the app's: the container closes it
  return true
end

-- db: a zever.db handle (the caller keeps owning it). opts: table ("idempotency_keys"), clock
-- (a function returning seconds; specs), sweep_interval (60 s), sweep_batch (500).
function M.new(db, opts)
  local self = db_table.new("idempotency.db", db, opts,
    { table = "idempotency_keys", sweep_interval = 60, sweep_batch = 500 })
  local t = self.table
  self.sql, self.schema = statements(t), schema(db_table.dialect(self.db), t)
  self.claims, self.worker = 0, db_table.token_prefix()
  self.blob = db_table.blob(self.db)
  self.closed = false
  return setmetatable(self, D)
end

-- The adapter contract: section is the config's idempotency section; the database is the
-- app's.
function M.open(_, ctx)
  local db, err = ctx:get("db")
  if not db then return nil, err end
  return M.new(db)
end

return M
