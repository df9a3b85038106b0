-- zever.sched.periodic: the runner behind zever worker's outbox relay and workflow sweep. A fake
-- timer records how the runner re-arms it, and the spec fires it by hand; one row uses the
-- loop's real timer (1 ms) to see the runner run on its own.

local sched = require "zever.sched"

describe("zever.sched.periodic", function()
  -- A timer the spec fires: armed lists every start(seconds); fire() runs the callback.
  local function fake_timer()
    local t = { armed = {}, stops = 0, closed = false }
    function t.make(fn)
      t.fire = fn
      return {
        start = function(_, s) t.armed[#t.armed + 1] = s end,
        stop = function() t.stops = t.stops + 1 end,
        close = function() t.closed = true end,
      }
    end
    return t
  end

  it("runs at once on start, then every interval, and at once again while step says more",
    function()
      local t = fake_timer()
      local answers, runs = { true, true, false, false }, 0
      local r = sched.periodic(function()
        runs = runs + 1
        return answers[runs]
      end, 30, { timer = t.make })
      assert.are.equal(r, r:start())
      assert.same({ 0 }, t.armed)
      for n = 1, 4 do
        t.fire()
        assert.is_true(sched.wait_until(function() return runs == n and not r.running end, 10))
      end
      assert.same({ 0, sched.NEXT_TURN, sched.NEXT_TURN, 30, 30 }, t.armed)
      r:close()
      assert.is_true(t.closed)
    end)

  it("lets a step wait, and calls on_done of stop only once the run in flight returned",
    function()
      local t = fake_timer()
      local release, finished = false, 0
      local r = sched.periodic(function()
        sched.wait_until(function() return release end)
        finished = finished + 1
        return true
      end, 5, { timer = t.make })
      r:start()
      t.fire()
      assert.is_true(r.running)
      local done = 0
      r:stop(function() done = done + 1 end)
      assert.are.equal(0, done)
      release = true
      assert.is_true(sched.wait_until(function() return done == 1 end, 10))
      assert.are.equal(1, finished)
      assert.same({ 0 }, t.armed)   -- stopped: the run in flight does not re-arm
      r:stop(function() done = done + 1 end)   -- nothing in flight: on_done at once
      assert.are.equal(2, done)
      r:close()
    end)

  it("hands a raising step to on_error and keeps going", function()
    local t = fake_timer()
    local errs, runs = {}, 0
    local r = sched.periodic(function()
      runs = runs + 1
      if runs == 1 then error("boom", 0) end
      return false
    end, 7, { timer = t.make, on_error = function(e) errs[#errs + 1] = e end })
    r:start()
    t.fire()
    assert.is_true(sched.wait_until(function() return runs == 1 and not r.running end, 10))
    assert.same({ "boom" }, errs)
    assert.same({ 0, 7 }, t.armed)
    t.fire()
    assert.is_true(sched.wait_until(function() return runs == 2 and not r.running end, 10))
    assert.same({ 0, 7, 7 }, t.armed)
    r:close()
  end)

  it("runs on the loop's own timer", function()
    local runs = 0
    local r = sched.periodic(function()
      runs = runs + 1
      return runs < 3
    end, 0.001):start()
    assert.is_true(sched.wait_until(function() return runs >= 5 end, 10))
    r:close()
  end)

  it("lets other timers fire between full batches of a step that never waits", function()
    -- libuv 1.44 runs a timer re-armed with 0 inside its own callback again in the same pass:
    -- with that, this step would run all 2,000 times before the 1 ms timer got its turn.
    local loop = require "zever.loop"
    local runs, seen_at = 0, nil
    local r = sched.periodic(function()
      runs = runs + 1
      return runs < 2000
    end, 60):start()
    local other = loop.timer(function() seen_at = runs end)
    other:start(0.001)
    assert.is_true(sched.wait_until(function() return seen_at ~= nil end, 10))
    assert.is_true(seen_at < 2000, "the other timer waited for the whole backlog")
    r:close()
    other:close()
  end)

  it("raises on misuse", function()
    assert.has_error(function() sched.periodic(nil, 1) end,
      "sched.periodic: step must be a function")
    assert.has_error(function() sched.periodic(function() end, -1) end,
      "sched.periodic: interval must be a number of seconds >= 0")
    assert.has_error(function() sched.periodic(function() end, "1s") end,
      "sched.periodic: interval must be a number of seconds >= 0")
  end)
end)
