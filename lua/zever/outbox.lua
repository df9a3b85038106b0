-- zever.outbox: the front-end of the transactional-outbox battery: record a message in the same
-- database transaction as the change it announces, and let a relay publish it to the queue or
-- the event bus afterwards, at least once, in order per key.
--
--   local ob = outbox.new(db)                          -- adapters.outbox.db over a zever.db
--   db:transaction(function(tx)
--     tx:insert_into("orders"):values(order):exec()
--     ob:record(tx, { topic = "orders.created", payload = order, key = "customer:7" })
--   end)                                               -- both rows commit, or neither
--   ob:relay(sink[, opts])   -> relayed, failed | nil, err    one batch (the worker loops it)
--   ob:status()              -> { pending, delivered, dead, oldest_pending_age } | nil, err
--   ob:dead([limit])         -> list of dead messages (the dead-letter state) | nil, err
--   ob:requeue(id | "all")   -> count | nil, err       dead (or pending) back to due now
--   ob:purge(before_seconds) -> count | nil, err       delivered rows older than that
--   ob:check(max_age)        -> true | nil, err ("stalled") for readiness probes
--   outbox.to_queue(queue) / outbox.to_eventbus(bus)   -> sink
--
-- record(tx, msg): msg.topic (a non-empty string), msg.payload (a JSON value), msg.key (nil or
-- a string: messages with one key are relayed in record order, one after the other; keyless
-- ones in any order). tx is the caller's transaction handle (or the database itself, outside a
-- transaction): the row is written through it, so it commits or rolls back with the caller's
-- work. It returns the message's id (a growing integer).
--
-- relay(sink, opts) claims up to opts.batch (100) due messages (a lease of opts.lease, 30 s, so
-- two relays never hold one message at once and a relay that dies gives its batch back), calls
-- sink(msg) for each, msg = { id, topic, key, payload, attempts }, and settles each: delivered
-- when sink returned true; else retried after a jittered exponential backoff (opts.base 1 s
-- doubling to opts.cap 300 s) and, after opts.max_attempts (10) attempts, dead. At least once:
-- a relay killed after sink and before settling publishes that message again, so consumers
-- deduplicate by msg.id (the sinks below carry it: the queue message and the event have
-- outbox_id). A sink that raises counts as a failure.
--
-- outbox.wrap(impl, opts) puts this front-end over an adapter (adapters.outbox.db), which takes
-- valid arguments: impl:record(tx, topic, key, body), impl:claim(n, lease) -> rows,
-- impl:settle(delivered_ids, failures), impl:status(), impl:dead(limit), impl:requeue(id),
-- impl:purge(before).

local battery = require "zever.battery"
local json = require "zever.json"

local type, error, pcall, tostring, floor, random, min, sort = type, error, pcall, tostring,
  math.floor, math.random, math.min, table.sort

local M = {}

local Outbox = battery.define("outbox", "the outbox is closed")
M.error = Outbox.error

local CLOSED = Outbox.CLOSED

function Outbox:record(tx, msg)
  if type(tx) ~= "table" or type(tx.exec) ~= "function" then
    error("outbox:record: tx must be a zever.db transaction (or database)", 2)
  end
  if type(msg) ~= "table" then error("outbox:record: msg must be a table", 2) end
  if type(msg.topic) ~= "string" or msg.topic == "" then
    error("outbox:record: msg.topic must be a non-empty string", 2)
  end
  if msg.key ~= nil and type(msg.key) ~= "string" then
    error("outbox:record: msg.key must be a string", 2)
  end
  if self.closed then return nil, CLOSED end
  local ok, body = pcall(json.encode, msg.payload)
  if not ok then
    return nil, Outbox.error("invalid", "the payload is not a JSON value: " .. tostring(body))
  end
  return self.impl:record(tx, msg.topic, msg.key, body)
end

local function backoff(opts, attempts)
  local d = min(opts.base * 2 ^ (attempts - 1), opts.cap)
  return d * (0.5 + random() * 0.5)
end

function Outbox:relay(sink, opts)
  if type(sink) ~= "function" then error("outbox:relay: sink must be a function", 2) end
  battery.opt_table(opts, "outbox:relay", "opts")
  opts = opts or {}
  local batch = battery.count(opts.batch, self.batch, "outbox:relay", "batch", 1)
  local lease = battery.seconds(opts.lease, self.lease, "outbox:relay", "lease", true, true)
  if self.closed then return nil, CLOSED end
  local rows, err = self.impl:claim(batch, lease)
  if not rows then return nil, err end
  sort(rows, function(a, b) return a.id < b.id end)
  local delivered, failures = {}, {}
  local policy = { base = opts.base or self.base, cap = opts.cap or self.cap }
  local max_attempts = opts.max_attempts or self.max_attempts
  for i = 1, #rows do
    local row = rows[i]
    local payload = json.decode(row.payload)
    local msg = { id = row.id, topic = row.topic, key = row.key, payload = payload,
      attempts = row.attempts }
    local ok, r, why = pcall(sink, msg)
    if ok and r then
      delivered[#delivered + 1] = row.id
    else
      local attempts = row.attempts + 1
      failures[#failures + 1] = { id = row.id, attempts = attempts,
        dead = attempts >= max_attempts, delay = backoff(policy, attempts),
        error = tostring(ok and (why or "the sink returned false") or r):sub(1, 500) }
    end
  end
  if #rows > 0 then
    local ok, serr = self.impl:settle(delivered, failures)
    if not ok then return nil, serr end
  end
  self.counters.relayed = self.counters.relayed + #delivered
  self.counters.failed = self.counters.failed + #failures
  return #delivered, #failures
end

function Outbox:status()
  if self.closed then return nil, CLOSED end
  return self.impl:status()
end

function Outbox:dead(limit)
  limit = battery.count(limit, 100, "outbox:dead", "limit", 1)
  if self.closed then return nil, CLOSED end
  return self.impl:dead(limit)
end

function Outbox:requeue(id)
  if id ~= "all" and (type(id) ~= "number" or id % 1 ~= 0) then
    error('outbox:requeue: id must be an integer or "all"', 2)
  end
  if self.closed then return nil, CLOSED end
  return self.impl:requeue(id)
end

function Outbox:purge(before)
  before = battery.seconds(before, nil, "outbox:purge", "before", false, true)
  if before == nil then error("outbox:purge: before must be a number of seconds >= 0", 2) end
  if self.closed then return nil, CLOSED end
  return self.impl:purge(before)
end

function Outbox:check(max_age)
  max_age = battery.seconds(max_age, 60, "outbox:check", "max_age", true, true)
  local st, err = self:status()
  if not st then return nil, err end
  if st.oldest_pending_age > max_age then
    return nil, Outbox.error("stalled", ("the oldest pending message waits for %d s (over %d s)")
      :format(floor(st.oldest_pending_age), floor(max_age)))
  end
  return true
end

-- A sink that pushes each message to a zever.queue on its topic, the payload wrapped as
-- { outbox_id = id, payload = payload } (consumers deduplicate by outbox_id).
function M.to_queue(queue)
  return function(msg)
    local ok, err = queue:push(msg.topic, { outbox_id = msg.id, payload = msg.payload })
    if not ok then return nil, err end
    return true
  end
end

-- A sink that publishes each message on a zever.eventbus, as { outbox_id, payload }.
function M.to_eventbus(bus)
  return function(msg)
    local ok, err = bus:publish(msg.topic, { outbox_id = msg.id, payload = msg.payload })
    if not ok then return nil, err end
    return true
  end
end

-- opts: batch (100), lease (30 s), base (1 s), cap (300 s), max_attempts (10).
function M.wrap(impl, opts)
  opts = opts or {}
  return battery.object(Outbox, impl, {
    batch = battery.count(opts.batch, 100, "outbox.wrap", "batch", 1),
    lease = battery.seconds(opts.lease, 30, "outbox.wrap", "lease", true, true),
    base = battery.seconds(opts.base, 1, "outbox.wrap", "base", false, true),
    cap = battery.seconds(opts.cap, 300, "outbox.wrap", "cap", false, true),
    max_attempts = battery.count(opts.max_attempts, 10, "outbox.wrap", "max_attempts", 1),
    counters = { relayed = 0, failed = 0 },
  })
end

-- The relay loop `zever worker` runs (docs/outbox.md): batch after batch (one loop turn, 1 ms,
-- apart) while batches come back full, then one batch every `interval` seconds (1 s). Each
-- batch runs in a coroutine of the loop (a sink may wait: a redis queue, a webhook); one
-- re-armable timer paces them, so an idle relay costs one timer wake-up per interval and
-- allocates nothing to wait (the pacing is zever.sched.periodic's).
--
--   local r = outbox.relayer(ob, sink, { interval = 1, log = fn(level, msg, fields) })
--   r:start()            r:stop([on_done])    (on_done once the batch in flight settled)
--   r.stats              { batches, relayed, failed, errors }
function M.relayer(ob, sink, opts)
  if type(sink) ~= "function" then error("outbox.relayer: sink must be a function", 2) end
  opts = opts or {}
  local interval = opts.interval or 1
  local log = opts.log or function() end
  local stats = { batches = 0, relayed = 0, failed = 0, errors = 0 }
  local function failed(err)
    stats.errors = stats.errors + 1
    log("error", "outbox relay failed", { error = tostring(err) })
  end
  local r = require("zever.sched").periodic(function()
    local relayed, nfailed = ob:relay(sink)
    if relayed == nil then
      failed(nfailed)
      return false
    end
    stats.batches = stats.batches + 1
    stats.relayed = stats.relayed + relayed
    stats.failed = stats.failed + nfailed
    return relayed + nfailed >= ob.batch
  end, interval, { on_error = failed })
  r.stats = stats
  return r
end

-- The sink a configuration names: "queue" (app.queue) or "eventbus" (app.eventbus).
function M.sink_for(app, name)
  if name == nil or name == "queue" then return M.to_queue(app.queue) end
  if name == "eventbus" then return M.to_eventbus(app.eventbus) end
  error('outbox: relay_sink must be "queue" or "eventbus", got ' .. tostring(name), 2)
end

-- An outbox in db (a zever.db): opts as adapters.outbox.db.new, plus wrap's.
function M.new(db, opts)
  return M.wrap(require("adapters.outbox.db").new(db, opts), opts)
end

return M
