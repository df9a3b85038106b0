-- The jobs battery's conformance suite: the jobs adapter interface (what zever.worker calls)
-- under the zever.jobs front-end, run over every queue adapter and database the jobs adapter
-- can sit on, so a new one (PostgreSQL) drops in by adding one call.
--
--   require("spec.conformance.jobs")("memory queue", function() return jobs end)
--
-- new() returns a fresh zever.jobs (front-end) over its adapter, with an empty queue and an
-- empty failed_jobs table; jobs.impl is the adapter (claim, complete, again, release, bury are
-- the worker's side). No row waits on a clock: every delay is 0.

local errors = require "zever.errors"
local sys = require "zever.sys"

return function(name, new)
  -- The runner gives each spec file its own busted environment: use the caller's.
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  local DEFAULT = "jobs:default"

  local function claim(j, topic)
    local msg, err = j.impl:claim(topic or DEFAULT)
    assert.is_nil(err)
    return msg
  end

  local function bury(j, msg, why)
    local job = require("zever.json").decode(msg.payload)
    return j.impl:bury(msg, { queue = "default", name = job.name, args = job.args,
      args_json = require("zever.json").encode(job.args), error = why, attempts = msg.attempt,
      failed_at = sys.wall() })
  end

  describe("jobs conformance: " .. name, function()
    it("dispatches a job that the worker side claims once and completes", function()
      local j = new()
      assert.is_truthy(j:dispatch("mail", { to = "a@b.c" }))
      local msg = claim(j)
      assert.is_table(msg)
      assert.are.equal(1, msg.attempt)
      local job = require("zever.json").decode(msg.payload)
      assert.are.same({ name = "mail", args = { to = "a@b.c" } }, job)
      assert.is_true(j.impl:complete(msg))
      assert.is_nil(claim(j))
      j:close()
    end)

    it("gives a job back with attempt + 1 on again and on release", function()
      local j = new()
      assert.is_truthy(j:dispatch("retry-me"))
      local msg = claim(j)
      assert.is_true(j.impl:again(msg, 0))
      local second = claim(j)
      assert.are.equal(2, second.attempt)
      assert.is_true(j.impl:release(second))
      local third = claim(j)
      assert.are.equal(3, third.attempt)
      j.impl:complete(third)
      j:close()
    end)

    it("routes a dispatch with opts.queue to that queue's topic only", function()
      local j = new()
      assert.is_truthy(j:dispatch("report", nil, { queue = "low" }))
      assert.is_nil(claim(j))
      local msg = claim(j, "jobs:low")
      assert.is_table(msg)
      j.impl:complete(msg)
      j:close()
    end)

    it("buries a dead job into failed, retries it by id and forgets the rest", function()
      local j = new()
      assert.is_truthy(j:dispatch("a", { n = 1 }))
      assert.is_truthy(j:dispatch("b", { n = 2 }))
      local first, second = claim(j), claim(j)
      local id1 = assert(bury(j, first, "boom 1"))
      assert(bury(j, second, "boom 2"))
      assert.is_nil(claim(j))   -- buried messages are settled
      local rows = assert(j:failed())
      assert.are.equal(2, #rows)
      assert.are.same({ "a", { n = 1 }, "boom 1", 1 },
        { rows[1].name, rows[1].args, rows[1].error, rows[1].attempts })
      assert.are.equal(1, j:retry(id1))
      local again = claim(j)
      assert.are.same({ name = "a", args = { n = 1 } },
        require("zever.json").decode(again.payload))
      j.impl:complete(again)
      assert.are.equal(1, #assert(j:failed()))
      assert.are.equal(1, j:forget("all"))
      assert.are.same({}, assert(j:failed()))
      j:close()
    end)

    it("returns zever errors with code closed after close, and closes twice", function()
      local j = new()
      assert.is_true(j:close())
      for _, call in ipairs({
        function() return j:dispatch("x") end,
        function() return j:failed() end,
        function() return j:retry("all") end,
        function() return j:forget("all") end,
      }) do
        local v, err = call()
        assert.is_nil(v)
        assert.is_true(errors.is(err, "closed"), tostring(err))
        assert.are.equal("jobs", err.battery)
      end
      assert.is_true(j:close())
    end)
  end)
end
