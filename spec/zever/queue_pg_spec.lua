-- adapters.queue.db on PostgreSQL: the conformance suite (each queue in a table of its own,
-- the sweep on every pop), the jobs conformance suite over it, and the plans of the claim and
-- of the stale-lease sweep, read with EXPLAIN on a real PostgreSQL 15 (spec/support/pg_server) over a table with enough rows
-- that a sequential scan would be the planner's choice without the indexes. enable_seqscan
-- stays at its default: the planner picks the index because it is cheaper, not because it has
-- to.

local pg_server = require "spec.support.pg_server"
local dbq = require "adapters.queue.db"
local zdb = require "zever.db"
local queue = require "zever.queue"
local jobs = require "zever.jobs"
local jq = require "adapters.jobs.queue"
local sched = require "zever.sched"
local testing = require "zever.testing"
local fs = require "spec.support.files"
local unique = fs.unique_ident

describe("adapters.queue.db on postgres #pg", function()
  local fx = pg_server.fixture("queue")
  local db
  setup(function() db = assert(zdb.open(fx.dsn)) end)
  teardown(function() pcall(db.close, db) end)

  require("spec.conformance.queue")("db (postgres)", function(opts)
    local impl = dbq.new(db, { table = unique("conf"), clock = opts.clock, sweep_interval = 0 })
    return queue.wrap(impl, { visibility_timeout = opts.visibility_timeout })
  end)

  require("spec.conformance.jobs")("db queue (postgres)", function()
    local q = queue.wrap(dbq.new(db, { table = unique("q") }), { visibility_timeout = 30 })
    return jobs.wrap(jq.new(q, { db = db, table = unique("failed") }),
      { attempts = 3, base = 0.01, cap = 0.1, jitter = false, timeout = 5 })
  end)

  it("claims up to prefetch rows in one statement and hands them out oldest first", function()
    local impl = dbq.new(db, { table = unique("pf"), prefetch = 8 })
    local q = queue.wrap(impl, { visibility_timeout = 30 })
    for i = 1, 5 do assert(q:push("t", { i = i })) end
    local claims, orig = 0, impl.db.query
    impl.db.query = function(...)
      claims = claims + 1
      return orig(...)
    end
    for i = 1, 5 do assert.are.equal(i, assert(q:pop("t")).payload.i) end
    assert.is_nil(q:pop("t"))
    assert.are.equal(2, claims)   -- one claim took the five; one found nothing
    q:close()
  end)

  it("doubles the claim up to prefetch_max while a full batch goes within visibility / 8", function()
    local t = 1000
    local impl = dbq.new(db, { table = unique("grow"), prefetch = 4, prefetch_max = 16,
      clock = function() return t end })
    local q = queue.wrap(impl, { visibility_timeout = 80 })
    for i = 1, 60 do assert(q:push("t", { i = i })) end
    local asked, orig = {}, impl.db.query
    impl.db.query = function(self, sql, binds)
      if sql == impl.sql.pop_batch then asked[#asked + 1] = binds[5] end
      return orig(self, sql, binds)
    end
    -- A fast backlog: each batch goes at once (time stands still): 4, 8, 16, 16 = 44 rows.
    for i = 1, 44 do assert.are.equal(i, assert(q:pop("t")).payload.i) end
    assert.are.same({ 4, 8, 16, 16 }, asked)
    -- A slow pace: 20 s (more than 80 / 8) since the last claim, and the batch claimed at 45
    -- goes over 40 s.
    asked = {}
    t = t + 20
    for i = 45, 48 do
      assert.are.equal(i, assert(q:pop("t")).payload.i)
      t = t + 10
    end
    assert.are.same({ 4 }, asked)
    -- So the next claim starts again at 4; then fast again: 8 (the last 8 rows), then 16
    -- comes back empty (short), so the one after asks 4 again.
    for i = 49, 60 do assert.are.equal(i, assert(q:pop("t")).payload.i) end
    assert.is_nil(q:pop("t"))
    assert.is_nil(q:pop("t"))
    assert.are.same({ 4, 4, 8, 16, 4 }, asked)
    q:close()
  end)

  it("refuses a prefetch_max below prefetch", function()
    assert.has_error(function() dbq.new(db, { table = unique("bad"), prefetch = 8,
      prefetch_max = 4 }) end, "queue.db: prefetch_max must be an integer from prefetch to 1000")
  end)

  it("gives back on close the prefetched rows it never handed out, attempt unchanged", function()
    local name = unique("pfclose")
    local other = assert(zdb.open(fx.dsn))
    local a = queue.wrap(dbq.new(db, { table = name, prefetch = 8 }), { visibility_timeout = 30 })
    local b = queue.wrap(dbq.new(other, { table = name, prefetch = 1 }), { visibility_timeout = 30 })
    for i = 1, 3 do assert(a:push("t", { i = i })) end
    assert.are.equal(1, assert(a:pop("t")).payload.i)
    assert.is_nil(b:pop("t"))   -- the other two wait in a's buffer, claimed
    a:close()
    local m = assert(b:pop("t"))
    assert.are.equal(2, m.payload.i)
    assert.are.equal(1, m.attempt)
    b:close(); other:close()
  end)

  it("drops a prefetched row whose lease ran out; the sweep gives it back", function()
    local t = 1000
    local q = queue.wrap(dbq.new(db, { table = unique("pfexp"), prefetch = 8, sweep_interval = 0,
      clock = function() return t end }), { visibility_timeout = 10 })
    for i = 1, 2 do assert(q:push("t", { i = i })) end
    assert.are.equal(1, assert(q:pop("t")).payload.i)
    t = t + 11
    local m = assert(q:pop("t"))
    assert.are.equal(1, m.payload.i)
    assert.are.equal(2, m.attempt)
    q:close()
  end)

  it("sends the acks of coroutines that meet in one loop turn as one statement", function()
    local impl = dbq.new(db, { table = unique("acks") })
    local q = queue.wrap(impl, { visibility_timeout = 30 })
    for i = 1, 5 do assert(q:push("t", { i = i })) end
    local msgs = {}
    for i = 1, 5 do msgs[i] = assert(q:pop("t")) end
    local statements, orig = 0, impl.db.query
    impl.db.query = function(...)
      statements = statements + 1
      return orig(...)
    end
    local results, n = {}, 0
    local function ack(k, id, lease)
      results[k] = impl:ack(id, lease)
      n = n + 1
    end
    sched.spawn(ack, 0, msgs[1].id, "not the lease")
    for i = 1, 5 do sched.spawn(ack, i, msgs[i].id, msgs[i]._lease) end
    assert.is_true(testing.run_until(function() return n == 6 end, 10))
    assert.are.equal(1, statements)
    assert.is_false(results[0])
    for i = 1, 5 do assert.is_true(results[i]) end
    assert.are.equal(0, q:len("t"))
    q:close()
  end)

  it("sends the pushes of coroutines that meet in one loop turn as one INSERT", function()
    local name = unique("pushes")
    local impl = dbq.new(db, { table = name })
    local q = queue.wrap(impl, { visibility_timeout = 30 })
    assert.are.equal(0, q:len("a"))                 -- the table exists: only pushes count below
    local heard = {}
    local sub = assert(impl:subscribe(function(topic) heard[topic] = true end))
    local statements, orig = 0, impl.db.query
    impl.db.query = function(...)
      statements = statements + 1
      return orig(...)
    end
    local ids, n = {}, 0
    for i = 1, 10 do
      sched.spawn(function()
        ids[i] = assert(q:push(i % 2 == 0 and "a" or "b", { i = i }))
        n = n + 1
      end)
    end
    assert.is_true(testing.run_until(function() return n == 10 end, 10))
    assert.are.equal(1, statements)
    impl.db.query = orig
    -- Each caller got the id of its own row.
    local seen = {}
    for _, topic in ipairs({ "a", "b" }) do
      while true do
        local m = q:pop(topic)
        if not m then break end
        assert.are.equal(ids[m.payload.i], m.id)
        assert.are.equal(m.payload.i % 2 == 0 and "a" or "b", topic)
        seen[#seen + 1] = m.payload.i
        assert.is_true(q:ack(m))
      end
    end
    assert.are.equal(10, #seen)
    assert.is_true(testing.run_until(function() return heard.a and heard.b end, 10))
    sub:close()
    -- A batch that fails fails for every caller in it, with the database's error.
    db:exec('DROP TABLE "' .. name .. '"')
    local errs, m = {}, 0
    for i = 1, 3 do
      sched.spawn(function()
        local id, err = q:push("a", { i = i })
        errs[i] = { id = id, err = err }
        m = m + 1
      end)
    end
    assert.is_true(testing.run_until(function() return m == 3 end, 10))
    for i = 1, 3 do
      assert.is_nil(errs[i].id)
      assert.is_truthy(tostring(errs[i].err):find(name, 1, true), tostring(errs[i].err))
    end
    q:close()
  end)

  it("takes prefetch from the queue section (QUEUE_PREFETCH); 0 is the dialect's default", function()
    local config = require "zever.config"
    local container = require "zever.container"
    for _, case in ipairs({ { "32", 32 }, { "0", dbq.PREFETCH } }) do
      local dir = fs.tmpdir(nil, "zever-queue-pg-cfg")
      local cfg = assert(config.load{ dir = dir, env = { DB_DSN = fx.dsn,
        QUEUE_PREFETCH = case[1], QUEUE_TABLE = unique("cfg") } })
      local c = container.new(cfg)
      local q = assert(c:get("queue"))
      assert.are.equal(case[2], q.impl.prefetch)
      c:close()
      fs.rm_rf(dir)
    end
  end)

  it("never hands one message to two claimers on two connections", function()
    local name = unique("two")
    local other = assert(zdb.open(fx.dsn))
    local a = queue.wrap(dbq.new(db, { table = name }), { visibility_timeout = 30 })
    local b = queue.wrap(dbq.new(other, { table = name }), { visibility_timeout = 30 })
    for i = 1, 20 do assert(a:push("t", { i = i })) end
    local seen, n = {}, 0
    while true do
      local m1, m2 = a:pop("t"), b:pop("t")
      if not m1 and not m2 then break end
      for _, m in ipairs{ m1, m2 } do
        if m then
          assert.is_nil(seen[m.payload.i])
          seen[m.payload.i], n = true, n + 1
        end
      end
    end
    assert.are.equal(20, n)
    a:close(); b:close(); other:close()
  end)
end)

-- PostgreSQL's literal of a bound value (the spec's own values: numbers, plain strings, NULL).
local function literal(v)
  if v == zdb.null then return "NULL" end
  if type(v) == "number" then return string.format("%.17g", v) end
  return "'" .. tostring(v):gsub("'", "''") .. "'"
end

-- The text of EXPLAIN EXECUTE for sql (? or $n placeholders) with binds, as one psql script.
local function explain(sql, binds)
  local n = 0
  if not sql:find("%$%d") then
    sql = sql:gsub("%?", function() n = n + 1; return "$" .. n end)
  end
  local args = {}
  for i = 1, (binds.n or #binds) do args[i] = literal(binds[i]) end
  if #args == 0 then return "EXPLAIN " .. sql end
  return "PREPARE q AS " .. sql .. "; EXPLAIN EXECUTE q(" .. table.concat(args, ", ") .. ")"
end

-- True when a line of plan scans index (Index Scan, Index Only Scan or Bitmap Index Scan).
local function uses_index(plan, index)
  for line in plan:gmatch("[^\n]+") do
    if line:find("Index", 1, true) and line:find(index, 1, true) then return true end
  end
  return false
end

describe("adapters.queue.db plans on postgres #pg", function()
  local fx = pg_server.fixture("queue_plans")
  local T = "queue_plans"
  local NOW = 1000000

  local function psql(sql)
    local r = fx.server:psql(fx.dsn, sql)
    assert(r.code == 0, r.stderr)
    return r.stdout
  end

  setup(function()
    for _, s in ipairs(dbq.schema("postgres", T)) do psql(s) end
    -- 60,000 rows: 50,000 leased until later, 500 stale leases, 9,500 ready on 10 topics.
    psql(([[
INSERT INTO %s (topic, kind, payload, attempt, enqueued_at, available_at, claimed_by,
  claimed_until)
SELECT 't' || (g %% 10), 1, '\x00'::bytea, 1, %d, %d + (g %% 100),
  CASE WHEN g <= 50500 THEN 'w:' || g END,
  CASE WHEN g <= 50000 THEN %d + 30 WHEN g <= 50500 THEN %d - 5 END
FROM generate_series(1, 60000) AS g;
ANALYZE %s]]):format(T, NOW, NOW, NOW, NOW, T))
  end)

  it("claims through the ready index, never a sequential scan", function()
    local sql = dbq.statements("postgres", T)
    assert.is_truthy(sql.pop:find("FOR UPDATE SKIP LOCKED", 1, true))
    local plan = psql(explain(sql.pop, { "w:claim", NOW + 30, "t3", NOW, n = 4 }))
    assert.is_true(uses_index(plan, T .. "_ready"), plan)
    assert.is_nil(plan:find("Seq Scan", 1, true), plan)
    assert.is_truthy(sql.pop_batch:find("FOR UPDATE SKIP LOCKED", 1, true))
    plan = psql(explain(sql.pop_batch, { "w:claim", NOW + 30, "t3", NOW, 8, n = 5 }))
    assert.is_true(uses_index(plan, T .. "_ready"), plan)
    assert.is_nil(plan:find("Seq Scan", 1, true), plan)
  end)

  it("reads the next due time of a worker's sleep from the two partial indexes", function()
    local sql = dbq.statements("postgres", T)
    local plan = psql(explain(sql.due_ready, { "t3", n = 1 }))
    assert.is_true(uses_index(plan, T .. "_ready"), plan)
    assert.is_nil(plan:find("Seq Scan", 1, true), plan)
    plan = psql(explain(sql.due_lease, { n = 0 }))
    assert.is_true(uses_index(plan, T .. "_leased"), plan)
    assert.is_nil(plan:find("Seq Scan", 1, true), plan)
  end)

  it("sweeps stale leases through the leased index in one statement", function()
    -- The sweep's own statement, rendered by the query builder for postgres.
    local sdb = assert(zdb.open("sqlite::memory:"))
    local impl = dbq.new(sdb, { table = T, sweep_batch = 100 })
    local sql, binds = impl:sweep_update(NOW):to_sql("postgres")
    sdb:close()
    local plan = psql(explain(sql, binds))
    assert.is_true(uses_index(plan, T .. "_leased"), plan)
    assert.is_nil(plan:find("Seq Scan", 1, true), plan)
    assert.are.equal(1, select(2, plan:gsub("Update on", "")))
  end)
end)
