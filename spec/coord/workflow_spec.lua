-- zever.workflow on the jobs battery, with each store (memory, and db on a SQLite file): steps
-- recorded once and replayed, signals, durable timers, queries, retries with compensations,
-- cancellation, and the Go framework's contract (duplicate ids, unknown runs, ended runs).
local zever = require "zever"
local testing = require "zever.testing"
local workflow = require "zever.workflow"
local zdb = require "zever.db"

for _, store in ipairs{ "memory", "db" } do
  describe("zever.workflow (" .. store .. ")", function()
    local t, wf, db, path, effects

    before_each(function()
      t = testing.app(zever.app())
      if store == "db" then
        path = os.tmpname()
        db = assert(zdb.open("sqlite:" .. path))
        wf = workflow.new{ jobs = t.app.jobs, db = db }
      else
        wf = workflow.new{ jobs = t.app.jobs }
      end
      effects = {}
    end)

    after_each(function()
      wf:close()
      t:close()
      if db then
        db:close()
        for _, s in ipairs{ "", "-wal", "-shm" } do os.remove(path .. s) end
        db = nil
      end
    end)

    local function effect(name) effects[name] = (effects[name] or 0) + 1 end

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
      assert(require("zever.sched").wait_until(function()
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
      assert(require("zever.sched").wait_until(function()
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
  end)
end

describe("app.workflow", function()
  it("is resolved with the app's jobs battery", function()
    local app = zever.app()
    local wf = assert(app.workflow)
    assert.equals("workflow", wf.battery)
    assert.is_not_nil(app.jobs:handler(workflow.JOB))
  end)
end)
