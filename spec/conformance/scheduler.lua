-- The scheduler battery's conformance suite: every lock adapter (the one-run-per-slot lock)
-- runs it, so a new store (PostgreSQL) drops in by adding one call.
--
--   require("spec.conformance.scheduler")("memory", function() return lock_a, lock_b end)
--
-- new() returns two fresh locks over one fresh, empty store, as two processes would see it
-- (two connections, two clients, two handles of one name). A lock has
-- acquire(key, slot, horizon) -> true (won) | false (taken) | nil, err, and close(). Slots are
-- whole seconds of the wall clock, near now (a lock may sweep slots older than its horizon);
-- the suite gives every scheduler an injected clock starting now, and jobs go to a real memory
-- queue through the real jobs battery.

local scheduler = require "zever.scheduler"
local jobs_front = require "zever.jobs"
local jq = require "adapters.jobs.queue"
local queue = require "zever.queue"
local errors = require "zever.errors"
local sys = require "zever.sys"

local serial = 0

return function(name, new)
  -- The runner gives each spec file its own busted environment: use the caller's.
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  -- A scheduler over lock with a clock this suite moves, dispatching into a fresh memory queue.
  local function scheduler_over(lock, clock, q)
    local j = jobs_front.wrap(jq.new(q))
    return scheduler.new(lock, { jobs = function() return j end, clock = clock })
  end

  local function fresh_queue()
    serial = serial + 1
    return queue.new{ name = ("conformance:scheduler:%s:%d:%d"):format(name, serial, os.time()) }
  end

  describe("scheduler conformance: " .. name, function()
    local NOW = math.floor(sys.wall())

    it("gives a slot to the first acquire and false to every later one", function()
      local a, b = new()
      local key = "job|every|1s@" .. NOW
      assert.is_true(a:acquire(key, NOW, 60))
      assert.is_false(a:acquire(key, NOW, 60))
      assert.is_false(b:acquire(key, NOW, 60))
      a:close()
      b:close()
    end)

    it("keeps slots and entries apart: each key is won once", function()
      local a, b = new()
      local rows = { { "x@1", NOW + 1 }, { "x@2", NOW + 2 }, { "y@1", NOW + 1 } }
      for _, r in ipairs(rows) do
        assert.is_true(b:acquire(r[1], r[2], 60), r[1])
        assert.is_false(a:acquire(r[1], r[2], 60), r[1])
      end
      a:close()
      b:close()
    end)

    it("returns a zever error with code closed after close, and closes twice", function()
      local a, b = new()
      a:close()
      local ok, err = a:acquire("k@1", NOW, 60)
      assert.is_nil(ok)
      assert.is_true(errors.is(err, "closed"), tostring(err))
      assert.are.equal("scheduler", err.battery)
      a:close()
      assert.is_true(b:acquire("k@1", NOW, 60))
      b:close()
    end)

    it("fires each due slot once when two schedulers tick over the two locks", function()
      local a, b = new()
      local t = NOW - NOW % 10
      local function clock() return t end
      local q = fresh_queue()
      local s1, s2 = scheduler_over(a, clock, q), scheduler_over(b, clock, q)
      for _, s in ipairs({ s1, s2 }) do
        s:every(10, "tick", { n = 1 })
        s:tick(t)
      end
      for _ = 1, 3 do
        t = t + 10
        s1:tick(t)
        s2:tick(t)
      end
      assert.are.equal(3, q:len("jobs:default"))
      assert.are.equal(3, s1:stats().fired + s2:stats().fired)
      assert.are.equal(3, s1:stats().lost + s2:stats().lost)
      s1:close()
      s2:close()
      q:close()
    end)
  end)
end
