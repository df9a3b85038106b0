-- The breaker battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.breaker")("memory", function(opts) return breakers end)
--
-- new(opts) returns a fresh zever.breaker (front-end) over the adapter, on the fake clock
-- opts.clock (seconds), with opts' defaults.

return function(name, new)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  describe("breaker conformance: " .. name, function()
    local t
    local function make(opts)
      t = 100
      opts = opts or {}
      opts.clock = function() return t end
      return new(opts)
    end
    local function ok_call() return "fine" end
    local function failing() return nil, "upstream down" end
    local function raising() error("boom (expected by the spec)") end

    it("stays closed below min_calls and trips at the failure rate", function()
      local cb = make():get("up", { window = 10, min_calls = 4, failure_rate = 0.5 })
      assert.are.equal("closed", cb:state())
      for _ = 1, 3 do assert.are.same({ nil, "upstream down" }, { cb:call(failing) }) end
      assert.are.equal("closed", cb:state())   -- 3 calls < min_calls
      assert.are.equal("fine", cb:call(ok_call))
      assert.are.equal("open", cb:state())     -- 3 of 4 failed
      local r, err = cb:call(ok_call)
      assert.is_nil(r)
      assert.are.equal("open", err.code)
      assert.are.equal("breaker", err.battery)
      assert.is_true(err.retry_after > 0)
      assert.are.equal(1, cb:stats().rejected)
    end)

    it("counts over a sliding window of the last calls", function()
      local cb = make():get("win", { window = 4, min_calls = 4, failure_rate = 0.75 })
      cb:call(failing)
      cb:call(failing)
      for _ = 1, 10 do cb:call(ok_call) end   -- the two failures slide out
      cb:call(failing)
      cb:call(failing)
      assert.are.equal("closed", cb:state())  -- 2 of the last 4
      cb:call(failing)
      assert.are.equal("open", cb:state())    -- 3 of the last 4
    end)

    it("counts a raised error as a failure and raises it again", function()
      local cb = make():get("raise", { window = 2, min_calls = 2, failure_rate = 1 })
      assert.has_error(function() cb:call(raising) end)
      assert.has_error(function() cb:call(raising) end)
      assert.are.equal("open", cb:state())
    end)

    it("trips on slow calls at the slow rate", function()
      local cb = make():get("slow", { window = 4, min_calls = 2, slow_call = 1, slow_rate = 0.5 })
      cb:call(function() t = t + 2; return true end)
      assert.are.equal("closed", cb:state())
      cb:call(function() t = t + 2; return true end)
      assert.are.equal("open", cb:state())
    end)

    it("half-opens after open_for, closes after enough good trials", function()
      local cb = make():get("heal", { window = 2, min_calls = 2, failure_rate = 1, open_for = 30,
        half_open_calls = 2 })
      cb:call(failing)
      cb:call(failing)
      assert.are.equal("open", cb:state())
      t = t + 29
      assert.are.equal("open", select(2, cb:call(ok_call)).code)
      t = t + 1
      assert.are.equal("half_open", cb:state())
      assert.are.equal("fine", cb:call(ok_call))
      assert.are.equal("half_open", cb:state())
      assert.are.equal("fine", cb:call(ok_call))
      assert.are.equal("closed", cb:state())
      assert.are.equal(0, cb:stats().failures)  -- a fresh window
    end)

    it("sends a failing trial back to open and limits concurrent trials", function()
      local cb = make():get("relapse", { window = 2, min_calls = 2, failure_rate = 1,
        open_for = 10, half_open_calls = 1 })
      cb:call(failing)
      cb:call(failing)
      t = t + 10
      assert.is_true(cb:allow())                    -- the one trial is out
      assert.are.equal("open", select(2, cb:allow()).code)
      cb:record(false)
      assert.are.equal("open", cb:state())
      assert.are.equal(2, cb:stats().opened)
      t = t + 10
      assert.are.equal("fine", cb:call(ok_call))
      assert.are.equal("closed", cb:state())
    end)

    it("returns one breaker per name and resets it", function()
      local breakers = make()
      local a = breakers:get("same", { window = 1, min_calls = 1 })
      assert.are.equal(a, breakers:get("same"))
      a:call(failing)
      assert.are.equal("open", a:state())
      a:reset()
      assert.are.equal("closed", a:state())
    end)

    it("raises on misuse and returns closed after close", function()
      local breakers = make()
      assert.has_error(function() breakers:get(1) end, "breakers:get: name must be a string")
      assert.has_error(function() breakers:get("x", { failure_rate = 2 }) end,
        "breakers:get: failure_rate must be a number in (0, 1]")
      local cb = breakers:get("x")
      assert.has_error(function() cb:call(1) end, "breaker:call: fn must be a function")
      assert.is_true(breakers:close())
      assert.are.equal("closed", select(2, breakers:get("y")).code)
      assert.are.equal("closed", select(2, cb:call(ok_call)).code)
    end)
  end)
end
