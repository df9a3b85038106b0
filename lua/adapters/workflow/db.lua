-- adapters.workflow.db: workflow runs, step results and signals in the app's database (SQLite
-- or PostgreSQL), three tables created on first use. The same calls as adapters.workflow.memory;
-- every write is one statement, so a worker killed between two leaves either the row or not.
--
--   <t>_runs    id (text key), name, status, input, output, error, attempts, state, wake_at,
--               created_at, updated_at
--   <t>_steps   run_id, key, result: PRIMARY KEY (run_id, key): a step's result is recorded
--               once (INSERT ... ON CONFLICT DO NOTHING: a second writer keeps the first)
--   <t>_signals seq (growing), run_id, name, value
-- A database error raises (the job running the step fails and is retried).

local db_table = require "adapters.db_table"

local format = string.format

local M = {}

local function schema(dialect, t)
  local serial = dialect == "postgres" and "bigserial PRIMARY KEY" or
    "INTEGER PRIMARY KEY AUTOINCREMENT"
  local real = dialect == "postgres" and "double precision" or "REAL"
  return {
    format([[CREATE TABLE IF NOT EXISTS "%s_runs" (id TEXT PRIMARY KEY, name TEXT NOT NULL,
      status TEXT NOT NULL, input TEXT, output TEXT, error TEXT, attempts INTEGER NOT NULL DEFAULT 0,
      state TEXT, wake_at %s, created_at %s NOT NULL, updated_at %s NOT NULL)]], t, real, real, real),
    format([[CREATE TABLE IF NOT EXISTS "%s_steps" (run_id TEXT NOT NULL, "key" TEXT NOT NULL,
      result TEXT, PRIMARY KEY (run_id, "key"))]], t),
    format([[CREATE TABLE IF NOT EXISTS "%s_signals" (seq %s, run_id TEXT NOT NULL,
      name TEXT NOT NULL, value TEXT)]], t, serial),
    format('CREATE INDEX IF NOT EXISTS "%s_signals_run" ON "%s_signals" (run_id, seq)', t, t),
  }
end

local D = {}
D.__index = D

local fail = db_table.failer("workflow")

local function ready(self)
  local ok, err = db_table.ensure(self, fail)
  if not ok then error(err, 3) end
end

local COLUMNS = { "status", "input", "output", "error", "attempts", "state", "wake_at",
  "updated_at" }

function D:create(id, name, input, now)
  ready(self)
  local r = self.db:exec(format('INSERT INTO "%s_runs" (id, name, status, input, attempts, '
    .. "created_at, updated_at) VALUES (?, ?, 'pending', ?, 0, ?, ?) ON CONFLICT (id) DO NOTHING",
    self.table), id, name, input, now, now)
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
