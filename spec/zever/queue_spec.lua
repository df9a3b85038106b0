-- zever.queue with the memory and db adapters: the conformance suite for both, then what only
-- each promises (memory: one process-wide queue shared by threads; db: a table created on first
-- use, shared by connections, stale leases reclaimed by a guarded, bounded sweep) and the
-- container.

local queue = require "zever.queue"
local zdb = require "zever.db"
local dbq = require "adapters.queue.db"
local threads = require "zever.threads"

local fs = require "spec.support.files"
local unique, slurp = fs.unique, fs.slurp

require("spec.conformance.queue")("memory", function(opts)
  return queue.new{ name = unique("conf"), clock = opts.clock,
    visibility_timeout = opts.visibility_timeout }
end)

-- The same suite on the classic binding's pop (memory pops through the FFI when the host exports
-- the core, which the spec below checks).
require("spec.conformance.queue")("memory (classic pop)", function(opts)
  local impl = require("adapters.queue.memory").new{ name = unique("classic"), clock = opts.clock,
    classic = true }
  return queue.wrap(impl, { visibility_timeout = opts.visibility_timeout })
end)

require("spec.conformance.queue")("db", function(opts)
  local db = assert(zdb.open("sqlite::memory:"))
  local impl = dbq.new(db, { clock = opts.clock, sweep_interval = 0 })
  return queue.wrap(impl, { visibility_timeout = opts.visibility_timeout })
end)

describe("adapters.queue.memory", function()
  local memory = require "adapters.queue.memory"

  it("pops through the FFI, and the classic binding reads the same queue", function()
    assert.is_true(memory.ffi)
    local name = unique("paths")
    local f, c = memory.new{ name = name }, memory.new{ name = name, classic = true }
    assert.are.equal(f.pop, getmetatable(f).pop)
    assert.are_not.equal(f.pop, c.pop)
    f:push("t", "one", 1, '{"h":"1"}', 0)
    f:push("t", ("x"):rep(3000), 2, nil, 0)
    local id, lease, attempt, kind, _, data, headers = c:pop("t", 30)
    assert.are.same({ 1, 1, "one", '{"h":"1"}' }, { attempt, kind, data, headers })
    assert.is_true(c:ack(id, lease))
    id, lease, attempt, kind, _, data, headers = f:pop("t", 30)
    assert.are.same({ 1, 2, 3000, nil }, { attempt, kind, #data, headers })
    assert.is_true(f:ack(id, lease))
    assert.is_nil(f:pop("t", 30))
    assert.is_nil(f:pop("never-pushed", 30))
    f:close()
    c:close()
  end)

  it("raises on a pop after close instead of reading a released queue", function()
    local q = memory.new{ name = unique("closed") }
    q:close()
    assert.has_error(function() q:pop("t", 30) end, "queue: the handle was released")
  end)

  it("shares one queue between two opens of the same name", function()
    local name = unique("share")
    local a = queue.new{ name = name }
    local b = queue.new{ name = name }
    a:push("t", "from a")
    a:close()
    assert.are.equal("from a", b:pop("t").payload)
    b:close()
  end)

  it("delivers each message exactly once to two threads draining one topic", function()
    local name = unique("threads")
    local keep = queue.new{ name = name }
    local n = 20000
    for i = 1, n do keep:push("jobs", i) end
    local file = os.tmpname()
    local p1 = threads.start(1, "spec.fixtures.queue_worker", name .. "|5000|" .. file .. ".1")
    local p2 = threads.start(1, "spec.fixtures.queue_worker", name .. "|5000|" .. file .. ".2")
    p1:join()
    p2:join()
    local c1, s1 = slurp(file .. ".1"):match("^(%d+) (%d+)$")
    local c2, s2 = slurp(file .. ".2"):match("^(%d+) (%d+)$")
    assert.are.equal(n, tonumber(c1) + tonumber(c2))
    assert.are.equal(n * (n + 1) / 2, tonumber(s1) + tonumber(s2))
    assert.are.equal(0, keep:len("jobs"))
    assert.are.equal(10000, keep:len("back"))
    keep:close()
    os.remove(file)
    os.remove(file .. ".1")
    os.remove(file .. ".2")
  end)
end)

describe("adapters.queue.db", function()
  local path, t
  local function clock() return t end
  before_each(function()
    path = os.tmpname()
    os.remove(path)
    t = 1000
  end)
  after_each(function()
    for _, suffix in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. suffix) end
  end)
  local function open_db()
    return assert(zdb.open("sqlite:" .. path))
  end
  local function open(db, opts)
    opts = opts or {}
    opts.clock = opts.clock or clock
    local impl = dbq.new(db, opts)
    return queue.wrap(impl, { visibility_timeout = 10 }), impl
  end

  it("creates its table on first use and leaves an existing one alone", function()
    local db = open_db()
    assert.is_nil(db:first("SELECT name FROM sqlite_master WHERE name = 'queue_messages'"))
    local q = open(db)
    assert.are.equal(0, q:len("t"))
    assert.is_not_nil(db:first("SELECT name FROM sqlite_master WHERE name = 'queue_messages'"))
    q:push("t", "kept")
    local again = open(db)
    assert.are.equal(1, again:len("t"))
    db:close()
  end)

  -- On SQLite the id is the connection's last insert id (exec), not a RETURNING row: RETURNING
  -- cost a push 60 % more instructions (bench/jobsdb_callgrind.lua). The ids must still be the
  -- rows', for push, for each of a batch, and after other statements ran on the connection.
  it("push and push_batch return the ids of the rows they insert", function()
    local db = open_db()
    local q = open(db)
    local first = q:push("t", "one")
    assert.are.same({ { id = first, payload = "one" } },
      db:query("SELECT id, payload FROM queue_messages ORDER BY id"))
    db:exec("CREATE TABLE other (x INTEGER PRIMARY KEY)")
    db:exec("INSERT INTO other (x) VALUES (77)")
    local ids = q:push_batch("t", { "two", "three" })
    local rows = db:query("SELECT id, payload FROM queue_messages WHERE id > ? ORDER BY id", first)
    assert.are.same({ { id = ids[1], payload = "two" }, { id = ids[2], payload = "three" } }, rows)
    assert.are.equal(ids[2] + 1, q:push("t", "four"))
    assert.are.equal("four", db:first("SELECT payload FROM queue_messages WHERE id = ?",
      ids[2] + 1).payload)
    assert.is_nil(dbq.statements("sqlite", "queue_messages").push:find("RETURNING", 1, true))
    db:close()
  end)

  it("uses the table named in its options", function()
    local db = open_db()
    local q = open(db, { table = "jobs_q" })
    q:push("t", 1)
    assert.are.equal(1, db:first('SELECT count(*) AS n FROM "jobs_q"').n)
    assert.has_error(function() dbq.new(db, { table = "bad name" }) end)
    db:close()
  end)

  it("shares one queue between two connections, and a claim is seen by both", function()
    local a, b = open_db(), open_db()
    local qa, qb = open(a), open(b)
    qa:push("t", "one")
    qa:push("t", "two")
    local m1 = qb:pop("t")
    local m2 = qa:pop("t")
    assert.are.equal("one", m1.payload)
    assert.are.equal("two", m2.payload)
    assert.is_nil(qa:pop("t"))
    assert.is_true(qa:ack(m1))    -- any process may settle a message by its lease
    assert.are.equal(1, qb:len("t"))
    a:close()
    b:close()
  end)

  it("reclaims an expired lease only when the sweep runs, then bumps attempt once", function()
    local db = open_db()
    local q, impl = open(db, { sweep_interval = 60 })
    q:push("t", "m")
    assert.is_not_nil(q:pop("t"))      -- the first pop sweeps; the next sweep is due at t + 60
    t = t + 11
    assert.is_nil(q:pop("t"))          -- stale, but no sweep yet
    assert.are.same({ 1 }, impl:stale_ids())
    t = t + 50
    local m = q:pop("t")               -- this pop sweeps
    assert.are.equal(2, m.attempt)
    local row = db:first('SELECT attempt, claimed_by FROM "queue_messages"')
    assert.are.equal(2, row.attempt)
    assert.is_string(row.claimed_by)
    db:close()
  end)

  it("sweeps at most sweep_batch stale leases per run and says more remain", function()
    local db = open_db()
    local q, impl = open(db, { sweep_interval = 1e9, sweep_batch = 3 })
    for i = 1, 7 do q:push("t", i) end
    for _ = 1, 7 do assert.is_not_nil(q:pop("t")) end
    t = t + 11
    local n, more = impl:sweep()
    assert.are.equal(3, n)
    assert.is_true(more)
    assert.are.equal(3, impl:sweep())
    n, more = impl:sweep()
    assert.are.equal(1, n)
    assert.is_false(more)
    assert.are.equal(0, impl:sweep())
    assert.are.equal(7, db:first('SELECT count(*) AS n FROM "queue_messages" '
      .. 'WHERE attempt = 2 AND claimed_by IS NULL').n)
    db:close()
  end)

  it("skips a message settled between the sweep's select and its update", function()
    local a, b = open_db(), open_db()
    local qa, impl = open(a, { sweep_interval = 1e9 })
    local qb = open(b, { sweep_interval = 1e9 })
    assert.is_nil(qb:pop("other"))               -- qb's first pop runs its sweep now, not later
    for i = 1, 4 do qa:push("t", i) end
    local popped = {}
    for i = 1, 4 do popped[i] = qa:pop("t") end
    t = t + 11
    local batch = impl:stale_ids()               -- the sweep's select
    assert.are.same({ 1, 2, 3, 4 }, batch)
    assert.is_true(qb:ack(popped[2]))            -- settled from another connection
    assert.is_true(qb:nack(popped[3], true))     -- requeued (attempt 2) ...
    local again = qb:pop("t")                    -- ... and claimed again with a fresh lease
    assert.are.equal(3, again.payload)
    local n = impl:sweep(batch)                  -- the update over the batch selected before
    assert.are.equal(2, n)
    local rows = a:query('SELECT id, attempt, claimed_by FROM "queue_messages" ORDER BY id')
    assert.are.equal(3, #rows)
    assert.are.same({ 1, 2 }, { rows[1].id, rows[1].attempt })
    assert.are.same({ 3, 2 }, { rows[2].id, rows[2].attempt })   -- not double-bumped
    assert.is_string(rows[2].claimed_by)                         -- and still leased
    assert.are.same({ 4, 2 }, { rows[3].id, rows[3].attempt })
    assert.is_true(qb:ack(again))
    a:close()
    b:close()
  end)

  it("sweeps on SQLite with its one prepared UPDATE: stale leases only, leased index, a batch", function()
    local db = open_db()
    local q, impl = open(db, { sweep_batch = 2, sweep_interval = 3600 })
    for i = 1, 4 do q:push("t", i) end
    local m1, m2, m3 = q:pop("t"), q:pop("t"), q:pop("t")   -- leases run to t + 10
    assert.is_true(q:ack(m2))
    t = t + 5
    local m4 = q:pop("t")                                     -- its lease runs to t + 10
    t = t + 6                                                 -- m1 and m3 are stale, m4 is not
    local n, more = impl:sweep()
    assert.are.equal(2, n)
    assert.is_true(more)                                      -- the batch was full
    local rows = db:query('SELECT id, attempt, claimed_by, available_at FROM "queue_messages" '
      .. "ORDER BY id")
    assert.are.same({ m1.id, 2, t }, { rows[1].id, rows[1].attempt, rows[1].available_at })
    assert.is_nil(rows[1].claimed_by)
    assert.are.same({ m3.id, 2 }, { rows[2].id, rows[2].attempt })
    assert.are.same({ m4.id, 1 }, { rows[3].id, rows[3].attempt })
    assert.is_string(rows[3].claimed_by)                      -- a live lease is left alone
    assert.are.same({ 0, false }, { impl:sweep() })           -- nothing stale: not bumped again
    local plan = db:query("EXPLAIN QUERY PLAN " .. impl.sql.sweep, t, 2)
    local text = {}
    for i, r in ipairs(plan) do text[i] = r.detail end
    text = table.concat(text, "\n")
    assert.matches("SEARCH queue_messages USING INTEGER PRIMARY KEY", text, 1, true)
    assert.matches("SEARCH queue_messages USING INDEX queue_messages_leased (claimed_until<?)",
      text, 1, true)
    assert.is_nil(text:find("SCAN", 1, true))
    db:close()
  end)

  it("renders the sweep as one UPDATE with a guarded, ordered, limited IN-subquery", function()
    local db = open_db()
    local _, impl = open(db, { sweep_batch = 50 })
    local sql, binds = db:update("queue_messages")
      :set{ attempt = zdb.col("attempt") + 1 }
      :where_in("id", impl:stale_query(5)):to_sql()
    assert.matches('"attempt" = %("attempt" %+ %?%)', sql)
    assert.matches('IN %(SELECT "id" FROM "queue_messages" WHERE "claimed_by" IS NOT NULL AND '
      .. '"claimed_until" < %? ORDER BY "claimed_until" ASC, "id" ASC LIMIT %?%)', sql)
    assert.are.equal(50, binds[#binds])
    db:close()
  end)
end)

describe("the queue battery in the container", function()
  local container = require "zever.container"
  local config = require "zever.config"

  it("resolves the db adapter by default over the app's database", function()
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir",
      env = { DB_DSN = "sqlite::memory:" } })
    local c = container.new(cfg)
    local q = assert(c:get("queue"))
    q:push("t", { hello = "world" })
    assert.are.equal("world", q:pop("t").payload.hello)
    assert.are.equal(1, c:get("db"):first('SELECT count(*) AS n FROM "queue_messages"').n)
    c:close()
  end)

  it("resolves the memory adapter when configured", function()
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir",
      env = { QUEUE_ADAPTER = "memory" } })
    local c = container.new(cfg)
    local q = assert(c:get("queue"))
    local id = q:push("spec:container", "x")
    assert.is_number(id)
    assert.is_true(q:ack(q:pop("spec:container")))
    c:close()
  end)
end)
