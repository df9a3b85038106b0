-- adapters.queue.db: the queue in a table of the app's database, so that every process on the
-- database (`zever serve`, `zever worker`) shares one queue with no setup. The default adapter.
--
--   local impl = dbq.new(db, { table = "queue_messages", clock = nil, sweep_interval = 30,
--                              sweep_batch = 100 })
--   impl:push / pop / ack / nack / len / close     (zever.queue's adapter interface)
--   impl:push_batch(topic, datas, kinds, headers, delay) -> ids   (one round trip on PostgreSQL)
--   impl:sweep([ids]) -> reclaimed, more     the queue sweep (below); ids: a batch chosen earlier
--   impl:stale_ids()  -> array of ids        the batch the next sweep would select
--   impl:sweep_update(now[, ids]) -> the sweep's UPDATE as a query builder (to_sql: EXPLAIN)
--   dbq.schema(dialect, t), dbq.statements(dialect, t)   the DDL and the raw statements
--   impl:ensure()     -> true | nil, err     CREATE TABLE IF NOT EXISTS (run by the first call)
--   impl:next_due(topics) -> wall-clock seconds | nil   when a message may next become claimable
--   impl:subscribe(fn) -> sub | nil          fn(topic) on every push/requeue (PostgreSQL only)
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
-- On PostgreSQL pop runs no sweep: the claim itself takes a row whose lease ran out (attempt
-- + 1; see SCHEMA and statements), so a lost lease comes back on the first pop of its topic
-- after it expires. impl:sweep() still works there, on demand, as a scan of the table (there
-- is no leased index).
-- Time is wall-clock seconds (a REAL column; processes share it); clock is for specs.
--
-- Prefetch (PostgreSQL: 8 by default, opts.prefetch; SQLite: 1): one claim takes up to
-- prefetch rows with one token and lease; pop hands them out oldest first, the rest waiting in
-- this object, so a backlog costs one claim statement per prefetch jobs instead of one per job.
-- While a backlog keeps up, the claim doubles up to opts.prefetch_max (64; claim_size says
-- when), one size for all the topics of this object.
-- A buffered row whose lease ran out is dropped (the sweep, or on PostgreSQL the next claim,
-- gives it back, attempt + 1); close
-- gives back what was never handed out (claim cleared, attempt kept). The cost: a buffered job
-- waits for this process's next pop, which comes when a worker slot frees up.

local zdb = require "zever.db"
local errors = require "zever.errors"
local loop = require "zever.loop"
local sched = require "zever.sched"
local db_table = require "adapters.db_table"

local type, format, setmetatable, pcall, pairs, sort, concat, tostring = type, string.format,
  setmetatable, pcall, pairs, table.sort, table.concat, tostring
local running = coroutine.running
local spawn, token_of, await, complete = sched.spawn, sched.token, sched.await, sched.complete

local M = {}

local NULL = zdb.null

local Q = {}
Q.__index = Q

local fail = db_table.failer("queue")
local now_of = db_table.now

-- The table and its indexes. SQLite: two partial indexes, "ready" for the claim (the oldest
-- visible unclaimed row of a topic) and "leased" for the sweep (the oldest stale leases).
-- PostgreSQL: one index, "due" (topic, available_at, id), and no index on a lease column, so a
-- claim, which only sets claimed_by, claimed_until and attempt, is a HOT update: it writes the
-- row's new version in its own page and no index entry (a claim rewrote the row's primary-key
-- and leased-index entries before). fillfactor 50 leaves each page the room for the new
-- versions of its rows. The claim reads claimed rows of the topic in the due index (the ones
-- in flight, a few hundred at most) and takes the stale ones itself: no sweep, no leased index.
-- Per dialect: SQLite's REAL, BLOB and AUTOINCREMENT are PostgreSQL's double precision (its
-- real is float4), bytea and an identity column.
--
-- A table made by an older zever (the partial "ready" and "leased" indexes) is brought to this
-- shape by the same statements, run by the first call of each process and written by `zever
-- add queue` into a migration: the due index is built (CREATE INDEX, which holds writes to the
-- table while it builds), the two old indexes dropped, fillfactor set (rows written from then
-- on get the room; the pages already written keep theirs, so their rows' claims are HOT only
-- where the page has space: the claims stay correct either way).
local SCHEMA = {
  sqlite = [[
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
)]],
  postgres = [[
CREATE TABLE IF NOT EXISTS "%s" (
  id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  topic text NOT NULL,
  kind integer NOT NULL,
  payload bytea NOT NULL,
  headers text,
  attempt integer NOT NULL DEFAULT 1,
  enqueued_at double precision NOT NULL,
  available_at double precision NOT NULL,
  claimed_by text,
  claimed_until double precision
) WITH (fillfactor = %d)]],
}

local INDEXES = {
  'CREATE INDEX IF NOT EXISTS "%s_ready" ON "%s" (topic, available_at, id) WHERE claimed_by IS NULL',
  'CREATE INDEX IF NOT EXISTS "%s_leased" ON "%s" (claimed_until, id) WHERE claimed_by IS NOT NULL',
}

-- The heap pages' fill on PostgreSQL (see above).
M.FILLFACTOR = 50

-- The migration of an older table on PostgreSQL (see above): fillfactor is set only when it
-- differs (ALTER TABLE takes a lock that waits for a running vacuum of the table).
local PG_MIGRATE = {
  'CREATE INDEX IF NOT EXISTS "%s_due" ON "%s" (topic, available_at, id)',
  'DROP INDEX IF EXISTS "%s_ready"',
  'DROP INDEX IF EXISTS "%s_leased"',
  [[DO $zever$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_class WHERE oid = '"%s"'::regclass
      AND reloptions @> ARRAY['fillfactor=%d']) THEN
    ALTER TABLE "%s" SET (fillfactor = %d);
  END IF;
END $zever$]],
}

-- The claim's choice of rows (PostgreSQL), in a function of its own so that it can carry
-- enable_bitmapscan = off. Without it, on a table the planner has no statistics for yet (a
-- new table, or a backlog that arrived since the last ANALYZE), it guesses a few dozen due rows
-- and reads them all with a bitmap scan and a sort instead of walking the due index in order
-- up to the limit: 140-175 ms for a claim of 64 over 20,000 waiting rows, against 0.6 ms.
-- (The partial index before was estimated small, which hid this.) A seq scan stays possible.
-- ROWS 64 tells the claim's UPDATE that few ids come back (it then fetches them through the
-- primary key, not with a scan of the table).
local PICK_SELECT = 'SELECT id FROM "%s" WHERE topic = $1 AND available_at <= $2 AND '
  .. '(claimed_by IS NULL OR claimed_until < $2) ORDER BY available_at, id LIMIT $3 '
  .. 'FOR UPDATE SKIP LOCKED'
local PICK = [[
CREATE OR REPLACE FUNCTION "%s"(text, double precision, integer) RETURNS SETOF bigint
LANGUAGE sql VOLATILE ROWS 64 SET enable_bitmapscan = off AS $zever$
  %s
$zever$]]

-- The name of the claim's function for table t (an identifier of at most 63 bytes).
function M.pick_function(t)
  return (t:sub(1, 55) .. "_claimable")
end

local function schema(dialect, t)
  if dialect == "postgres" then
    local q = t:gsub('"', '""')
    local ff = M.FILLFACTOR
    return { format(SCHEMA.postgres, t, ff), format(PG_MIGRATE[1], t, t), format(PG_MIGRATE[2], t),
      format(PG_MIGRATE[3], t), format(PG_MIGRATE[4], q:gsub("'", "''"), ff, t, ff),
      format(PICK, M.pick_function(t), format(PICK_SELECT, t)) }
  end
  return { format(SCHEMA[dialect], t), format(INDEXES[1], t, t), format(INDEXES[2], t, t) }
end
M.schema = schema


function Q:ensure()
  return db_table.ensure(self, fail)
end

-- Gathers calls from coroutines that meet in one loop turn into one batch (a list of at most
-- limit entries), run by runner(self, batch) in a coroutine of its own once the turn is over;
-- each caller waits for its own result. Acks and pushes share it.
local function batched(self, field, entry, runner, limit)
  local batch = self[field]
  if not batch or batch.n >= limit then
    batch = { n = 0, db = self.db }
    self[field] = batch
    loop.after(0, function()
      if self[field] == batch then self[field] = nil end
      spawn(runner, self, batch)
    end)
  end
  local token = token_of()
  local n = batch.n + 1
  entry.token = token
  batch[n], batch.n = entry, n
  return await(token)
end

-- Hands each entry of batch its result from a loop callback (sched's rule: a waiter is
-- completed from the loop, not from a coroutine): result(entry) -> values, or err for all.
local function settle(batch, result, err)
  loop.after(0, function()
    for i = 1, batch.n do
      local e = batch[i]
      if err then complete(e.token, fail(err)) else complete(e.token, result(e, i)) end
    end
  end)
end

-- The INSERT of n pushes (PostgreSQL), cached per n: one statement, one notification per
-- distinct topic (an InitPlan: evaluated once, after the rows are in), ids returned.
local function pushes_sql(self, n)
  local sql = self.pushes_sql[n]
  if sql then return sql end
  local rows = {}
  for i = 1, n do rows[i] = "(?, ?, ?, ?, ?, ?)" end
  sql = format('WITH m AS (INSERT INTO "%s" (topic, kind, payload, headers, enqueued_at, '
    .. "available_at) VALUES %s RETURNING id, topic) SELECT m.id, (SELECT count(pg_notify('%s', "
    .. "d.topic)) FROM (SELECT DISTINCT topic FROM m) d) AS notified FROM m ORDER BY m.id",
    self.table, concat(rows, ", "), self.channel)
  self.pushes_sql[n] = sql
  return sql
end

-- The INSERT of a push_batch chunk of n rows (PostgreSQL), cached per n: the row's topic,
-- headers and times are the same for every row, so they are bound once ($1 to $4) and each row
-- binds its kind and payload: two parameters a job to check, escape and send, not six (two of
-- them times, each a %.17g).
local function batch_sql(self, n)
  local sql = self.batch_sql[n]
  if sql then return sql end
  local rows = {}
  for i = 1, n do rows[i] = format("($1, $%d, $%d, $2, $3, $4)", 3 + 2 * i, 4 + 2 * i) end
  sql = format('WITH m AS (INSERT INTO "%s" (topic, kind, payload, headers, enqueued_at, '
    .. "available_at) VALUES %s RETURNING id, topic) SELECT m.id, (SELECT count(pg_notify('%s', "
    .. "d.topic)) FROM (SELECT DISTINCT topic FROM m) d) AS notified FROM m ORDER BY m.id",
    self.table, concat(rows, ", "), self.channel)
  self.batch_sql[n] = sql
  return sql
end

-- Runs one batch of pushes. The ids come back in ascending order, which is the order of the
-- VALUES rows: one statement draws its identity values in the order it inserts its rows.
local function run_pushes(self, batch)
  local n, b = batch.n, {}
  for i = 1, n do
    local e, k = batch[i], 6 * (i - 1)
    b[k + 1], b[k + 2], b[k + 3], b[k + 4], b[k + 5], b[k + 6] = e.topic, e.kind, e.payload,
      e.headers, e.enqueued_at, e.available_at
  end
  b.n = 6 * n
  local rows, err
  if batch.db then
    rows, err = batch.db:query(pushes_sql(self, n), b)
    if rows and #rows ~= n then
      rows, err = nil, format("queue: a batch of %d pushes inserted %d rows", n, #rows)
    end
  else
    err = "the queue is closed"
  end
  settle(batch, function(_, i) return rows[i].id end, not rows and err)
end

-- On PostgreSQL, pushes from coroutines (requests, jobs) that meet in one loop turn go as one
-- INSERT (at most PUSH_BATCH rows); each caller gets its own id once the statement is done
-- (committed: at-least-once holds). From a plain caller, and on SQLite, a push is its own
-- statement.
function Q:push(topic, data, kind, headers, delay)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local now = now_of(self)
  if self.pg and running() then
    return batched(self, "pushes", { topic = topic, kind = kind, payload = self.blob(data),
      headers = headers or NULL, enqueued_at = now, available_at = now + delay }, run_pushes,
      M.PUSH_BATCH)
  end
  local b = self.binds
  b[1], b[2], b[3], b[4], b[5], b[6], b.n = topic, kind, self.blob(data), headers or NULL, now,
    now + delay, 6
  if self.pg then
    local row, err = self.db:first(self.sql.push, b)
    if not row then return fail(err) end
    return row.id
  end
  local r, err = self.db:exec(self.sql.push, b)
  if not r then return fail(err) end
  return r.last_insert_id
end

-- Pushes a list of messages of one topic (zever.queue's push_batch): ids in order | nil, err.
-- All or none: on PostgreSQL one INSERT per PUSH_BATCH rows, the chunks sent together in one
-- pipeline (one round trip, one transaction); on SQLite one INSERT each in one transaction.
function Q:push_batch(topic, datas, kinds, headers, delay)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local n = #datas
  if n == 0 then return {} end
  local now = now_of(self)
  local db = self.db
  local ids = {}
  if self.pg then
    local limit = M.PUSH_BATCH
    local ok, res, perr = pcall(db.pipeline, db, function(p)
      for first = 1, n, limit do
        local last = math.min(first + limit - 1, n)
        local b = { topic, headers or NULL, now, now + delay, n = 4 + 2 * (last - first + 1) }
        for i = first, last do
          local k = 4 + 2 * (i - first)
          b[k + 1], b[k + 2] = kinds[i], self.blob(datas[i])
        end
        p:query(batch_sql(self, last - first + 1), b)
      end
    end)
    if not ok then return fail(res) end
    if not res then return fail(perr) end
    for c = 1, res.n do
      local rows = res[c]
      for i = 1, #rows do ids[#ids + 1] = rows[i].id end
    end
    if #ids ~= n then return fail(format("queue: a batch of %d pushes inserted %d rows", n, #ids)) end
    return ids
  end
  local ok, err = pcall(db.transaction, db, function(tx)
    local b = { n = 6 }
    for i = 1, n do
      b[1], b[2], b[3], b[4], b[5], b[6] = topic, kinds[i], self.blob(datas[i]), headers or NULL,
        now, now + delay
      local r, rerr = tx:exec(self.sql.push, b)
      if not r then error(rerr, 0) end
      ids[i] = r.last_insert_id
    end
  end)
  if not ok then return fail(err) end
  return ids
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

-- The sweep's UPDATE (a query builder, not run): every stale row the subquery selects (or the
-- ids given), each still under the same lease guard when the update reaches it.
function Q:sweep_update(now, ids)
  return self.db:update(self.table)
    :set{ attempt = zdb.col("attempt") + 1, claimed_by = zdb.null, claimed_until = zdb.null,
      available_at = now }
    :where_in("id", ids or self:stale_query(now))
    :where_not_null("claimed_by"):where("claimed_until", "<", now)
end

-- One UPDATE over one batch (sweep_update). Returns reclaimed, more. On SQLite the sweep of
-- the stale batch (no ids) is the same statement as plain SQL (statements: sweep), rendered
-- once: the builder's per-call rendering was 4.5 % of the sweep's instructions.
function Q:sweep(ids)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  if not ids and not self.pg then
    local b = self.binds
    b[1], b[2], b.n = now_of(self), self.sweep_batch, 2
    local r, err = self.db:exec(self.sql.sweep, b)
    if not r then return fail(err) end
    local n = r.changes
    return n, n >= self.sweep_batch
  end
  local r, uerr = self:sweep_update(now_of(self), ids):exec()
  if not r then return fail(uerr) end
  local n = type(r) == "table" and r.changes or r
  return n, n >= self.sweep_batch
end

-- The next prefetched row of topic whose lease still runs at now (older ones are dropped: the
-- sweep gives them back), or nil.
local function buffered(self, topic, now)
  local buf = self.prefetched[topic]
  if not buf then return nil end
  local i = buf.next
  while i <= buf.n do
    local row = buf[i]
    buf[i] = nil
    i = i + 1
    if row.lease_end > now then
      buf.next = i
      return row
    end
  end
  self.prefetched[topic] = nil
  return nil
end

local claim_size

local function by_order(a, b)
  if a.available_at ~= b.available_at then return a.available_at < b.available_at end
  return a.id < b.id
end

-- The rows the next claim asks for: prefetch, doubled (up to prefetch_max) while the backlog
-- keeps up: the previous claim came back full and was handed out within visibility / 8. So a
-- batch of 2k rows is only taken when k rows took less than an eighth of a lease to go, and
-- at that pace the batch goes within a quarter of its lease; a slower pace, or a claim that
-- came back short, starts again at prefetch.
function claim_size(self, now, visibility)
  local size = self.claim
  if self.last_full and now - self.last_claim < visibility / 8 then
    size = size * 2
    if size > self.prefetch_max then size = self.prefetch_max end
  else
    size = self.prefetch
  end
  self.claim = size
  return size
end

function Q:pop(topic, visibility)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local now = now_of(self)
  local row = self.prefetch > 1 and buffered(self, topic, now)
  if row then
    return row.id, row.token, row.attempt, row.kind, row.enqueued_at, row.payload, row.headers
  end
  if not self.pg and db_table.due(self, now) then
    local _, err = self:sweep()
    if err then return nil, err end
  end
  self.claims = self.claims + 1
  local token = self.worker .. self.claims
  local b = self.binds
  b[1], b[2], b[3], b[4], b.n = token, now + visibility, topic, now, 4
  local rows, err
  if self.prefetch > 1 then
    local size = claim_size(self, now, visibility)
    b[5], b.n = size, 5
    rows, err = self.db:query(self.sql.pop_batch, b)
    if rows then self.last_claim, self.last_full = now, #rows == size end
  else
    rows, err = self.db:query(self.sql.pop, b)
  end
  if not rows then return fail(err) end
  row = rows[1]
  if not row then return nil end
  local n = #rows
  if n > 1 then
    -- RETURNING has no order: hand the batch out oldest first; the rest waits in the buffer.
    sort(rows, by_order)
    row = rows[1]
    local buf = { next = 1, n = n - 1 }
    for i = 2, n do
      local r = rows[i]
      r.token, r.lease_end = token, now + visibility
      buf[i - 1] = r
    end
    self.prefetched[topic] = buf
  end
  return row.id, token, row.attempt, row.kind, row.enqueued_at, row.payload, row.headers
end

-- The DELETE of n acks (PostgreSQL), cached per n.
local function acks_sql(self, n)
  local sql = self.acks_sql[n]
  if sql then return sql end
  local rows = { "(?::bigint, ?::text)" }
  for i = 2, n do rows[i] = "(?, ?)" end
  sql = format('DELETE FROM "%s" WHERE (id, claimed_by) IN (VALUES %s) RETURNING id, claimed_by', self.table,
    concat(rows, ", "))
  self.acks_sql[n] = sql
  return sql
end

-- Runs one batch of acks (in a coroutine of its own), then hands each caller its result.
local function run_acks(self, batch)
  local n, b = batch.n, {}
  for i = 1, n do
    local e = batch[i]
    b[2 * i - 1], b[2 * i] = e.id, e.lease
  end
  b.n = 2 * n
  local rows, err
  if batch.db then
    rows, err = batch.db:query(acks_sql(self, n), b)
  else
    err = "the queue is closed"
  end
  local gone = {}
  if rows then
    for i = 1, #rows do gone[tostring(rows[i].id) .. "\0" .. rows[i].claimed_by] = true end
  end
  settle(batch, function(e) return gone[tostring(e.id) .. "\0" .. tostring(e.lease)] == true end,
    not rows and err)
end

-- On PostgreSQL, acks from coroutines (the worker's jobs) that meet in one loop turn go as one
-- statement (at most ACK_BATCH a statement): each caller waits for its batch and gets its own
-- result. From a plain caller, and on SQLite, an ack is its own statement.
M.ACK_BATCH = 64
M.PUSH_BATCH = 64

function Q:ack(id, lease)
  if self.pg and running() then
    return batched(self, "acks", { id = id, lease = lease }, run_acks, M.ACK_BATCH)
  end
  local r, err = self.db:exec(self.sql.ack, id, lease)
  if not r then return fail(err) end
  return r.changes == 1
end

function Q:nack(id, lease, requeue, delay)
  local r, err
  if requeue then
    local b = self.binds
    b[1], b[2], b[3], b.n = now_of(self) + delay, id, lease, 3
    if self.pg then   -- a SELECT over the UPDATE (it notifies): its one row has changes
      r, err = self.db:first(self.sql.requeue, b)
    else
      r, err = self.db:exec(self.sql.requeue, b)
    end
  else
    r, err = self.db:exec(self.sql.ack, id, lease)
  end
  if not r then return fail(err) end
  return r.changes == 1
end

-- The wall-clock time at which a message of topics (a list) may become claimable without a
-- notification (see statements): a delayed message's time, or a lease's expiry (not before
-- the next sweep this adapter will run); nil when nothing is waiting. Two indexed reads.
function Q:next_due(topics)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local due
  if self.pg then
    local b = self.binds
    for i = 1, #topics do
      b[1], b[2], b.n = topics[i], now_of(self), 2
      local row, err = self.db:first(self.sql.due, b)
      if not row then return fail(err) end
      local at, lease = row.at, row.lease
      if at == NULL then at = nil end
      if lease ~= nil and lease ~= NULL and (not at or lease < at) then at = lease end
      if at and (not due or at < due) then due = at end
    end
    return due
  end
  for i = 1, #topics do
    local row, err = self.db:first(self.sql.due_ready, topics[i])
    if not row then return fail(err) end
    if row.at and (not due or row.at < due) then due = row.at end
  end
  local row, err = self.db:first(self.sql.due_lease)
  if not row then return fail(err) end
  local at = row.at
  if at then
    if at < self.next_sweep then at = self.next_sweep end
    if not due or at < due then due = at end
  end
  return due
end

-- Calls fn(topic) from the event loop when a message of the table is pushed or requeued by any
-- process: PostgreSQL only (LISTEN on the table's channel through zever.db's db:listen).
-- Returns the subscription (sub:close()), or nil where the database cannot notify.
function Q:subscribe(fn)
  local db = self.db
  if not self.pg or not db or type(db.listen) ~= "function" then return nil end
  local ok, sub, err = pcall(db.listen, db, self.channel, function(payload) fn(payload) end)
  if not ok then return nil, errors.adopt("queue", sub) end
  if not sub then return nil, errors.adopt("queue", err) end
  return sub
end

function Q:len(topic)
  local ready, why = self:ensure()
  if not ready then return nil, why end
  local row, err = self.db:first(self.sql.len, topic)
  if not row then return fail(err) end
  return row.n
end

-- The database belongs to whoever opened it (the container): close only stops using it, after
-- giving back the prefetched rows it never handed out (their claim is cleared, attempt kept).
function Q:close()
  local db = self.db
  for _, buf in pairs(self.prefetched) do
    for i = buf.next, buf.n do
      local r = buf[i]
      if db then pcall(db.exec, db, self.sql.release, r.id, r.token) end
    end
  end
  self.prefetched = {}
  self.db = nil
  return true
end

-- The statements of dialect for table t. The claim differs: PostgreSQL's subquery takes the row
-- it picks with FOR UPDATE SKIP LOCKED, so concurrent claimers skip a row another transaction
-- is claiming instead of queueing behind its lock and then finding it taken (the outer
-- "claimed_by IS NULL" guard stays: it is what SQLite's single writer relies on).
--
-- On PostgreSQL, push and requeue also notify the table's channel (pg_notify in the same
-- statement, so the notification is sent at commit, with the row) with the topic as payload:
-- a worker that listens sleeps until then instead of polling. next_due is the time of the next
-- message that can become claimable without a notification: the earliest delayed message of
-- the topics, or the earliest lease to expire (reclaimed by a sweep); each is read from its
-- partial index (min over the index's leading column).
local function statements(dialect, t)
  local pg = dialect == "postgres"
  local ch = M.channel(t)
  local requeue = format('UPDATE "%s" SET claimed_by = NULL, claimed_until = NULL, '
      .. 'attempt = attempt + 1, available_at = ? WHERE id = ? AND claimed_by = ?', t)
  -- On SQLite the id is the connection's last_insert_id (exec): RETURNING there fills an
  -- ephemeral table and commits at the reset, 29k more instructions a push (+60 %,
  -- bench/jobsdb_callgrind.lua PHASE=dispatch).
  local push = format('INSERT INTO "%s" (topic, kind, payload, headers, enqueued_at, '
      .. 'available_at) VALUES (?, ?, ?, ?, ?, ?)', t)
  if pg then
    push = format("WITH m AS (%s RETURNING id, topic) SELECT m.id FROM m, "
      .. "LATERAL (SELECT pg_notify('%s', m.topic)) n", push, ch)
    requeue = format("WITH u AS (%s RETURNING topic) SELECT count(*) AS changes FROM u, "
      .. "LATERAL (SELECT pg_notify('%s', u.topic)) n", requeue, ch)
  end
  if pg then
    -- The claim takes a row that is unclaimed or whose lease ran out (attempt + 1 then: the
    -- stale-lease reclaim that SQLite's sweep does), and repeats that guard on the row it
    -- updates. No column it sets is indexed: a HOT update (see SCHEMA).
    -- The rows are chosen by the table's claimable function (PICK: the same choice as
    -- SQLite's subquery, with FOR UPDATE SKIP LOCKED).
    local claim = 'UPDATE "%s" SET claimed_by = $1, claimed_until = $2, attempt = attempt + '
      .. 'CASE WHEN claimed_by IS NULL THEN 0 ELSE 1 END WHERE id = ANY (ARRAY(SELECT "%s"($3, $4, %s))) '
      .. 'AND (claimed_by IS NULL OR claimed_until < $4) '
      .. 'RETURNING id, attempt, kind, enqueued_at, payload, headers'
    local pick = M.pick_function(t)
    return {
      push = push,
      pick = pick,
      pick_select = format(PICK_SELECT, t),   -- the function's body (EXPLAIN in the spec)
      pop = format(claim, t, pick, "1"),
      pop_batch = format(claim, t, pick, "$5") .. ", available_at",
      release = format('UPDATE "%s" SET claimed_by = NULL, claimed_until = NULL '
        .. 'WHERE id = ? AND claimed_by = ?', t),
      ack = format('DELETE FROM "%s" WHERE id = ? AND claimed_by = ?', t),
      requeue = requeue,
      len = format('SELECT count(*) AS n FROM "%s" WHERE topic = ?', t),
      -- next_due of one topic: the earliest unclaimed row, and the earliest lease to run out
      -- among the topic's claimed rows (those due by now: every claimed row is).
      due = format('SELECT (SELECT min(available_at) FROM "%s" WHERE topic = $1 AND '
        .. 'claimed_by IS NULL) AS at, (SELECT min(claimed_until) FROM "%s" WHERE topic = $1 '
        .. 'AND available_at <= $2 AND claimed_by IS NOT NULL) AS lease', t, t),
    }
  end
  return {
    push = push,
    pop = format('UPDATE "%s" SET claimed_by = ?, claimed_until = ? WHERE id = '
      .. '(SELECT id FROM "%s" WHERE topic = ? AND claimed_by IS NULL AND available_at <= ? '
      .. 'ORDER BY available_at, id LIMIT 1) AND claimed_by IS NULL '
      .. 'RETURNING id, attempt, kind, enqueued_at, payload, headers', t, t),
    -- The same claim for up to ? rows (prefetch; their order is restored in Lua).
    pop_batch = format('UPDATE "%s" SET claimed_by = ?, claimed_until = ? WHERE id IN '
      .. '(SELECT id FROM "%s" WHERE topic = ? AND claimed_by IS NULL AND available_at <= ? '
      .. 'ORDER BY available_at, id LIMIT ?) AND claimed_by IS NULL '
      .. 'RETURNING id, attempt, kind, enqueued_at, payload, headers, available_at', t, t),
    release = format('UPDATE "%s" SET claimed_by = NULL, claimed_until = NULL '
      .. 'WHERE id = ? AND claimed_by = ?', t),
    ack = format('DELETE FROM "%s" WHERE id = ? AND claimed_by = ?', t),
    requeue = requeue,
    -- The queue sweep (sweep_update's statement over its own stale batch): ?1 now, ?2 the batch.
    sweep = format('UPDATE "%s" SET attempt = attempt + 1, available_at = ?1, claimed_by = NULL, '
      .. 'claimed_until = NULL WHERE id IN (SELECT id FROM "%s" WHERE claimed_by IS NOT NULL AND '
      .. 'claimed_until < ?1 ORDER BY claimed_until, id LIMIT ?2) AND claimed_by IS NOT NULL AND '
      .. 'claimed_until < ?1', t, t),
    len = format('SELECT count(*) AS n FROM "%s" WHERE topic = ?', t),
    due_ready = format('SELECT min(available_at) AS at FROM "%s" WHERE topic = ? '
      .. 'AND claimed_by IS NULL', t),
    due_lease = format('SELECT min(claimed_until) AS at FROM "%s" WHERE claimed_by IS NOT NULL',
      t),
  }
end
M.statements = statements

-- The LISTEN/NOTIFY channel of table t (an identifier of at most 63 bytes).
function M.channel(t)
  return ("zever_queue_" .. t):sub(1, 63)
end

-- Rows one claim takes on PostgreSQL (opts.prefetch; 1 on SQLite), and at most while a backlog
-- keeps up (opts.prefetch_max; claim_size): see the top.
M.PREFETCH = 8
M.PREFETCH_MAX = 64

function M.new(db, opts)
  local self = db_table.new("queue.db", db, opts,
    { table = "queue_messages", sweep_interval = 30, sweep_batch = 100 })
  local t, dialect = self.table, db_table.dialect(self.db)
  self.dialect, self.pg, self.channel = dialect, dialect == "postgres", M.channel(t)
  self.sql, self.schema = statements(dialect, t), schema(dialect, t)
  self.claims, self.worker = 0, db_table.token_prefix()
  self.blob = db_table.blob(self.db)
  local pf = opts and opts.prefetch or (self.pg and M.PREFETCH or 1)
  if type(pf) ~= "number" or pf < 1 or pf % 1 ~= 0 or pf > 1000 then
    error("queue.db: prefetch must be an integer from 1 to 1000", 2)
  end
  self.prefetch, self.prefetched, self.acks, self.acks_sql = pf, {}, nil, {}
  local pmax = opts and opts.prefetch_max or math.max(pf, M.PREFETCH_MAX)
  if type(pmax) ~= "number" or pmax < pf or pmax % 1 ~= 0 or pmax > 1000 then
    error("queue.db: prefetch_max must be an integer from prefetch to 1000", 2)
  end
  self.prefetch_max, self.claim, self.last_claim, self.last_full = pmax, pf, 0, false
  self.pushes, self.pushes_sql, self.batch_sql = nil, {}, {}
  return setmetatable(self, Q)
end

-- The adapter contract: section is the config's queue section; the database is the app's.
function M.open(section, ctx)
  local db, err = ctx:get("db")
  if not db then return nil, err end
  local pf = section.prefetch
  return M.new(db, { table = section.table, sweep_interval = section.sweep_interval,
    sweep_batch = section.sweep_batch, prefetch = pf and pf > 0 and pf or nil })
end

return M
