-- adapters.cache.db: the cache in a table of the app's database, shared by every process that
-- opens the database (`zever serve`, `zever worker`, a script). No eviction: the table holds what
-- it is given until a key expires or is deleted; expired rows are swept in bounded batches.
--
--   local impl = dbc.new(db, { table = "cache_entries", prefix = "", clock = nil,
--                              sweep_interval = 60, sweep_batch = 100 })
--   impl:get(k) / set(k, v, ttl, add) / delete(k) / incr(k, n, ttl) / exists(k) / close()
--                              (valid arguments: zever.cache checks them)
--   impl:sweep([max_rows]) -> removed, more     deletes expired rows, at most max_rows
--   impl:ensure()          -> true | nil, err   CREATE TABLE IF NOT EXISTS (the first call runs it)
--   dbc.open(section, ctx) -> impl over ctx:get("db") (the adapter contract)
--
--   cache_entries: key TEXT PRIMARY KEY, kind INTEGER, value (any), expires_at REAL
--                  (0 = never), WITHOUT ROWID; a partial index on expires_at > 0 for the sweep
--
-- A value keeps its type in `kind` (1 string, 2 number, 3 boolean, 4 JSON text); numbers are
-- stored as SQLite numbers so incr is one statement: an INSERT ... ON CONFLICT DO UPDATE whose
-- WHERE lets it add only to a number (or replace an expired row) and whose RETURNING gives the
-- sum; no row back means the live value is not a number. add is the same upsert guarded by
-- "the row there has expired", so an expired key is re-claimed without a read first. Time is
-- wall-clock seconds (processes share it); clock is for specs (a function returning seconds).
-- Writes run a sweep of at most sweep_batch rows once per sweep_interval, so there is no timer.
-- This file must not evict live rows nor cache anything in the process.

local errors = require "zever.errors"
local zdb = require "zever.db"
local json = require "zever.json"
local db_table = require "adapters.db_table"

local type, error, format, setmetatable, tonumber, floor = type, error, string.format,
  setmetatable, tonumber, math.floor

local M = {}

local STRING, NUMBER, BOOLEAN, JSON = 1, 2, 3, 4
local NULL = zdb.null

local NOT_NUMBER = errors.new("cache", "invalid", "the value is not a number")
local NAN = errors.new("cache", "invalid", "the db cache cannot store NaN")

local SCHEMA = {
  sqlite = {
    [[CREATE TABLE IF NOT EXISTS "%s" (
  key TEXT NOT NULL PRIMARY KEY,
  kind INTEGER NOT NULL,
  value BLOB,
  expires_at REAL NOT NULL DEFAULT 0
) WITHOUT ROWID]],
    'CREATE INDEX IF NOT EXISTS "%s_expires" ON "%s" (expires_at) WHERE expires_at > 0',
  },
  -- UNLOGGED: no WAL for the cache's writes (cheaper, and no replication traffic); after a
  -- crash PostgreSQL empties the table, which a cache may lose (docs/cache.md). Numbers live in
  -- a numeric column (exact, so incr is one statement), the rest as bytea (any bytes).
  postgres = {
    [[CREATE UNLOGGED TABLE IF NOT EXISTS "%s" (
  key text NOT NULL PRIMARY KEY,
  kind integer NOT NULL,
  value bytea,
  num numeric,
  expires_at double precision NOT NULL DEFAULT 0
)]],
    'CREATE INDEX IF NOT EXISTS "%s_expires" ON "%s" (expires_at) WHERE expires_at > 0',
  },
}

local function schema(dialect, t)
  local s = SCHEMA[dialect]
  return { format(s[1], t), format(s[2], t, t) }
end
M.schema = schema

-- "live" is the guard every read repeats: a row whose expires_at has passed is absent.
local function sqlite_statements(t)
  local live = "(expires_at = 0 OR expires_at > ?)"
  local upsert = format('INSERT INTO "%s" (key, kind, value, expires_at) VALUES (?, ?, ?, ?) '
    .. "ON CONFLICT (key) DO UPDATE SET kind = excluded.kind, value = excluded.value, "
    .. "expires_at = excluded.expires_at", t)
  return {
    get = format('SELECT kind, value FROM "%s" WHERE key = ? AND %s', t, live),
    exists = format('SELECT 1 AS ok FROM "%s" WHERE key = ? AND %s', t, live),
    set = upsert,
    add = upsert .. " WHERE expires_at > 0 AND expires_at <= ?",
    -- The row goes either way; expires_at says whether it was live.
    delete = format('DELETE FROM "%s" WHERE key = ? RETURNING expires_at', t),
    -- binds: key, n, expires_at (for a new or re-claimed row), now (?4)
    incr = format('INSERT INTO "%s" (key, kind, value, expires_at) VALUES (?, 2, ?, ?) '
      .. "ON CONFLICT (key) DO UPDATE SET "
      .. "value = CASE WHEN expires_at > 0 AND expires_at <= ?4 THEN excluded.value "
      .. "ELSE value + excluded.value END, "
      .. "kind = 2, "
      .. "expires_at = CASE WHEN expires_at > 0 AND expires_at <= ?4 THEN excluded.expires_at "
      .. "ELSE expires_at END "
      .. "WHERE kind = 2 OR (expires_at > 0 AND expires_at <= ?4) RETURNING value", t),
    sweep = format('DELETE FROM "%s" WHERE key IN (SELECT key FROM "%s" WHERE expires_at > 0 '
      .. "AND expires_at <= ? ORDER BY expires_at LIMIT ?)", t, t),
  }
end

-- The same statements on PostgreSQL, with $n placeholders. set and add bind key, kind, value
-- (bytea; NULL for a number), expires_at, num (NULL unless a number) and, for add, now ($6).
-- The existing row is named by the table ("t".col): PostgreSQL's DO UPDATE sees two rows.
local function postgres_statements(t)
  local live = "(expires_at = 0 OR expires_at > $2)"
  local q = '"' .. t .. '"'
  local upsert = format('INSERT INTO %s (key, kind, value, num, expires_at) '
    .. "VALUES ($1, $2, $3, $5, $4) ON CONFLICT (key) DO UPDATE SET kind = excluded.kind, "
    .. "value = excluded.value, num = excluded.num, expires_at = excluded.expires_at", q)
  local expired = format("(%s.expires_at > 0 AND %s.expires_at <= $4)", q, q)
  return {
    get = format('SELECT kind, value, num FROM %s WHERE key = $1 AND %s', q, live),
    exists = format('SELECT 1 AS ok FROM %s WHERE key = $1 AND %s', q, live),
    set = upsert,
    add = upsert .. format(" WHERE %s.expires_at > 0 AND %s.expires_at <= $6", q, q),
    delete = format('DELETE FROM %s WHERE key = $1 RETURNING expires_at', q),
    -- binds: key, n, expires_at (for a new or re-claimed row), now
    incr = format('INSERT INTO %s (key, kind, num, expires_at) VALUES ($1, 2, $2, $3) '
      .. "ON CONFLICT (key) DO UPDATE SET "
      .. "num = CASE WHEN %s THEN excluded.num ELSE %s.num + excluded.num END, "
      .. "value = NULL, kind = 2, "
      .. "expires_at = CASE WHEN %s THEN excluded.expires_at ELSE %s.expires_at END "
      .. "WHERE %s.kind = 2 OR %s RETURNING num AS value", q, expired, q, expired, q, q,
      expired),
    sweep = format('DELETE FROM %s WHERE key IN (SELECT key FROM %s WHERE expires_at > 0 '
      .. "AND expires_at <= $1 ORDER BY expires_at LIMIT $2)", q, q),
  }
end

local function statements(dialect, t)
  if dialect == "postgres" then return postgres_statements(t) end
  return sqlite_statements(t)
end
M.statements = statements

local D = {}
D.__index = D

local fail = db_table.failer("cache")
local now_of = db_table.now

function D:ensure()
  return db_table.ensure(self, fail)
end

-- The absolute expiry of a ttl: 0 stays 0 (never).
local function expiry(now, ttl)
  if ttl > 0 then return now + ttl end
  return 0
end

local function decode(kind, v)
  if kind == STRING then return v end
  if kind == NUMBER then return tonumber(v) end   -- an int64 cdata beyond 2^53 too
  if kind == BOOLEAN then return v ~= 0 and v ~= "0" end   -- PostgreSQL: bytea "1" / "0"
  return json.decode(v)
end

function D:get(key)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local row, err = self.db:first(self.sql.get, self.prefix .. key, now_of(self))
  if row == nil then
    if err then return fail(err) end
    return nil
  end
  return decode(row.kind, row.num or row.value)
end

function D:exists(key)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local row, err = self.db:first(self.sql.exists, self.prefix .. key, now_of(self))
  if err then return fail(err) end
  return row ~= nil
end

-- A bounded sweep once per sweep_interval, from a write.
local function maybe_sweep(self, now)
  if db_table.due(self, now) then self:sweep() end
end

function D:set(key, value, ttl, add)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local t, kind = type(value), STRING
  if t == "number" then
    if value ~= value then return nil, NAN end   -- SQLite would store NULL
    kind = NUMBER
  elseif t == "boolean" then
    kind, value = BOOLEAN, value and 1 or 0
  elseif t == "table" then
    kind, value = JSON, json.encode(value)
  end
  local now = now_of(self)
  local b = self.binds
  local r, err
  if self.pg then
    -- key, kind, value (bytea), expires_at, num, now: see postgres_statements.
    local num = NULL
    if kind == NUMBER then
      num, value = value, NULL
    else
      value = self.blob(kind == BOOLEAN and (value == 1 and "1" or "0") or value)
    end
    b[1], b[2], b[3], b[4], b[5], b[6], b.n = self.prefix .. key, kind, value, expiry(now, ttl),
      num, now, add and 6 or 5
  else
    b[1], b[2], b[3], b[4], b[5], b.n = self.prefix .. key, kind, value, expiry(now, ttl), now,
      add and 5 or 4
  end
  if add then
    r, err = self.db:exec(self.sql.add, b)
  else
    r, err = self.db:exec(self.sql.set, b)
  end
  if not r then return fail(err) end
  maybe_sweep(self, now)
  return r.changes > 0
end

function D:delete(key)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local row, err = self.db:first(self.sql.delete, self.prefix .. key)
  if not row then
    if err then return fail(err) end
    return false
  end
  local at = row.expires_at
  return at == 0 or at > now_of(self)
end

function D:incr(key, n, ttl)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local now = now_of(self)
  local b = self.binds
  b[1], b[2], b[3], b[4], b.n = self.prefix .. key, n, expiry(now, ttl), now, 4
  -- first: RETURNING yields one row and the whole write is done by the first step.
  local row, err = self.db:first(self.sql.incr, b)
  if not row then
    if err then return fail(err) end
    return nil, NOT_NUMBER
  end
  maybe_sweep(self, now)
  return tonumber(row.value)
end

-- Deletes at most max_rows (default sweep_batch) expired rows, oldest expiry first, in one
-- statement. Returns removed, more (true when the batch was full: call again).
function D:sweep(max_rows)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  max_rows = floor(max_rows or self.sweep_batch)
  local r, derr = self.db:exec(self.sql.sweep, now_of(self), max_rows)
  if not r then return fail(derr) end
  return r.changes, r.changes >= max_rows
end

-- The database belongs to the app (the container closes it): nothing to release here.
function D:close()
  self.db = nil
  return true
end

function M.new(db, opts)
  local self = db_table.new("cache.db", db, opts,
    { table = "cache_entries", sweep_interval = 60, sweep_batch = 100 })
  local prefix = opts and opts.prefix or ""
  if type(prefix) ~= "string" then error("cache.db: prefix must be a string", 2) end
  local t = self.table
  local dialect = db_table.dialect(self.db)
  self.prefix, self.sql, self.schema = prefix, statements(dialect, t), schema(dialect, t)
  self.pg, self.blob = dialect == "postgres", db_table.blob(self.db)
  return setmetatable(self, D)
end

-- The adapter contract: section is the config's cache section; the database is the app's.
function M.open(section, ctx)
  local db, err = ctx:get("db")
  if not db then return nil, err end
  return M.new(db, { table = section.table, prefix = section.prefix })
end

return M
