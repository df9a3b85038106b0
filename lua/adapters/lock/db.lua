-- adapters.lock.db: leases in a table of the app's database (SQLite or PostgreSQL), exclusive
-- across every process that uses the database. No setup: the table is created on first use.
--
--   local impl = ldb.new(db, { table = "lock_leases", clock = nil, horizon = 86400,
--                              sweep_interval = 60, sweep_batch = 500 })
--   impl:acquire(key, ttl)        -> fence, token | false | nil, err   (valid arguments)
--   impl:extend(key, token, ttl)  -> true | false | nil, err
--   impl:unlock(key, token)       -> true | false | nil, err
--   impl:holder(key)              -> fence, ttl_left | false | nil, err
--   impl:sweep([now])             -> removed   rows free for longer than horizon, one batch
--   ldb.open(section, ctx)        -> impl over ctx:get("db") (the adapter contract)
--
--   lock_leases: key BLOB/bytea PRIMARY KEY, token TEXT, fence INTEGER, expires_at REAL
--
-- acquire is ONE statement, INSERT ... ON CONFLICT (key) DO UPDATE ... WHERE expires_at <= now
-- RETURNING fence: it inserts the key's row or takes over a free or expired one, and returns no
-- row when a live lease holds the key (the database's row lock orders concurrent callers, so
-- two never both win). extend and unlock are one UPDATE each, guarded by the owner token and
-- the expiry; unlock keeps the row (expires_at 0) so the fence carries on. The fence is
-- max(previous fence + 1, now in microseconds): it grows on every lease of a key, even after
-- the sweep deleted the key's row. Time is wall-clock seconds (processes share it); clock is
-- for specs. A database failure is nil, err with code "unavailable".

local db_table = require "adapters.db_table"

local format, floor, setmetatable = string.format, math.floor, setmetatable

local M = {}

local SCHEMA = {
  sqlite = [[
CREATE TABLE IF NOT EXISTS "%s" (
  "key" BLOB PRIMARY KEY,
  token TEXT NOT NULL,
  fence INTEGER NOT NULL,
  expires_at REAL NOT NULL
)]],
  postgres = [[
CREATE TABLE IF NOT EXISTS "%s" (
  "key" bytea PRIMARY KEY,
  token text NOT NULL,
  fence bigint NOT NULL,
  expires_at double precision NOT NULL
)]],
}

local function statements(t, dialect)
  local greatest = dialect == "postgres" and "GREATEST" or "MAX"
  return {
    acquire = format('INSERT INTO "%s" ("key", token, fence, expires_at) VALUES (?, ?, ?, ?) '
      .. 'ON CONFLICT ("key") DO UPDATE SET token = excluded.token, '
      .. 'fence = %s("%s".fence + 1, excluded.fence), expires_at = excluded.expires_at '
      .. 'WHERE "%s".expires_at <= ? RETURNING fence', t, greatest, t, t),
    extend = format('UPDATE "%s" SET expires_at = ? WHERE "key" = ? AND token = ? '
      .. "AND expires_at > ?", t),
    unlock = format('UPDATE "%s" SET expires_at = 0 WHERE "key" = ? AND token = ? '
      .. "AND expires_at > ?", t),
    holder = format('SELECT fence, expires_at FROM "%s" WHERE "key" = ? AND expires_at > ?', t),
    sweep = format('DELETE FROM "%s" WHERE "key" IN (SELECT "key" FROM "%s" '
      .. "WHERE expires_at <= ? LIMIT ?)", t, t),
  }
end

local fail = db_table.failer("lock")
local now_of = db_table.now

local D = {}
D.__index = D

function D:sweep(now)
  local ready, why = db_table.ensure(self, fail)
  if not ready then return nil, why end
  local r, err = self.db:exec(self.sql.sweep, (now or now_of(self)) - self.horizon,
    self.sweep_batch)
  if not r then return fail(err) end
  return r.changes
end

function D:acquire(key, ttl)
  local ready, why = db_table.ensure(self, fail)
  if not ready then return nil, why end
  local now = now_of(self)
  self.count = self.count + 1
  local token = self.owner .. self.count
  local b = self.binds
  b[1], b[2], b[3], b[4], b[5], b.n = self.blob(key), token, floor(now * 1e6), now + ttl, now, 5
  local row, err = self.db:first(self.sql.acquire, b)
  if err then return fail(err) end
  if not row then return false end
  if db_table.due(self, now) then self:sweep(now) end
  return row.fence, token
end

function D:extend(key, token, ttl)
  local ready, why = db_table.ensure(self, fail)
  if not ready then return nil, why end
  local now = now_of(self)
  local r, err = self.db:exec(self.sql.extend, now + ttl, self.blob(key), token, now)
  if not r then return fail(err) end
  return r.changes == 1
end

function D:unlock(key, token)
  local ready, why = db_table.ensure(self, fail)
  if not ready then return nil, why end
  local r, err = self.db:exec(self.sql.unlock, self.blob(key), token, now_of(self))
  if not r then return fail(err) end
  return r.changes == 1
end

function D:holder(key)
  local ready, why = db_table.ensure(self, fail)
  if not ready then return nil, why end
  local now = now_of(self)
  local row, err = self.db:first(self.sql.holder, self.blob(key), now)
  if err then return fail(err) end
  if not row then return false end
  return row.fence, row.expires_at - now
end

function D.close()
  return true   -- the database is the app's: the container closes it
end

-- db: a zever.db handle (the caller keeps owning it). opts: table ("lock_leases"), clock,
-- horizon (seconds a free row is kept, 86400), sweep_interval (60), sweep_batch (500).
function M.new(db, opts)
  opts = opts or {}
  local self = db_table.new("lock.db", db, opts,
    { table = "lock_leases", sweep_interval = 60, sweep_batch = 500 })
  local horizon = opts.horizon or 86400
  if type(horizon) ~= "number" or horizon ~= horizon or horizon < 0 then
    error("lock.db: horizon must be a number of seconds >= 0", 2)
  end
  local dialect = db_table.dialect(self.db)
  self.sql = statements(self.table, dialect)
  self.schema = { format(SCHEMA[dialect], self.table) }   -- a list: PG takes the schema lock
  self.horizon = horizon
  self.owner, self.count = db_table.token_prefix(), 0
  self.blob = db_table.blob(self.db)
  return setmetatable(self, D)
end

-- The adapter contract: section is the config's lock section; the database is the app's.
M.open = db_table.opener(M.new, function(section)
  return { table = section.table ~= "" and section.table or nil, horizon = section.horizon }
end)

return M
