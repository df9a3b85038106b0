-- adapters.queue.db: the queue in a table of the app's database, so that every process on the
-- database (`zever serve`, `zever worker`) shares one queue with no setup. The default adapter.
--
--   local impl = dbq.new(db, { table = "queue_messages", clock = nil, sweep_interval = 30,
--                              sweep_batch = 100 })
--   impl:push / pop / ack / nack / len / close     (zever.queue's adapter interface)
--   impl:sweep([ids]) -> reclaimed, more     the queue sweep (below); ids: a batch chosen earlier
--   impl:stale_ids()  -> array of ids        the batch the next sweep would select
--   impl:ensure()     -> true | nil, err     CREATE TABLE IF NOT EXISTS (run by the first call)
--   dbq.open(section, ctx) -> impl over ctx:get("db") (the adapter contract)
--
-- A message is a row; a claim is a compare-and-set lease: one UPDATE sets claimed_by (a token
-- unique to this claim) and claimed_until on the oldest visible unclaimed row of the topic and
-- returns it (RETURNING), guarded by claimed_by IS NULL. ack deletes the row, nack requeues or
-- deletes it; both are guarded by the claim token, so a lease that was lost settles nothing.
--
-- The queue sweep gives stale leases (claimed_until in the past) back: one set-based UPDATE
-- whose IN-subquery selects at most sweep_batch stale rows (oldest lease first) and whose own
-- WHERE repeats the lease guard, so a row settled or claimed again between the select and the
-- update is skipped, never double-bumped; attempt = attempt + 1 is computed by the database.
-- It runs on pop, at most once per sweep_interval (bounded work: one batch), so there is no
-- timer to own and it works the same under `zever serve`, `zever worker` and a script.
-- Time is wall-clock seconds (a REAL column; processes share it); clock is for specs.

local zdb = require "zever.db"
local db_table = require "adapters.db_table"

local type, format, setmetatable = type, string.format, setmetatable

local M = {}

local NULL = zdb.null

local Q = {}
Q.__index = Q

local fail = db_table.failer("queue")
local now_of = db_table.now

local SCHEMA = [[
CREATE TABLE IF NOT EXISTS "%s" (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  topic TEXT NOT NULL,
  kind INTEGER NOT NULL,
  payload BLOB NOT NULL,
  headers TEXT,
  attempt INTEGER NOT NULL DEFAULT 1,
  enqueued_at REAL NOT NULL,
  available_at REAL NOT NULL,
  claimed_by TEXT,
  claimed_until REAL
);
CREATE INDEX IF NOT EXISTS "%s_ready" ON "%s" (topic, available_at, id) WHERE claimed_by IS NULL;
CREATE INDEX IF NOT EXISTS "%s_leased" ON "%s" (claimed_until, id) WHERE claimed_by IS NOT NULL;
]]

function Q:ensure()
  return db_table.ensure(self, fail)
end

function Q:push(topic, data, kind, headers, delay)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local now = now_of(self)
  local b = self.binds
  b[1], b[2], b[3], b[4], b[5], b[6], b.n = topic, kind, self.blob(data), headers or NULL, now,
    now + delay, 6
  local r, err = self.db:exec(self.sql.push, b)
  if not r then return fail(err) end
  return r.last_insert_id
end

function Q:stale_query(now)
  return self.db:from(self.table):select("id")
    :where_not_null("claimed_by"):where("claimed_until", "<", now)
    :order_by("claimed_until"):order_by("id"):limit(self.sweep_batch)
end

function Q:stale_ids()
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local rows, qerr = self:stale_query(now_of(self)):all()
  if not rows then return fail(qerr) end
  local ids = {}
  for i, row in ipairs(rows) do ids[i] = row.id end
  return ids
end

-- One UPDATE over one batch: the stale rows the subquery selects (or the ids given), each still
-- under the same lease guard when the update reaches it. Returns reclaimed, more.
function Q:sweep(ids)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local now = now_of(self)
  local r, uerr = self.db:update(self.table)
    :set{ attempt = zdb.col("attempt") + 1, claimed_by = zdb.null, claimed_until = zdb.null,
      available_at = now }
    :where_in("id", ids or self:stale_query(now))
    :where_not_null("claimed_by"):where("claimed_until", "<", now)
    :exec()
  if not r then return fail(uerr) end
  local n = type(r) == "table" and r.changes or r
  return n, n >= self.sweep_batch
end

function Q:pop(topic, visibility)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local now = now_of(self)
  if db_table.due(self, now) then
    local _, err = self:sweep()
    if err then return nil, err end
  end
  self.claims = self.claims + 1
  local token = self.worker .. self.claims
  local b = self.binds
  b[1], b[2], b[3], b[4], b.n = token, now + visibility, topic, now, 4
  local rows, err = self.db:query(self.sql.pop, b)
  if not rows then return fail(err) end
  local row = rows[1]
  if not row then return nil end
  return row.id, token, row.attempt, row.kind, row.enqueued_at, row.payload, row.headers
end

function Q:ack(id, lease)
  local r, err = self.db:exec(self.sql.ack, id, lease)
  if not r then return fail(err) end
  return r.changes == 1
end

function Q:nack(id, lease, requeue, delay)
  local r, err
  if requeue then
    local b = self.binds
    b[1], b[2], b[3], b.n = now_of(self) + delay, id, lease, 3
    r, err = self.db:exec(self.sql.requeue, b)
  else
    r, err = self.db:exec(self.sql.ack, id, lease)
  end
  if not r then return fail(err) end
  return r.changes == 1
end

function Q:len(topic)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local row, err = self.db:first(self.sql.len, topic)
  if not row then return fail(err) end
  return row.n
end

-- The database belongs to whoever opened it (the container): close only stops using it.
function Q:close()
  self.db = nil
  return true
end

local function statements(t)
  return {
    push = format('INSERT INTO "%s" (topic, kind, payload, headers, enqueued_at, available_at) '
      .. 'VALUES (?, ?, ?, ?, ?, ?)', t),
    pop = format('UPDATE "%s" SET claimed_by = ?, claimed_until = ? WHERE id = '
      .. '(SELECT id FROM "%s" WHERE topic = ? AND claimed_by IS NULL AND available_at <= ? '
      .. 'ORDER BY available_at, id LIMIT 1) AND claimed_by IS NULL '
      .. 'RETURNING id, attempt, kind, enqueued_at, payload, headers', t, t),
    ack = format('DELETE FROM "%s" WHERE id = ? AND claimed_by = ?', t),
    requeue = format('UPDATE "%s" SET claimed_by = NULL, claimed_until = NULL, '
      .. 'attempt = attempt + 1, available_at = ? WHERE id = ? AND claimed_by = ?', t),
    len = format('SELECT count(*) AS n FROM "%s" WHERE topic = ?', t),
  }
end

function M.new(db, opts)
  local self = db_table.new("queue.db", db, opts,
    { table = "queue_messages", sweep_interval = 30, sweep_batch = 100 })
  local t = self.table
  self.sql, self.schema = statements(t), format(SCHEMA, t, t, t, t, t)
  self.claims, self.worker = 0, db_table.token_prefix()
  self.blob = require("zever.sqlite").blob
  return setmetatable(self, Q)
end

-- The adapter contract: section is the config's queue section; the database is the app's.
function M.open(section, ctx)
  local db, err = ctx:get("db")
  if not db then return nil, err end
  return M.new(db, { table = section.table, sweep_interval = section.sweep_interval,
    sweep_batch = section.sweep_batch })
end

return M
