-- zever.worker over the db queue on a real PostgreSQL 15 (spec/support/pg_server): the worker
-- subscribes (LISTEN on the queue table's channel) and sleeps instead of polling. An idle
-- worker sends no statement (counted on the handle the queue adapter uses, while the loop runs
-- to a deadline on the real clock); a dispatch from another connection wakes it at once
-- (listen_max is 30 s, so only the notification can); a delayed job runs at its time with no
-- notification due (next_due).

local pg_server = require "spec.support.pg_server"
local zdb = require "zever.db"
local queue = require "zever.queue"
local jobs = require "zever.jobs"
local worker = require "zever.worker"
local dbq = require "adapters.queue.db"
local jq = require "adapters.jobs.queue"
local testing = require "zever.testing"
local sys = require "zever.sys"
local fs = require "spec.support.files"
local unique = fs.unique_ident

local DEFAULTS = { attempts = 1, base = 0.01, cap = 0.1, jitter = false, timeout = 5 }

describe("zever.worker on the postgres db queue #pg", function()
  local fx = pg_server.fixture("worker")
  local db, other
  setup(function()
    db, other = assert(zdb.open(fx.dsn)), assert(zdb.open(fx.dsn))
  end)
  teardown(function()
    pcall(db.close, db)
    pcall(other.close, other)
  end)

  -- A worker on a fresh queue table over db; statements counts what the adapter sends.
  local function start(handler)
    local name = unique("wq")
    local impl = dbq.new(db, { table = name })
    local counter = { n = 0 }
    for _, m in ipairs{ "exec", "query", "first" } do
      local orig = impl.db[m]
      impl.db[m] = function(...)
        counter.n = counter.n + 1
        return orig(...)
      end
    end
    local j = jobs.wrap(jq.new(queue.wrap(impl, { visibility_timeout = 30 }), { db = db }), DEFAULTS)
    j:register("work", handler)
    local w = worker.new(j, { listen_max = 30 })
    w:start()
    -- The producer: the same table through another connection.
    local pj = jobs.wrap(jq.new(queue.wrap(dbq.new(other, { table = name }),
      { visibility_timeout = 30 }), { db = other }), DEFAULTS)
    return w, pj, counter
  end

  local function stop(w)
    local drained = false
    w:drain(0, function() drained = true end)
    -- A drain that starts while the poller queries must not wait for its 30 s sleep.
    assert.is_true(testing.run_until(function() return drained end, 5))
  end

  it("subscribes, then sends no statement while idle", function()
    local w, _, counter = start(function() end)
    assert.is_not_nil(w.sub)
    -- The first empty poll: a claim and the next due time, then the long sleep.
    assert.is_true(testing.run_until(function() return w.waiting ~= nil and counter.n > 0 end, 5))
    local before = counter.n
    local deadline = sys.now() + 1
    testing.run_until(function() return counter.n ~= before or sys.now() >= deadline end, 3)
    assert.are.equal(before, counter.n)
    stop(w)
  end)

  it("wakes on a dispatch from another connection", function()
    local ran = 0
    local w, pj = start(function() ran = ran + 1 end)
    assert.is_true(testing.run_until(function() return w.waiting ~= nil end, 5))
    assert(pj:dispatch("work", { n = 1 }))
    assert.is_true(testing.run_until(function() return ran == 1 end, 5))
    assert.is_true(w.stats.notified >= 1)
    stop(w)
  end)

  it("runs a delayed job at its time without a notification then", function()
    local ran_at
    local w, pj = start(function() ran_at = sys.wall() end)
    assert.is_true(testing.run_until(function() return w.waiting ~= nil end, 5))
    local at = sys.wall()
    assert(pj:dispatch("work", {}, { delay = 0.3 }))
    assert.is_true(testing.run_until(function() return ran_at ~= nil end, 5))
    assert.is_true(ran_at >= at + 0.3)
    stop(w)
  end)
end)
