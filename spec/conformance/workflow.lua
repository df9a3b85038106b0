-- The workflow battery's conformance suite: every store (adapters.workflow.*) runs it.
--
--   require("spec.conformance.workflow")("memory", function(jobs, opts) return wf, cleanup end)
--
-- new(jobs, opts) returns a fresh zever.workflow (front-end) over the store, its job registered
-- on jobs (the jobs battery of a zever.testing app: t:perform_jobs() is what zever worker does),
-- made with opts (workflow.wrap's: the suite's clock), and optionally a cleanup function called
-- after wf:close(). Rows: steps recorded once and replayed, signals, durable timers, queries,
-- retries with compensations, a step that fails the run at once, a pivot (committed: stuck, then
-- wf:retry), a failing compensation resumed, cancellation, the Go framework's contract
-- (duplicate ids, unknown runs, ended runs), and retention on a fake clock: ended runs expire
-- (the battery's 7 days, a workflow's, a run's own), the bounded sweep and the worker's
-- sweeper, purge --before.

local zever = require "zever"
local testing = require "zever.testing"
local workflow = require "zever.workflow"
local sched = require "zever.sched"
local sys = require "zever.sys"

return function(name, new)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert
  local before_each, after_each = env.before_each, env.after_each

  describe("workflow conformance: " .. name, function()
    local t, wf, cleanup, effects
    -- The suite's clock: the wall clock until a row sets fake (seconds) and moves it.
    local fake

    before_each(function()
      fake = nil
      t = testing.app(zever.app())
      wf, cleanup = new(t.app.jobs, { clock = function() return fake or sys.wall() end })
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

    -- Completes runs of workflow wname with the given ids (jobs performed) at the fake time.
    local function complete(wname, ids, opts)
      for _, id in ipairs(ids) do assert(wf:start(wname, {}, id, opts)) end
      t:perform_jobs()
      for _, id in ipairs(ids) do assert.equals("completed", wf:query(id, "status"), id) end
    end

    it("keeps an ended run for its retention (the battery's, its workflow's, its own), then the sweep deletes it", function()
      fake = 1e6
      wf:define("plain", function(ctx)
        ctx:step("s", function() return 1 end)
        return "ok"
      end)
      wf:define("short", function() return "ok" end, { retention = 3600 })
      wf:define("waits", function(ctx) return ctx:wait("never") end)
      complete("plain", { "p1" })
      complete("short", { "s1" })
      complete("plain", { "own" }, { retention = 60 })
      complete("plain", { "kept" }, { retention = 0 })
      assert(wf:start("waits", {}, "w1"))
      t:perform_jobs()
      assert.equals("waiting", wf:query("w1", "status"))
      assert(wf:signal("w1", "other", 1))
      local st = wf:status("p1")
      assert.equals(1e6, st.ended_at)
      assert.equals(1e6 + 7 * 86400, st.expire_at)
      assert.equals(1e6 + 3600, wf:status("s1").expire_at)
      assert.equals(1e6 + 60, wf:status("own").expire_at)
      assert.is_nil(wf:status("kept").expire_at)
      assert.is_nil(wf:status("w1").ended_at)
      -- Nothing is due before its time.
      assert.same({ 0, 0 }, { wf:sweep() })
      fake = 1e6 + 60
      assert.same({ 1, 0 }, { wf:sweep() })
      assert.equals("not_found", select(2, wf:status("own")).code)
      fake = 1e6 + 8 * 86400
      assert.same({ 2, 0 }, { wf:sweep() })
      for _, id in ipairs({ "p1", "s1" }) do
        assert.equals("not_found", select(2, wf:query(id, "status")).code, id)
      end
      -- A run not ended (waiting, with a signal) and one kept until purged stay.
      fake = 1e6 + 1e9
      assert.same({ 0, 0 }, { wf:sweep() })
      assert.equals("waiting", wf:query("w1", "status"))
      assert.equals("ok", wf:query("kept", "output"))
      local ids = {}
      for _, r in ipairs(wf:list()) do ids[#ids + 1] = r.id end
      table.sort(ids)
      assert.same({ "kept", "w1" }, ids)
      -- An id swept is free again; a duplicate job of a swept run finds nothing to do.
      assert.equals("ended", workflow.execute(wf, "p1"))
      complete("plain", { "p1" })
      assert.same({ "s" }, wf:status("p1").steps)
    end)

    it("sweeps in bounded batches and says how many remain; failed and cancelled runs expire too", function()
      fake = 2e6
      wf:define("ok", function() return 1 end, { retention = 10 })
      wf:define("bad", function(ctx) ctx:step("x", function() error("no") end, { retry = false }) end,
        { retention = 10 })
      wf:define("hold", function(ctx) ctx:wait("go") end, { retention = 10 })
      complete("ok", { "a", "b", "c" })
      assert(wf:start("bad", {}, "f"))
      assert(wf:start("hold", {}, "h"))
      t:perform_jobs()
      assert(wf:cancel("h"))
      t:perform_jobs()
      assert.equals("failed", wf:query("f", "status"))
      assert.equals("cancelled", wf:query("h", "status"))
      fake = 2e6 + 10
      assert.same({ 2, 3 }, { wf:sweep(2) })
      assert.same({ 2, 1 }, { wf:sweep(2) })
      assert.same({ 1, 0 }, { wf:sweep(2) })
      assert.same({}, wf:list())
      assert.equals(5, wf:stats().swept)
      assert.has_error(function() wf:sweep(0) end, "workflow:sweep: limit must be an integer >= 1")
    end)

    it("purges runs that ended before a time, whatever their retention; a dry run counts them", function()
      fake = 3e6
      wf:define("w", function() return 1 end)
      complete("w", { "old1", "old2" }, { retention = 0 })
      fake = 3e6 + 100
      complete("w", { "new" })
      assert(wf:start("w", {}, "pending"))   -- its job not performed: not ended
      fake = 3e6 + 200
      assert.same({ 2, 2 }, { wf:purge(150, { dry_run = true }) })
      assert.equals("completed", wf:query("old1", "status"))
      assert.same({ 1, 1 }, { wf:purge(150, { limit = 1 }) })
      assert.same({ 1, 0 }, { wf:purge(150) })
      assert.equals("not_found", select(2, wf:query("old2", "status")).code)
      assert.equals("completed", wf:query("new", "status"))
      assert.same({ 1, 0 }, { wf:purge(0) })
      assert.equals("pending", wf:query("pending", "status"))
      assert.has_error(function() wf:purge(-1) end,
        "workflow:purge: before must be a number of seconds >= 0")
      assert.has_error(function() wf:purge() end,
        "workflow:purge: before must be a number of seconds >= 0")
    end)

    it("sweeps on the worker's timer: at once, again after one loop turn while a batch is full, then every interval", function()
      fake = 4e6
      wf:define("w", function() return 1 end, { retention = 5 })
      complete("w", { "r1", "r2", "r3" })
      fake = 4e6 + 5
      local armed, fire = {}, nil
      local function timer(fn)
        fire = fn
        return { start = function(_, s) armed[#armed + 1] = s end, stop = function() end,
          close = function() end }
      end
      local r = workflow.sweeper(wf, { interval = 30, batch = 2, timer = timer })
      r:start()
      assert.same({ 0 }, armed)
      -- Fires the timer the sweeper armed and waits for its batch (a coroutine of the pool).
      local function tick(n)
        fire()
        assert(sched.wait_until(function() return r.stats.sweeps == n end, 10))
      end
      tick(1)
      assert.same({ 0, sched.NEXT_TURN }, armed)   -- a full batch with more due: one loop turn
      tick(2)
      assert.same({ 0, sched.NEXT_TURN, 30 }, armed)   -- the last one: then every interval
      assert.equals(3, r.stats.deleted)
      assert.same({}, wf:list())
      r:stop()
      tick(3)
      assert.same({ 0, sched.NEXT_TURN, 30 }, armed)   -- stopped: the batch in flight ends alone
      r:close()
      assert.has_error(function() workflow.sweeper({}) end,
        "workflow.sweeper: want the workflows (app.workflow)")
    end)
  end)
end
