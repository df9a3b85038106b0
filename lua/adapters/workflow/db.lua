-- adapters.workflow.db: workflow runs, step results and signals in the app's database (SQLite
-- or PostgreSQL), three tables created on first use. The same calls as adapters.workflow.memory;
-- every write is one statement, so a worker killed between two leaves either the row or not.
--
--   <t>_runs    id (text key), name, status, input, output, error, attempts, state, wake_at,
--               created_at, updated_at, retention (the run's own), ended_at, expire_at (when
--               the sweep may delete it), each time indexed for the sweep
--   <t>_steps   run_id, key, result: PRIMARY KEY (run_id, key): a step's result is recorded
--               once (INSERT ... ON CONFLICT DO NOTHING: a second writer keeps the first)
--   <t>_signals seq (growing), run_id, name, value
-- A database error raises (the job running the step fails and is retried).
-- Tables made before retention existed get its three columns on first use (ALTER TABLE ADD
-- COLUMN: IF NOT EXISTS on PostgreSQL, in the schema's locked transaction; after a look at
-- pragma_table_info on SQLite).

local db_table = require "adapters.db_table"

local format = string.format

local M = {}

-- The columns retention added (a table made before gets them on first use).
local ADDED = { "retention", "ended_at", "expire_at" }

local function indexes(t)
  return {
    format('CREATE INDEX IF NOT EXISTS "%s_runs_expire" ON "%s_runs" (expire_at)', t, t),
    format('CREATE INDEX IF NOT EXISTS "%s_runs_ended" ON "%s_runs" (ended_at)', t, t),
  }
end

local function schema(dialect, t)
  local serial = dialect == "postgres" and "bigserial PRIMARY KEY" or
    "INTEGER PRIMARY KEY AUTOINCREMENT"
  local real = dialect == "postgres" and "double precision" or "REAL"
  local list = {
    format([[CREATE TABLE IF NOT EXISTS "%s_runs" (id TEXT PRIMARY KEY, name TEXT NOT NULL,
      status TEXT NOT NULL, input TEXT, output TEXT, error TEXT, attempts INTEGER NOT NULL DEFAULT 0,
      state TEXT, wake_at %s, created_at %s NOT NULL, updated_at %s NOT NULL, retention %s,
      ended_at %s, expire_at %s)]], t, real, real, real, real, real, real),
    format([[CREATE TABLE IF NOT EXISTS "%s_steps" (run_id TEXT NOT NULL, "key" TEXT NOT NULL,
      result TEXT, PRIMARY KEY (run_id, "key"))]], t),
    format([[CREATE TABLE IF NOT EXISTS "%s_signals" (seq %s, run_id TEXT NOT NULL,
      name TEXT NOT NULL, value TEXT)]], t, serial),
    format('CREATE INDEX IF NOT EXISTS "%s_signals_run" ON "%s_signals" (run_id, seq)', t, t),
  }
  -- SQLite has no ADD COLUMN IF NOT EXISTS: ready() adds them, then the indexes.
  if dialect ~= "postgres" then return list end
  for _, c in ipairs(ADDED) do
    list[#list + 1] = format('ALTER TABLE "%s_runs" ADD COLUMN IF NOT EXISTS %s %s', t, c, real)
  end
  for _, s in ipairs(indexes(t)) do list[#list + 1] = s end
  return list
end

-- SQLite: the columns of ADDED a table made before retention lacks, then the indexes. Two
-- processes may both add a column: the loser's "duplicate column" is taken as done.
local function upgrade_sqlite(db, t)
  local have = {}
  local cols, qerr = db:query(format("SELECT name FROM pragma_table_info('%s_runs')", t))
  if not cols then return nil, qerr end
  for _, row in ipairs(cols) do
    have[row.name] = true
  end
  for _, c in ipairs(ADDED) do
    if not have[c] then
      local ok, err = db:exec(format('ALTER TABLE "%s_runs" ADD COLUMN %s REAL', t, c))
      if not ok and not tostring(err and err.message or err):find("duplicate column", 1, true) then
        return nil, err
      end
    end
  end
  for _, s in ipairs(indexes(t)) do
    local ok, err = db:exec(s)
    if not ok then return nil, err end
  end
  return true
end

local D = {}
D.__index = D

local fail = db_table.failer("workflow")

-- Runs that ended before the table had ended_at get their updated_at as ended_at (so purge
-- --before reaches them; with no expire_at they are kept until purged). The index on ended_at
-- finds the NULLs: the runs not ended yet, and those.
local function backfill(db, t)
  return db:exec(format('UPDATE "%s_runs" SET ended_at = updated_at WHERE ended_at IS NULL AND '
    .. "status IN ('completed', 'failed', 'cancelled')", t))
end

local function ready(self)
  if self.ready then return end
  local ok, err = db_table.ensure(self, fail)
  if not ok then error(err, 3) end
  if db_table.dialect(self.db) ~= "postgres" then ok, err = upgrade_sqlite(self.db, self.table) end
  if ok then ok, err = backfill(self.db, self.table) end
  if not ok then
    self.ready = false
    error(select(2, fail(err)), 3)
  end
end

local COLUMNS = { "status", "input", "output", "error", "attempts", "state", "wake_at",
  "updated_at", "ended_at", "expire_at" }

function D:create(id, name, input, now, retention)
  ready(self)
  local r = self.db:exec(format('INSERT INTO "%s_runs" (id, name, status, input, attempts, '
    .. "created_at, updated_at, retention) VALUES (?, ?, 'pending', ?, 0, ?, ?, ?) "
    .. "ON CONFLICT (id) DO NOTHING", self.table), id, name, input, now, now,
    retention or self.null)
  return r.changes == 1
end

local function clean(self, row)
  if not row then return nil end
  for k, v in pairs(row) do if v == self.null then row[k] = nil end end
  return row
end

function D:get(id)
  ready(self)
  return clean(self, self.db:first(format('SELECT * FROM "%s_runs" WHERE id = ?', self.table), id))
end

local function update(self, db, id, fields)
  local sets, vals = {}, {}
  for _, c in ipairs(COLUMNS) do
    local v = fields[c]
    if v ~= nil then
      sets[#sets + 1] = c .. " = ?"
      vals[#vals + 1] = v
    end
  end
  vals[#vals + 1] = id
  local r = db:exec(format('UPDATE "%s_runs" SET %s WHERE id = ?', self.table,
    table.concat(sets, ", ")), unpack(vals))
  return r.changes == 1
end

function D:update(id, fields)
  ready(self)
  return update(self, self.db, id, fields)
end

function D:steps(id)
  ready(self)
  local out = {}
  for _, row in ipairs(self.db:query(format('SELECT "key", result FROM "%s_steps" WHERE run_id = ?',
    self.table), id)) do
    out[row.key] = row.result ~= self.null and row.result or nil
  end
  return out
end

local function put_step(self, db, id, key, result)
  local r = db:exec(format('INSERT INTO "%s_steps" (run_id, "key", result) VALUES (?, ?, ?) '
    .. 'ON CONFLICT (run_id, "key") DO NOTHING', self.table), id, key, result)
  return r.changes == 1
end

function D:put_step(id, key, result)
  ready(self)
  return put_step(self, self.db, id, key, result)
end

-- put_step and update in one transaction (on its own connection of a pool): a worker killed
-- between them leaves neither.
function D:record_step(id, key, result, fields)
  ready(self)
  return self.db:transaction(function(tx)
    if not put_step(self, tx, id, key, result) then return false end
    update(self, tx, id, fields)
    return true
  end)
end

function D:add_signal(id, name, value)
  ready(self)
  local row = self.db:first(format('INSERT INTO "%s_signals" (run_id, name, value) VALUES (?, ?, ?) '
    .. "RETURNING seq", self.table), id, name, value)
  return row.seq
end

function D:signals(id)
  ready(self)
  return self.db:query(format('SELECT seq, name, value FROM "%s_signals" WHERE run_id = ? '
    .. "ORDER BY seq", self.table), id)
end

function D:list(status, limit)
  ready(self)
  local rows
  if status then
    rows = self.db:query(format('SELECT * FROM "%s_runs" WHERE status = ? ORDER BY created_at '
      .. "LIMIT ?", self.table), status, limit)
  else
    rows = self.db:query(format('SELECT * FROM "%s_runs" ORDER BY created_at LIMIT ?', self.table),
      limit)
  end
  for _, r in ipairs(rows) do clean(self, r) end
  return rows
end

local SWEPT = { expire_at = true, ended_at = true }

-- r, or the raised "unavailable" error of a failed statement (the handle returns nil, err).
local function must(r, err)
  if r == nil then error(select(2, fail(err)), 0) end
  return r
end

local function swept(field)
  if not SWEPT[field] then error("workflow.db: sweep by expire_at or ended_at", 3) end
  return field
end

-- Deletes at most limit runs whose field is <= cutoff (oldest first) with their steps and
-- signals, in one transaction; returns deleted, how many more match.
function D:sweep(field, cutoff, limit)
  ready(self)
  swept(field)
  local t = self.table
  local rows = must(self.db:query(format('SELECT id FROM "%s_runs" WHERE %s <= ? ORDER BY %s '
    .. "LIMIT ?", t, field, field), cutoff, limit))
  if #rows > 0 then
    local ids, marks = {}, {}
    for i, r in ipairs(rows) do ids[i], marks[i] = r.id, "?" end
    local list = table.concat(marks, ", ")
    must(self.db:transaction(function(tx)
      must(tx:exec(format('DELETE FROM "%s_steps" WHERE run_id IN (%s)', t, list), unpack(ids)))
      must(tx:exec(format('DELETE FROM "%s_signals" WHERE run_id IN (%s)', t, list), unpack(ids)))
      must(tx:exec(format('DELETE FROM "%s_runs" WHERE id IN (%s)', t, list), unpack(ids)))
      return true
    end))
  end
  return #rows, self:count_ended(field, cutoff)
end

function D:count_ended(field, cutoff)
  ready(self)
  local row = must(self.db:first(format('SELECT COUNT(*) AS n FROM "%s_runs" WHERE %s <= ?',
    self.table, swept(field)), cutoff))
  return tonumber(row.n)
end

function D.close() return true end

-- db: a zever.db (the caller keeps owning it). opts: table ("workflow").
function M.new(db, opts)
  local self = db_table.new("workflow.db", db, opts, { table = "workflow", sweep_interval = 60,
    sweep_batch = 100 })
  self.schema = schema(db_table.dialect(self.db), self.table)
  self.null = require("zever.db").null
  return setmetatable(self, D)
end

function M.open(section, ctx)
  local db, err = ctx:get("db")
  if not db then return nil, err end
  return M.new(db, { table = section and section.table ~= "" and section.table or nil })
end

return M
