-- zever.resilience: retry (backoff and jitter on an injected sleep and random source), the
-- bulkhead (calls held on tokens the spec completes, so no timing decides anything), timeouts
-- on the event loop, and their composition with a breaker.

local resilience = require "zever.resilience"
local sched = require "zever.sched"
local breaker = require "zever.breaker"

describe("zever.resilience", function()
  describe("retry", function()
    local slept
    local function opts(o)
      slept = {}
      o = o or {}
      o.sleep = function(s) slept[#slept + 1] = s end
      o.random = o.random or function() return 0.5 end
      return o
    end

    it("returns the first success and sleeps a jittered, doubling, capped delay between tries", function()
      local n = 0
      local r = resilience.retry(function(x)
        n = n + 1
        if n < 5 then return nil, "flaky" end
        return x * 2
      end, opts{ attempts = 5, base = 0.1, cap = 0.5 }, 21)
      assert.are.equal(42, r)
      assert.are.same({ 0.05, 0.1, 0.2, 0.25 }, slept)   -- min(cap, base*2^(n-1)) * 0.5
    end)

    it("returns the last nil, err after the attempts, without jitter when asked", function()
      local n = 0
      local r, err = resilience.retry(function() n = n + 1; return nil, "down " .. n end,
        opts{ attempts = 3, base = 1, jitter = "none" })
      assert.is_nil(r)
      assert.are.equal("down 3", err)
      assert.are.same({ 1, 2 }, slept)
    end)

    it("raises the last raised error, and stops early when retry_if says no", function()
      local n = 0
      assert.has_error(function()
        resilience.retry(function() n = n + 1; error("boom " .. n, 0) end, opts{ attempts = 2 })
      end, "boom 2")
      n = 0
      local _, err = resilience.retry(function() n = n + 1; return nil, { code = "invalid" } end,
        opts{ attempts = 5, retry_if = function(e) return e.code ~= "invalid" end })
      assert.are.equal("invalid", err.code)
      assert.are.equal(1, n)
    end)

    it("raises on misuse", function()
      assert.has_error(function() resilience.retry("x") end,
        "resilience.retry: fn must be a function")
      assert.has_error(function() resilience.retry(print, { attempts = 0 }) end,
        "resilience.retry: attempts must be a whole number >= 1")
      assert.has_error(function() resilience.retry(print, { jitter = "some" }) end,
        'resilience.retry: jitter must be "full" or "none"')
    end)
  end)

  describe("bulkhead", function()
    -- Each held call waits on a token of its own until the spec releases it.
    local function hold(bh, log, name)
      local h = { token = nil }
      sched.spawn(function()
        local r, err = bh:call(function()
          h.token = sched.token()
          log[#log + 1] = "start " .. name
          sched.await(h.token)
          return name
        end)
        log[#log + 1] = r and ("done " .. r) or ("refused " .. name .. " " .. err.code)
      end)
      return h
    end

    it("runs at most max calls and refuses the next one with full", function()
      local bh, log = resilience.bulkhead{ max = 2, name = "api" }, {}
      local a, b = hold(bh, log, "a"), hold(bh, log, "b")
      hold(bh, log, "c")
      assert.are.same({ "start a", "start b", "refused c full" }, log)
      assert.are.same({ active = 2, waiting = 0, rejected = 1 }, bh:stats())
      sched.complete(a.token)
      sched.complete(b.token)
      assert.are.same({ active = 0, waiting = 0, rejected = 1 }, bh:stats())
      assert.are.equal("done b", log[#log])
    end)

    it("queues a call over max and hands it the slot of the first call that ends", function()
      local bh, log = resilience.bulkhead{ max = 1, queue = 1 }, {}
      local a = hold(bh, log, "a")
      local b = hold(bh, log, "b")
      hold(bh, log, "c")                               -- the queue holds one: refused
      assert.are.same({ "start a", "refused c full" }, log)
      assert.are.equal(1, bh:stats().waiting)
      sched.complete(a.token)
      assert.are.same({ "start a", "refused c full", "start b", "done a" }, log)
      assert.are.same({ active = 1, waiting = 0, rejected = 1 }, bh:stats())
      sched.complete(b.token)
      assert.are.same({ active = 0, waiting = 0, rejected = 1 }, bh:stats())
    end)

    it("gives up a queued call after wait seconds", function()
      local bh, log = resilience.bulkhead{ max = 1, queue = 1, wait = 0.01 }, {}
      local a = hold(bh, log, "a")
      hold(bh, log, "b")
      assert(sched.wait_until(function() return #log == 2 end, 30))
      assert.are.same({ "start a", "refused b full" }, log)
      sched.complete(a.token)
      assert.are.same({ active = 0, waiting = 0, rejected = 1 }, bh:stats())
    end)

    it("frees the slot when the call raises, and raises it again", function()
      local bh = resilience.bulkhead{ max = 1 }
      assert.has_error(function() bh:call(function() error("bad", 0) end) end, "bad")
      assert.are.equal("ok", bh:call(function() return "ok" end))
      assert.are.equal(0, bh:stats().active)
    end)
  end)

  describe("timeout", function()
    it("returns fn's results when it ends first, waiting or not", function()
      assert.are.same({ 1, 2 }, { resilience.timeout(5, function(a, b) return a, b end, 1, 2) })
      assert.are.equal("slept", resilience.timeout(30, function()
        sched.sleep(0.001)
        return "slept"
      end))
    end)

    it("returns timeout when fn is still waiting, and lets fn finish on its own", function()
      local held = {}
      local r, err = resilience.timeout(0.01, function()
        held.token = sched.token()
        sched.await(held.token)
        held.finished = true
        return "late"
      end)
      assert.is_nil(r)
      assert.are.equal("timeout", err.code)
      assert.are.equal("resilience", err.battery)
      sched.complete(held.token)
      assert.is_true(held.finished)
    end)

    it("raises what fn raises", function()
      assert.has_error(function()
        resilience.timeout(5, function() sched.sleep(0.001); error("inner", 0) end)
      end, "inner")
    end)
  end)

  it("composes: retry around a breaker around a timeout", function()
    local t = 0
    local cb = breaker.new{ clock = function() return t end }:get("composed",
      { window = 2, min_calls = 2, failure_rate = 1, open_for = 60 })
    local calls = 0
    local function upstream()
      calls = calls + 1
      return nil, "503"
    end
    local r, err = resilience.retry(function()
      return cb:call(resilience.timeout, 5, upstream)
    end, { attempts = 5, sleep = function() end,
      retry_if = function(e) return type(e) ~= "table" or e.code ~= "open" end })
    assert.is_nil(r)
    assert.are.equal("open", err.code)      -- two failures opened it; the third try was refused
    assert.are.equal(2, calls)
  end)
end)
