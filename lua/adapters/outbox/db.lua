-- adapters.outbox.db: the outbox table in the app's database (SQLite or PostgreSQL), created on
-- first use. zever.outbox is its front-end.
--
--   local impl = odb.new(db, { table = "outbox_messages", clock = nil })
--   impl:record(tx, topic, key, body)   -> id            one INSERT through the caller's tx
--   impl:claim(n, lease)                -> rows | nil, err   one UPDATE ... RETURNING
--   impl:settle(delivered, failures)    -> true | nil, err   one transaction
--   impl:status() / dead(limit) / requeue(id | "all") / purge(before)
--   odb.open(section, ctx)              -> impl over ctx:get("db") (the adapter contract)
--
--   outbox_messages: id (integer, growing), topic, key (NULL: no order), payload (JSON text),
--                    status (0 pending, 1 delivered, 2 dead), attempts, next_at, lease_until,
--                    created_at, delivered_at, last_error
--
-- claim leases up to n due pending messages in one statement, UPDATE ... SET lease_until WHERE
-- id IN (SELECT ... ORDER BY id LIMIT n) AND lease_until <= now RETURNING ...: the outer guard
-- is checked again on each row, so of two relays racing for a row (PostgreSQL) one gets it. A
-- message whose key has an earlier pending message is not due: a key's messages go out one at
-- a time, in id order, and a failing one holds the later ones back until it is delivered or
-- dead. settle marks the delivered ones (status 1, one UPDATE for the batch) and reschedules
-- or buries the failed ones, in one transaction. A partial index on the pending ids keeps a
-- claim's cost independent of the delivered history. Time is wall-clock seconds (processes
-- share it); clock is for specs. A database failure is nil, err with code "unavailable".

local db_table = require "adapters.db_table"

local format, setmetatable = string.format, setmetatable

local M = {}

local SCHEMA = {
  sqlite = {
    [[CREATE TABLE IF NOT EXISTS "%s" (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  topic TEXT NOT NULL,
  "key" TEXT,
  payload TEXT NOT NULL,
  status INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_at REAL NOT NULL,
  lease_until REAL NOT NULL DEFAULT 0,
  created_at REAL NOT NULL,
  delivered_at REAL,
  last_error TEXT
)]] },
  postgres = {
    [[CREATE TABLE IF NOT EXISTS "%s" (
  id bigserial PRIMARY KEY,
  topic text NOT NULL,
  "key" text,
  payload text NOT NULL,
  status integer NOT NULL DEFAULT 0,
  attempts integer NOT NULL DEFAULT 0,
  next_at double precision NOT NULL,
  lease_until double precision NOT NULL DEFAULT 0,
  created_at double precision NOT NULL,
  delivered_at double precision,
  last_error text
)]] },
}

-- The statements that create the table and its indexes ("sqlite" | "postgres", table name):
-- what the adapter runs on first use and what `zever add outbox` writes (zever.cli.tables).
local function schema(dialect, t)
  local list = {}
  for i, s in ipairs(SCHEMA[dialect]) do list[i] = format(s, t) end
  -- The pending rows in id order: a claim reads the first few, never the delivered history.
  list[#list + 1] = format('CREATE INDEX IF NOT EXISTS "%s_pending" ON "%s" (id) WHERE status = 0',
    t, t)
  list[#list + 1] = format('CREATE INDEX IF NOT EXISTS "%s_key" ON "%s" ("key", id) '
    .. "WHERE status = 0", t, t)
  return list
end
M.schema = schema

local function statements(t, dialect)
  -- The delivered ids of a batch go in one statement, as one bound list.
  local in_list = dialect == "postgres" and "id = ANY(CAST(? AS bigint[]))"
    or "id IN (SELECT value FROM json_each(?))"
  return {
    delivered_all = format('UPDATE "%s" SET status = 1, delivered_at = ?, lease_until = 0 '
      .. "WHERE %s", t, in_list),
    record = format('INSERT INTO "%s" (topic, "key", payload, next_at, created_at) '
      .. "VALUES (?, ?, ?, ?, ?) RETURNING id", t),
    claim = format('UPDATE "%s" SET lease_until = ? WHERE id IN (SELECT id FROM "%s" o '
      .. "WHERE status = 0 AND next_at <= ? AND lease_until <= ? AND "
      .. '(o."key" IS NULL OR NOT EXISTS (SELECT 1 FROM "%s" p WHERE p."key" = o."key" '
      .. "AND p.status = 0 AND p.id < o.id)) ORDER BY id LIMIT ?) "
      .. 'AND status = 0 AND lease_until <= ? RETURNING id, topic, "key", payload, attempts',
      t, t, t),
    failed = format('UPDATE "%s" SET status = ?, attempts = ?, next_at = ?, lease_until = 0, '
      .. "last_error = ? WHERE id = ?", t),
    counts = format('SELECT status, count(*) AS n, min(created_at) AS oldest FROM "%s" '
      .. "GROUP BY status", t),
    dead = format('SELECT id, topic, "key", payload, attempts, last_error, created_at FROM "%s" '
      .. "WHERE status = 2 ORDER BY id LIMIT ?", t),
    requeue = format('UPDATE "%s" SET status = 0, attempts = 0, next_at = ?, lease_until = 0 '
      .. "WHERE id = ? AND status <> 1", t),
    requeue_all = format('UPDATE "%s" SET status = 0, attempts = 0, next_at = ?, '
      .. "lease_until = 0 WHERE status = 2", t),
    purge = format('DELETE FROM "%s" WHERE status = 1 AND delivered_at < ?', t),
  }
end

local fail = db_table.failer("outbox")
local now_of = db_table.now

local D = {}
D.__index = D

local function ready(self)
  return db_table.ensure(self, fail)
end

function D:record(tx, topic, key, body)
  local ok, why = ready(self)
  if not ok then return nil, why end
  local now = now_of(self)
  -- Through the caller's handle: a database error raises there, as any statement of its
  -- transaction would (and rolls the transaction back).
  local row = tx:first(self.sql.record, topic, key == nil and self.null or key, body, now, now)
  return row.id
end

function D:claim(n, lease)
  local ok, why = ready(self)
  if not ok then return nil, why end
  local now = now_of(self)
  local rows, err = self.db:query(self.sql.claim, now + lease, now, now, n, now)
  if not rows then return fail(err) end
  for i = 1, #rows do
    if rows[i].key == self.null then rows[i].key = nil end
  end
  return rows
end

function D:settle(delivered, failures)
  local now = now_of(self)
  local sql = self.sql
  local ok, err = pcall(self.raw.transaction, self.raw, function(tx)
    if #delivered > 0 then
      local list = table.concat(delivered, ",")
      tx:exec(sql.delivered_all, now, self.postgres and "{" .. list .. "}" or "[" .. list .. "]")
    end
    for i = 1, #failures do
      local f = failures[i]
      tx:exec(sql.failed, f.dead and 2 or 0, f.attempts, now + f.delay, f.error, f.id)
    end
  end)
  if not ok then return fail(err) end
  return true
end

function D:status()
  local ok, why = ready(self)
  if not ok then return nil, why end
  local rows, err = self.db:query(self.sql.counts)
  if not rows then return fail(err) end
  local st = { pending = 0, delivered = 0, dead = 0, oldest_pending_age = 0 }
  local names = { [0] = "pending", [1] = "delivered", [2] = "dead" }
  for _, r in ipairs(rows) do
    st[names[r.status]] = r.n
    if r.status == 0 and r.oldest then
      local age = now_of(self) - r.oldest
      st.oldest_pending_age = age > 0 and age or 0
    end
  end
  return st
end

function D:dead(limit)
  local ok, why = ready(self)
  if not ok then return nil, why end
  local rows, err = self.db:query(self.sql.dead, limit)
  if not rows then return fail(err) end
  for i = 1, #rows do
    if rows[i].key == self.null then rows[i].key = nil end
  end
  return rows
end

function D:requeue(id)
  local ok, why = ready(self)
  if not ok then return nil, why end
  local r, err
  if id == "all" then
    r, err = self.db:exec(self.sql.requeue_all, now_of(self))
  else
    r, err = self.db:exec(self.sql.requeue, now_of(self), id)
  end
  if not r then return fail(err) end
  return r.changes
end

function D:purge(before)
  local ok, why = ready(self)
  if not ok then return nil, why end
  local r, err = self.db:exec(self.sql.purge, now_of(self) - before)
  if not r then return fail(err) end
  return r.changes
end

function D.close()
  return true   -- the database is the app's: the container closes it
end

-- db: a zever.db (the caller keeps owning it). opts: table ("outbox_messages"), clock.
function M.new(db, opts)
  local raw = db
  local self = db_table.new("outbox.db", db, opts, { table = "outbox_messages",
    sweep_interval = 60, sweep_batch = 500 })
  local dialect = db_table.dialect(self.db)
  self.sql, self.schema = statements(self.table, dialect), schema(dialect, self.table)
  self.postgres = dialect == "postgres"
  self.raw = raw
  self.null = require("zever.db").null
  return setmetatable(self, D)
end

-- The adapter contract: section is the config's outbox section; the database is the app's.
M.open = db_table.opener(M.new)

return M
