-- The lock battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.lock")("memory", function(opts) return locks end[, caps])
--
-- new(opts) returns a fresh zever.lock (front-end) over the adapter, with no lease held, on
-- the fake clock opts.clock (a function returning seconds) when the adapter takes one. An
-- adapter on a server's clock (redis) passes { real_clock = true }: expiry rows then use short
-- leases and poll holder() against a deadline instead of moving the clock.

local sched = require "zever.sched"
local sys = require "zever.sys"

return function(name, new, caps)
  caps = caps or {}
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  describe("lock conformance: " .. name, function()
    local t
    local function clock() return t end
    local function make()
      t = 1000
      return new{ clock = not caps.real_clock and clock or nil }
    end
    -- The length of a lease that rows let expire: real time on a server's clock.
    local SHORT = caps.real_clock and 0.2 or 10

    -- Lets the lease on key run out: moves the fake clock past it, or polls the server.
    local function expire(locks, key)
      if not caps.real_clock then
        t = t + SHORT + 1
        return
      end
      local deadline = sys.now() + 10
      while locks:holder(key) and sys.now() < deadline do sched.sleep(0.01) end
      assert.is_false(locks:holder(key))
    end

    -- Runs fns as coroutines on the loop until all returned (or 20 s passed).
    local function run_all(fns)
      local left = #fns
      for _, fn in ipairs(fns) do
        sched.spawn(function()
          local ok, err = pcall(fn)
          if not ok then io.stderr:write(tostring(err), "\n") end
          left = left - 1
        end)
      end
      local deadline = sys.now() + 20
      while left > 0 and sys.now() < deadline do sched.sleep(0.002) end
      assert.are.equal(0, left, "coroutines still running")
    end

    it("grants a lease with a positive fence and refuses a second holder as busy", function()
      local locks = make()
      local a, err = locks:try_acquire("k", 10)
      assert.is_nil(err)
      assert.are.equal("k", a.key)
      assert.is_true(a.fence >= 1 and a.fence % 1 == 0)
      local b, berr = locks:try_acquire("k", 10)
      assert.is_nil(b)
      assert.are.equal("busy", berr.code)
      assert.are.equal("lock", berr.battery)
      assert.is_true(a:unlock())
      locks:close()
    end)

    it("keeps keys apart, byte for byte", function()
      local locks = make()
      local a = assert(locks:try_acquire("a\0x", 10))
      local b = assert(locks:try_acquire("a\0y", 10))
      local c = assert(locks:try_acquire("a", 10))
      assert.are.equal("busy", select(2, locks:try_acquire("a\0y", 10)).code)
      assert.is_true(a:unlock())
      assert.is_true(b:unlock())
      assert.is_true(c:unlock())
      locks:close()
    end)

    it("frees the key on unlock and hands the next holder a larger fence", function()
      local locks = make()
      local a = assert(locks:try_acquire("k", 10))
      assert.is_true(a:unlock())
      local b = assert(locks:try_acquire("k", 10))
      assert.is_true(b.fence > a.fence)
      assert.is_true(b:unlock())
      locks:close()
    end)

    it("returns not_held for a second unlock and does not free another holder's lease", function()
      local locks = make()
      local a = assert(locks:try_acquire("k", 10))
      assert.is_true(a:unlock())
      local b = assert(locks:try_acquire("k", 10))
      local ok, err = a:unlock()
      assert.is_nil(ok)
      assert.are.equal("not_held", err.code)
      local c, cerr = locks:try_acquire("k", 10)
      assert.is_nil(c)
      assert.are.equal("busy", cerr.code)
      assert.is_true(b:unlock())
      locks:close()
    end)

    it("ends a lease after its ttl: the next holder gets it, the old one holds nothing", function()
      local locks = make()
      local a = assert(locks:try_acquire("k", SHORT))
      expire(locks, "k")
      local b = assert(locks:try_acquire("k", 10))
      assert.is_true(b.fence > a.fence)
      local ok, err = a:extend(10)
      assert.is_nil(ok)
      assert.are.equal("not_held", err.code)
      ok, err = a:unlock()
      assert.is_nil(ok)
      assert.are.equal("not_held", err.code)
      -- b still holds the key.
      assert.are.equal("busy", select(2, locks:try_acquire("k", 10)).code)
      assert.is_true(b:unlock())
      locks:close()
    end)

    it("returns not_held for extend and unlock once the lease expired unclaimed", function()
      local locks = make()
      local a = assert(locks:try_acquire("k", SHORT))
      expire(locks, "k")
      assert.are.equal("not_held", select(2, a:extend()).code)
      assert.are.equal("not_held", select(2, a:unlock()).code)
      locks:close()
    end)

    if not caps.real_clock then
      it("moves the expiry with extend", function()
        local locks = make()
        local a = assert(locks:try_acquire("k", 10))
        t = t + 8
        assert.is_true(a:extend(10))
        t = t + 8   -- 16 s after the acquire: past the first ttl, within the extended one
        assert.are.equal("busy", select(2, locks:try_acquire("k", 10)).code)
        local fence, left = locks:holder("k")
        assert.are.equal(a.fence, fence)
        assert.is_true(left > 1.9 and left <= 2.01, "left " .. tostring(left))
        assert.is_true(a:extend())   -- the lease's own ttl (10) again
        t = t + 9
        assert.is_true(a:unlock())
        locks:close()
      end)
    else
      it("moves the expiry with extend", function()
        local locks = make()
        local a = assert(locks:try_acquire("k", SHORT))
        assert.is_true(a:extend(30))
        local _, left = locks:holder("k")
        assert.is_true(left > 20 and left <= 30, "left " .. tostring(left))
        assert.is_true(a:unlock())
        locks:close()
      end)
    end

    it("tells who holds a key and for how long, and false for a free key", function()
      local locks = make()
      assert.is_false(locks:holder("k"))
      local a = assert(locks:try_acquire("k", 30))
      local fence, left = locks:holder("k")
      assert.are.equal(a.fence, fence)
      assert.is_true(left > 25 and left <= 30, "left " .. tostring(left))
      assert.is_true(a:unlock())
      assert.is_false(locks:holder("k"))
      locks:close()
    end)

    it("makes acquire wait for the holder's unlock", function()
      local locks = make()
      local a = assert(locks:try_acquire("k", 60))
      local got, waited
      run_all{
        function() got, waited = locks:acquire("k", 10, 15) end,
        function()
          sched.sleep(0.02)
          assert(a:unlock())
        end,
      }
      assert.is_nil(waited)
      assert.is_true(got.fence > a.fence)
      assert.is_true(got:unlock())
      locks:close()
    end)

    it("gives up acquire with timeout when the key stays held", function()
      local locks = make()
      local a = assert(locks:try_acquire("k", 60))
      local got, err = locks:acquire("k", 10, 0.05)
      assert.is_nil(got)
      assert.are.equal("timeout", err.code)
      got, err = locks:acquire("k", 10, 0)
      assert.is_nil(got)
      assert.are.equal("timeout", err.code)
      assert.is_true(a:unlock())
      local b = assert(locks:acquire("k", 10, 0))
      assert.is_true(b:unlock())
      locks:close()
    end)

    it("never lets two of many contending coroutines hold a key at once", function()
      local locks = make()
      local inside, max_inside, done, fences = 0, 0, 0, {}
      local fns = {}
      for i = 1, 8 do
        fns[i] = function()
          for _ = 1, 5 do
            local lease = assert(locks:acquire("shared", 30, 15))
            inside = inside + 1
            if inside > max_inside then max_inside = inside end
            fences[#fences + 1] = lease.fence
            sched.sleep(0.001)   -- yield while holding: the others must keep waiting
            inside = inside - 1
            assert(lease:unlock())
            done = done + 1
          end
        end
      end
      run_all(fns)
      assert.are.equal(1, max_inside)
      assert.are.equal(40, done)
      for i = 2, #fences do assert.is_true(fences[i] > fences[i - 1]) end
      locks:close()
    end)

    it("returns invalid for a key over 1024 bytes and raises on misuse", function()
      local locks = make()
      local l, err = locks:try_acquire(("x"):rep(1025), 10)
      assert.is_nil(l)
      assert.are.equal("invalid", err.code)
      assert(assert(locks:try_acquire(("x"):rep(1024), 10)):unlock())
      assert.has_error(function() locks:try_acquire(1, 10) end,
        "lock:try_acquire: key must be a string")
      assert.has_error(function() locks:try_acquire("k") end,
        "lock:try_acquire: ttl must be a positive number of seconds")
      assert.has_error(function() locks:try_acquire("k", 0) end,
        "lock:try_acquire: ttl must be a positive number of seconds")
      assert.has_error(function() locks:acquire("k", 1, -1) end,
        "lock:acquire: timeout must be a number of seconds >= 0")
      locks:close()
    end)

    it("returns closed from every call after close", function()
      local locks = make()
      local a = assert(locks:try_acquire("k", 10))
      assert.is_true(locks:close())
      assert.is_true(locks:close())
      assert.are.equal("closed", select(2, locks:try_acquire("j", 10)).code)
      assert.are.equal("closed", select(2, locks:acquire("j", 10, 1)).code)
      assert.are.equal("closed", select(2, locks:holder("j")).code)
      assert.are.equal("closed", select(2, a:extend()).code)
      assert.are.equal("closed", select(2, a:unlock()).code)
    end)
  end)
end
