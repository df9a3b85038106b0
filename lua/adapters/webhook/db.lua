-- adapters.webhook.db: the endpoints of zever.webhook in a table of the app's database (SQLite
-- or PostgreSQL), so they outlive the process and every process of the app sees the same ones.
-- The table is created on first use.
--
--   local impl = wdb.new(db, { table = "webhook_endpoints" })
--   impl:add(event, url, secret) -> id | nil, err ;  impl:remove(id) -> boolean | nil, err
--   impl:get(id) -> e | nil (nil, err on a database failure)
--   impl:list(event) -> endpoints of event and of "*" (nil: all), by id | nil, err
--   wdb.open(section, ctx) -> impl (the adapter contract; the database is the app's)
--
-- The signing secret is a column of the row, as Stripe keeps an endpoint's: whoever reads the
-- database can sign for the app, so the database's own access control guards it. A database
-- failure is nil, err with code "unavailable".

local db_table = require "adapters.db_table"

local format, setmetatable, tonumber = string.format, setmetatable, tonumber

local M = {}

local SCHEMA = {
  sqlite = [[
CREATE TABLE IF NOT EXISTS "%s" (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  event TEXT NOT NULL,
  url TEXT NOT NULL,
  secret TEXT NOT NULL,
  created_at REAL NOT NULL
)]],
  postgres = [[
CREATE TABLE IF NOT EXISTS "%s" (
  id bigserial PRIMARY KEY,
  event text NOT NULL,
  url text NOT NULL,
  secret text NOT NULL,
  created_at double precision NOT NULL
)]],
}

local fail = db_table.failer("webhook")

local D = {}
D.__index = D

local function row(r)
  return { id = tonumber(r.id), event = r.event, url = r.url, secret = r.secret }
end

function D:add(event, url, secret)
  local ready, why = db_table.ensure(self, fail)
  if not ready then return nil, why end
  local r, err = self.db:first(self.sql.add, event, url, secret, db_table.now(self))
  if not r then return fail(err) end
  return tonumber(r.id)
end

function D:remove(id)
  local ready, why = db_table.ensure(self, fail)
  if not ready then return nil, why end
  local r, err = self.db:exec(self.sql.remove, id)
  if not r then return fail(err) end
  return r.changes > 0
end

function D:get(id)
  local ready, why = db_table.ensure(self, fail)
  if not ready then return nil, why end
  local r, err = self.db:first(self.sql.get, id)
  if err then return fail(err) end
  return r and row(r) or nil
end

function D:list(event)
  local ready, why = db_table.ensure(self, fail)
  if not ready then return nil, why end
  local rows, err
  if event == nil then rows, err = self.db:query(self.sql.all)
  else rows, err = self.db:query(self.sql.list, event) end
  if not rows then return fail(err) end
  local out = {}
  for i, r in ipairs(rows) do out[i] = row(r) end
  return out
end

function D.close()
  return true   -- the database is the app's: the container closes it
end

-- db: a zever.db handle (the caller keeps owning it). opts: table ("webhook_endpoints"), clock.
function M.new(db, opts)
  local self = db_table.new("webhook.db", db, opts or {}, { table = "webhook_endpoints",
    sweep_interval = 60, sweep_batch = 100 })
  local t = self.table
  self.schema = { format(SCHEMA[db_table.dialect(self.db)], t) }
  self.sql = {
    add = format('INSERT INTO "%s" (event, url, secret, created_at) VALUES (?, ?, ?, ?) ' ..
      "RETURNING id", t),
    remove = format('DELETE FROM "%s" WHERE id = ?', t),
    get = format('SELECT id, event, url, secret FROM "%s" WHERE id = ?', t),
    list = format('SELECT id, event, url, secret FROM "%s" WHERE event = ? OR event = \'*\' ' ..
      "ORDER BY id", t),
    all = format('SELECT id, event, url, secret FROM "%s" ORDER BY id', t),
  }
  return setmetatable(self, D)
end

M.open = db_table.opener(M.new)

return M
