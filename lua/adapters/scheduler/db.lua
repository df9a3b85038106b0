-- adapters.scheduler.db: the one-run-per-slot lock in a table of the app's database, shared by
-- every process that uses the database: the first INSERT of a (name, slot) row wins; the others
-- hit the primary key and change nothing (INSERT ... ON CONFLICT DO NOTHING; SQLite and
-- PostgreSQL both read it).
--
--   local lock = db_lock.new{ db = db | function() return db end, table = "scheduler_locks",
--                             clock = fn }
--   lock:acquire(key, slot, horizon) -> true (won) | false (another process won) | nil, err
--   lock:cleanup(before)             -> rows deleted whose slot is older than `before`
--   db_lock.open(section, ctx)       -> a zever.scheduler over it (the container's factory)
--
--   scheduler_locks: name TEXT, slot INTEGER, taken_at REAL, PRIMARY KEY (name, slot)
--
-- Rows older than the horizon (scheduler.horizon, 1 day by default) are deleted by the process
-- that wins a slot, at most once a minute, in one statement. The table is created on first use
-- (CREATE TABLE IF NOT EXISTS). This file must not compute slots or dispatch jobs.

local type, error, format, setmetatable, tostring, floor = type, error, string.format,
  setmetatable, tostring, math.floor

local M = {}

local SCHEMA = [[
CREATE TABLE IF NOT EXISTS "%s" (
  name TEXT NOT NULL,
  slot INTEGER NOT NULL,
  taken_at REAL NOT NULL,
  PRIMARY KEY (name, slot)
)]]

local L = {}
L.__index = L

local function fail(err)
  local scheduler = require "zever.scheduler"
  if type(err) == "table" and err.code then
    return nil, scheduler.error(err.code, tostring(err.message or err))
  end
  return nil, scheduler.error("unavailable", tostring(err))
end

function L:database()
  local db = self.db
  if not self.ready then
    if type(db) == "function" then
      local got, err = db()
      if not got then return fail(err) end
      db = got
      self.db = db
    end
    -- zever.db raises on SQL errors; this battery reports them as values ("unavailable", ...).
    if db.try_handle and not db.soft then
      db = db:try_handle()
      self.db = db
    end
    local ok, err = db:exec(format(SCHEMA, self.table))
    if not ok then return fail(err) end
    self.ready = true
  end
  return db
end

function L:cleanup(before)
  local db, err = self:database()
  if not db then return nil, err end
  local r, derr = db:exec(format('DELETE FROM "%s" WHERE slot < ?', self.table), floor(before))
  if not r then return fail(derr) end
  return r.changes
end

function L:acquire(key, slot, horizon)
  if self.closed then return fail({ code = "closed", message = "lock closed" }) end
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
    clock = opts.clock or require("zever.queue").wall }, L)
end

function M.open(section, ctx)
  local lock = M.new{ db = function() return ctx:get("db") end, table = section.table }
  return require("zever.scheduler").open(section, ctx, lock)
end

return M
