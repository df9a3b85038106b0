-- adapters.scheduler.db: the one-run-per-slot lock in a table of the app's database, shared by
-- every process that uses the database: the first INSERT of a (name, slot) row wins; the others
-- hit the primary key and change nothing (INSERT ... ON CONFLICT DO NOTHING; SQLite and
-- PostgreSQL both read it). On PostgreSQL this slots table is chosen over advisory locks (see
-- docs/scheduler.md): the row outlives the process and the connection that won.
--
--   local lock = db_lock.new{ db = db | function() return db end, table = "scheduler_locks",
--                             clock = fn }
--   lock:acquire(key, slot, horizon) -> true (won) | false (another process won) | nil, err
--   lock:cleanup(before)             -> rows deleted whose slot is older than `before`
--   db_lock.open(section, ctx)       -> a lock (the adapter contract; the registry wraps it)
--
--   scheduler_locks: name TEXT, slot INTEGER, taken_at REAL, PRIMARY KEY (name, slot)
--
-- Rows older than the horizon (scheduler.horizon, 1 day by default) are deleted by the process
-- that wins a slot, at most once a minute, in one statement. The table is created on first use
-- (CREATE TABLE IF NOT EXISTS). This file must not compute slots or dispatch jobs.

local errors = require "zever.errors"
local sys = require "zever.sys"
local db_table = require "adapters.db_table"

local type, error, format, setmetatable, floor = type, error, string.format, setmetatable,
  math.floor

local M = {}

local SCHEMA = {
  sqlite = [[
CREATE TABLE IF NOT EXISTS "%s" (
  name TEXT NOT NULL,
  slot INTEGER NOT NULL,
  taken_at REAL NOT NULL,
  PRIMARY KEY (name, slot)
)]],
  postgres = [[
CREATE TABLE IF NOT EXISTS "%s" (
  name text NOT NULL,
  slot bigint NOT NULL,
  taken_at double precision NOT NULL,
  PRIMARY KEY (name, slot)
)]],
}

-- The CREATE TABLE of db's dialect for table t.
function M.schema(dialect, t)
  return { format(SCHEMA[dialect] or SCHEMA.sqlite, t) }
end

local L = {}
L.__index = L

local function fail(err)
  return nil, errors.adopt("scheduler", err)
end

local CLOSED = errors.new("scheduler", "closed", "lock closed")

function L:database()
  local t = self.table
  return db_table.resolve(self, function(db) return M.schema(db_table.dialect(db), t) end, fail)
end

function L:cleanup(before)
  local db, err = self:database()
  if not db then return nil, err end
  local r, derr = db:exec(format('DELETE FROM "%s" WHERE slot < ?', self.table), floor(before))
  if not r then return fail(derr) end
  return r.changes
end

function L:acquire(key, slot, horizon)
  if self.closed then return nil, CLOSED end
  local db, err = self:database()
  if not db then return nil, err end
  local now = self.clock()
  local r, ierr = db:exec(format('INSERT INTO "%s" (name, slot, taken_at) VALUES (?, ?, ?) '
    .. "ON CONFLICT DO NOTHING", self.table), key, floor(slot), now)
  if not r then return fail(ierr) end
  if r.changes ~= 1 then return false end
  if now - self.swept > 60 then
    self.swept = now
    self:cleanup(now - (horizon or 86400))
  end
  return true
end

function L:close()
  self.closed = true
end

function M.new(opts)
  if type(opts) ~= "table" or opts.db == nil then
    error("scheduler.db.new: expects { db = db or function() -> db }", 2)
  end
  local name = opts.table or "scheduler_locks"
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
    error("scheduler.db.new: table must be an identifier", 2)
  end
  return setmetatable({ db = opts.db, table = name, ready = false, closed = false, swept = 0,
    clock = opts.clock or sys.wall }, L)
end

function M.open(section, ctx)
  return M.new{ db = function() return ctx:get("db") end, table = section.table }
end

return M
