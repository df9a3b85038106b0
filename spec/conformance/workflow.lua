-- The workflow battery's conformance suite: every store (adapters.workflow.*) runs it.
--
--   require("spec.conformance.workflow")("memory", function(jobs) return wf, cleanup end)
--
-- new(jobs) returns a fresh zever.workflow (front-end) over the store, its job registered on
-- jobs (the jobs battery of a zever.testing app: t:perform_jobs() is what zever worker does),
-- and optionally a cleanup function called after wf:close(). Rows: steps recorded once and
-- replayed, signals, durable timers, queries, retries with compensations, a step that fails the
-- run at once, a pivot (committed: stuck, then wf:retry), a failing compensation resumed,
-- cancellation, and the Go framework's contract (duplicate ids, unknown runs, ended runs).

local zever = require "zever"
local testing = require "zever.testing"
local workflow = require "zever.workflow"
local sched = require "zever.sched"

return function(name, new)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert
  local before_each, after_each = env.before_each, env.after_each

  describe("workflow conformance: " .. name, function()
    local t, wf, cleanup, effects

    before_each(function()
      t = testing.app(zever.app())
      wf, cleanup = new(t.app.jobs)
      effects = {}
    end)

    after_each(function()
      wf:close()
      if cleanup then cleanup() end
      t:close()
    end)

    local function effect(what) effects[what] = (effects[what] or 0) + 1 end

    -- Performs jobs until the run's status is one of the given ones (10 s at most).
    local function until_status(id, ...)
      local want = { ... }
      local ok = sched.wait_until(function()
        t:perform_jobs()
        local s = wf:query(id, "status")
        for _, w in ipairs(want) do if s == w then return true end end
        return false
      end, 10)
      assert(ok, "run " .. id .. " is " .. tostring(wf:query(id, "status")))
    end

    it("runs steps in order, records each once and returns the output", function()
      wf:define("order", function(ctx, input)
        local a = ctx:step("reserve", function(key) effect("reserve"); return { key = key, n = input.n } end)
        ctx:set_state({ stage = "reserved" })
        local b = ctx:step("charge", function() effect("charge"); return a.n * 10 end)
        return { charged = b }
      end)
      local id = assert(wf:start("order", { n = 4 }, "order-1"))
      assert.equals("order-1", id)
      t:perform_jobs()
      assert.equals("completed", wf:query(id, "status"))
      assert.same({ charged = 40 }, wf:query(id, "output"))
      assert.same({ stage = "reserved" }, wf:query(id, "state"))
      assert.same({ reserve = 1, charge = 1 }, effects)
      local st = wf:status(id)
      assert.same({ "reserve", "charge" }, st.steps)
      -- a replay (a duplicate job) does not run a step again
      assert.equals("ended", workflow.execute(wf, id))
    end)

    it("waits for a signal without holding a worker, then goes on", function()
      wf:define("approve", function(ctx)
        ctx:step("ask", function() effect("ask") return true end)
        local v = ctx:wait("approved")
        ctx:step("after", function() effect("after") return v end)
        return v
      end)
      local id = assert(wf:start("approve", {}))
      t:perform_jobs()
      assert.equals("waiting", wf:query(id, "status"))
      assert.same({ ask = 1 }, effects)
      assert(wf:signal(id, "approved", { by = "ann" }))
      t:perform_jobs()
      assert.equals("completed", wf:query(id, "status"))
      assert.same({ by = "ann" }, wf:query(id, "output"))
      assert.same({ ask = 1, after = 1 }, effects)
      local ok, err = wf:signal(id, "approved", true)
      assert.is_nil(ok)
      assert.equals("completed", err.code)
    end)

    it("times a wait out and sleeps durably (a delayed job)", function()
      wf:define("timer", function(ctx)
        local v = ctx:wait("never", 0)
        ctx:sleep(0.05)
        return v == nil and "timed out" or "signalled"
      end)
      local id = assert(wf:start("timer", {}))
      t:perform_jobs()
      assert(sched.wait_until(function()
        t:perform_jobs()
        return wf:query(id, "status") == "completed"
      end, 10))
      assert.equals("timed out", wf:query(id, "output"))
    end)

    it("retries a failing step from the last record, then fails and compensates in reverse", function()
      local tries = 0
      wf:define("saga", function(ctx)
        ctx:step("a", function() effect("a") return "A" end)
        ctx:step("b", function() effect("b") return "B" end)
        ctx:step("c", function() tries = tries + 1; error("c is down") end)
      end, { attempts = 2, base = 0, compensate = {
        a = function(r) effects.undo = (effects.undo or "") .. "a" .. r end,
        b = function(r) effects.undo = (effects.undo or "") .. "b" .. r end } })
      local id = assert(wf:start("saga", {}))
      assert(sched.wait_until(function()
        t:perform_jobs()
        return wf:query(id, "status") == "failed"
      end, 10))
      assert.equals(2, tries)
      assert.same({ a = 1, b = 1, undo = "bBaA" }, effects)
      local st = wf:status(id)
      assert.matches("c is down", st.error)
    end)

    it("cancels a waiting run and compensates what it did", function()
      wf:define("cancel_me", function(ctx)
        ctx:step("hold", function() effect("hold") return 1 end)
        ctx:wait("go")
      end, { compensate = { hold = function() effect("release") end } })
      local id = assert(wf:start("cancel_me", {}))
      t:perform_jobs()
      assert(wf:cancel(id))
      t:perform_jobs()
      assert.equals("cancelled", wf:query(id, "status"))
      assert.same({ hold = 1, release = 1 }, effects)
      local ok, err = wf:cancel(id)
      assert.is_nil(ok)
      assert.equals("completed", err.code)
    end)

    it("refuses a duplicate id, an unknown workflow, run or query", function()
      wf:define("w", function() return 1 end)
      assert(wf:start("w", {}, "same"))
      local ok, err = wf:start("w", {}, "same")
      assert.is_nil(ok)
      assert.equals("conflict", err.code)
      assert.equals("not_found", select(2, wf:start("nope", {})).code)
      assert.equals("not_found", select(2, wf:signal("missing", "x", 1)).code)
      assert.equals("invalid", select(2, wf:query("same", "weird")).code)
      assert.has_error(function() wf:start(42) end)
      wf:close()
      assert.equals("closed", select(2, wf:start("w", {})).code)
    end)

    it("fails the run at once on a step that must not be retried, and compensates", function()
      local tries = 0
      wf:define("fatal", function(ctx)
        ctx:step("hold", function() effect("hold") return "H" end)
        ctx:step("check", function() tries = tries + 1; error("refused") end, { retry = false })
      end, { attempts = 5, base = 0, compensate = {
        hold = function(r, _, key) effects.undo = r .. " " .. key end } })
      local id = assert(wf:start("fatal", {}, "f1"))
      until_status(id, "failed")
      assert.equals(1, tries)
      assert.equals("H f1/compensate:hold", effects.undo)
      local st = wf:status(id)
      assert.matches("refused", st.error)
      assert.same({ "hold" }, st.compensated)
      assert.equals(1, st.attempts)
    end)

    it("retries forward after a pivot, ends stuck without compensating, and resumes on retry", function()
      local down = true
      wf:define("pivot", function(ctx)
        ctx:step("reserve", function() effect("reserve") return 1 end, { retry = false })
        ctx:step("charge", function() effect("charge") return 2 end, { retry = false, pivot = true })
        ctx:step("ship", function() effect("ship"); if down then error("no truck") end return 3 end)
        return "shipped"
      end, { attempts = 2, base = 0, compensate = { reserve = function() effect("release") end } })
      local id = assert(wf:start("pivot", {}))
      until_status(id, "stuck")
      assert.same({ reserve = 1, charge = 1, ship = 2 }, effects)
      local st = wf:status(id)
      assert.is_true(st.committed)
      assert.matches("no truck", st.error)
      assert.equals("ended", workflow.execute(wf, id)) -- stuck stays stuck
      wf:define("plain", function() return 1 end)
      local ok, err = wf:retry(assert(wf:start("plain", {}, "other")))
      assert.is_nil(ok)
      assert.equals("invalid", err.code)
      assert.equals("not_found", select(2, wf:retry("missing")).code)
      down = false
      assert(wf:retry(id))
      until_status(id, "completed")
      assert.equals("shipped", wf:query(id, "output"))
      assert.equals(3, effects.ship)
      assert.is_nil(effects.release)
    end)

    it("finishes the compensations of a failed run when one of them raised", function()
      local flaky = 1
      wf:define("undo", function(ctx)
        ctx:step("a", function() return "A" end)
        ctx:step("b", function() return "B" end)
        ctx:step("c", function() error("c fails") end, { retry = false })
      end, { compensate = {
        a = function() effect("undo a") end,
        b = function()
          if flaky > 0 then flaky = flaky - 1; error("b's undo is down") end
          effect("undo b")
        end } })
      local id = assert(wf:start("undo", {}))
      -- The job raises inside b's compensation: the run stays compensating for the job's retry.
      t:perform_jobs()
      assert.equals("compensating", wf:query(id, "status"))
      assert.same({}, wf:status(id).compensated)
      assert.equals("failed", workflow.execute(wf, id))
      assert.same({ ["undo a"] = 1, ["undo b"] = 1 }, effects)
      assert.same({ "a", "b" }, wf:status(id).compensated)
    end)

    it("keeps the first record of a step two workers ran", function()
      local gate = true
      wf:define("race", function(ctx)
        return ctx:step("once", function(key)
          if gate then
            gate = false
            -- Another attempt of the same run records the step meanwhile.
            assert.equals("completed", workflow.execute(wf, key:match("^(.-)/")))
            return "second"
          end
          return "first"
        end)
      end)
      local id = assert(wf:start("race", {}))
      t:perform_jobs()
      assert.equals("completed", wf:query(id, "status"))
      assert.equals("first", wf:query(id, "output"))
      assert.same({ "once" }, wf:status(id).steps)
    end)
  end)
end
