-- The limiter battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.limiter")("memory", function(opts) return limiter end)
--
-- new(opts) returns a fresh zever.limiter (front-end) over the adapter, with an empty table,
-- opts.rate and opts.burst, and the fake clock opts.clock (a function returning seconds) when
-- the adapter can take one. An adapter that cannot (a remote store's clock) passes
-- { real_clock = true } as the third argument: time-based rows then poll against a deadline.

return function(name, new, caps)
  caps = caps or {}
  -- The runner gives each spec file its own busted environment: use the caller's.
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  describe("limiter conformance: " .. name, function()
    local t
    local function clock() return t end
    local function make(rate, burst)
      t = 1000
      return new{ rate = rate, burst = burst, clock = not caps.real_clock and clock or nil }
    end
    local function advance(lim, seconds, key)
      if not caps.real_clock then
        t = t + seconds
        return
      end
      -- Real clock: poll until the bucket has refilled, with a generous deadline.
      local sys = require "zever.sys"
      local deadline = sys.now() + seconds * 20 + 2
      while sys.now() < deadline do
        local _, remaining = lim:allow(key, 0)
        if remaining and remaining >= 1 then return end
      end
    end

    -- { name, rate, burst, costs, expected allowed list, expected remaining list }
    local rows = {
      { "allows up to the burst and then denies", 1, 3, { 1, 1, 1, 1 },
        { true, true, true, false }, { 2, 1, 0, 0 } },
      { "charges a cost above burst as burst", 1, 5, { 9, 1 }, { true, false }, { 0, 0 } },
      { "charges costs larger than one", 1, 5, { 2, 2, 2 }, { true, true, false }, { 3, 1, 1 } },
      { "does not charge a zero cost", 1, 2, { 0, 0, 2, 0 }, { true, true, true, true },
        { 2, 2, 0, 0 } },
    }
    for _, row in ipairs(rows) do
      it(row[1], function()
        local lim = make(row[2], row[3])
        for i, cost in ipairs(row[4]) do
          local allowed, remaining = lim:allow("k:" .. row[1], cost)
          assert.are.equal(row[5][i], allowed, "call " .. i)
          assert.are.equal(row[6][i], remaining, "call " .. i)
        end
        lim:close()
      end)
    end

    it("returns a denial as a result with retry_after, not an error", function()
      local lim = make(2, 1)
      assert.is_true((lim:allow("d")))
      local allowed, remaining, retry_after = lim:allow("d")
      assert.is_false(allowed)
      assert.are.equal(0, remaining)
      assert.is_true(retry_after > 0 and retry_after <= 0.5 + 1e-6)
      lim:close()
    end)

    it("answers retry_after 0 when allowed", function()
      local lim = make(1, 2)
      local _, _, retry_after = lim:allow("z")
      assert.are.equal(0, retry_after)
      lim:close()
    end)

    it("refills at rate tokens per second up to the burst", function()
      local lim = make(10, 2)
      assert.is_true((lim:allow("r", 2)))
      assert.is_false((lim:allow("r", 1)))
      advance(lim, 0.1, "r")
      assert.is_true((lim:allow("r", 1)))
      if not caps.real_clock then
        advance(lim, 100)
        local _, remaining = lim:allow("r", 0)
        assert.are.equal(2, remaining)
      end
      lim:close()
    end)

    it("keeps keys independent", function()
      local lim = make(1, 1)
      assert.is_true((lim:allow("a")))
      assert.is_false((lim:allow("a")))
      assert.is_true((lim:allow("b")))
      lim:close()
    end)

    it("gives a reset key a full bucket", function()
      local lim = make(1, 2)
      lim:allow("x", 2)
      assert.is_false((lim:allow("x")))
      assert.is_true((lim:reset("x")))
      local allowed, remaining = lim:allow("x")
      assert.is_true(allowed)
      assert.are.equal(1, remaining)
      lim:close()
    end)

    it("takes keys of 256 bytes and refuses longer ones with code invalid", function()
      local lim = make(1, 1)
      assert.is_true((lim:allow(("k"):rep(256))))
      local ok, err = lim:allow(("k"):rep(257))
      assert.is_nil(ok)
      assert.are.equal("invalid", err.code)
      local ok2, err2 = lim:reset(("k"):rep(257))
      assert.is_nil(ok2)
      assert.are.equal("invalid", err2.code)
      lim:close()
    end)

    it("raises on a key that is not a string or a negative cost", function()
      local lim = make(1, 1)
      assert.has_error(function() lim:allow(42) end)
      assert.has_error(function() lim:allow("k", -1) end)
      assert.has_error(function() lim:allow("k", "1") end)
      assert.has_error(function() lim:reset(nil) end)
      lim:close()
    end)

    it("returns code closed from every call after close", function()
      local lim = make(1, 1)
      assert.is_true(lim:close())
      local ok, err = lim:allow("k")
      assert.is_nil(ok)
      assert.are.equal("closed", err.code)
      ok, err = lim:reset("k")
      assert.is_nil(ok)
      assert.are.equal("closed", err.code)
      assert.is_true(lim:close())
    end)

    it("exposes rate and burst", function()
      local lim = make(3, 7)
      assert.are.equal(3, lim.rate)
      assert.are.equal(7, lim.burst)
      lim:close()
    end)
  end)
end
