-- The event-bus battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.eventbus")("memory", function(opts) return bus end)
--
-- new(opts) returns a fresh zever.eventbus (front-end) over the adapter, on a bus no other
-- test publishes to, with opts.max_pending passed to eventbus.wrap. Delivery is asynchronous
-- for every adapter, so rows wait for what they expect with a deadline (never a fixed sleep).

local sched = require "zever.sched"
local sys = require "zever.sys"

return function(name, new)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  -- Runs the loop until pred() holds (true) or 10 s passed (false).
  local function wait_until(pred)
    local deadline = sys.now() + 10
    while not pred() do
      if sys.now() > deadline then return false end
      sched.sleep(0.002)
    end
    return true
  end

  describe("eventbus conformance: " .. name, function()
    it("delivers a message to the subscribers of its topic", function()
      local bus = new{}
      local got, other = {}, {}
      assert(bus:subscribe("orders.created", function(msg, topic)
        got[#got + 1] = { msg, topic }
      end))
      assert(bus:subscribe("orders.deleted", function(msg) other[#other + 1] = msg end))
      assert.is_true(bus:publish("orders.created", { id = 7, items = { "a", "b" } }))
      assert.is_true(wait_until(function() return #got == 1 end))
      assert.are.same({ { id = 7, items = { "a", "b" } }, "orders.created" }, got[1])
      assert.are.equal(0, #other)
      bus:close()
    end)

    it("matches '*' to exactly one word and a last '>' to one or more", function()
      local bus = new{}
      local star, tail, exact = {}, {}, {}
      assert(bus:subscribe("orders.*", function(_, t) star[#star + 1] = t end))
      assert(bus:subscribe("orders.>", function(_, t) tail[#tail + 1] = t end))
      assert(bus:subscribe("orders", function(_, t) exact[#exact + 1] = t end))
      for _, t in ipairs({ "orders", "orders.created", "orders.eu.created", "ordersx.created",
          "x.orders.created", "done" }) do
        assert(bus:publish(t, 1))
      end
      assert(bus:publish("done.done", 1))
      assert.is_true(wait_until(function() return #tail == 2 end))
      assert.is_true(wait_until(function() return #star == 1 and #exact == 1 end))
      assert.are.same({ "orders.created" }, star)
      assert.are.same({ "orders.created", "orders.eu.created" }, tail)
      assert.are.same({ "orders" }, exact)
      bus:close()
    end)

    it("fans one message out to every matching subscriber", function()
      local bus = new{}
      local counts = {}
      for i = 1, 5 do
        counts[i] = 0
        assert(bus:subscribe(i % 2 == 0 and "fan.*" or "fan.out", function()
          counts[i] = counts[i] + 1
        end))
      end
      assert(bus:publish("fan.out", "x"))
      assert.is_true(wait_until(function()
        for i = 1, 5 do if counts[i] ~= 1 then return false end end
        return true
      end))
      assert.are.equal(5, bus:stats().subscribers)
      bus:close()
    end)

    it("keeps publish order for each subscriber, even when its handler yields", function()
      local bus = new{}
      local got = {}
      assert(bus:subscribe("seq", function(n)
        if n % 10 == 0 then sched.sleep(0.001) end
        got[#got + 1] = n
      end))
      for i = 1, 100 do assert(bus:publish("seq", i)) end
      assert.is_true(wait_until(function() return #got == 100 end))
      for i = 1, 100 do assert.are.equal(i, got[i]) end
      bus:close()
    end)

    it("stops delivering after unsubscribe, which may be called twice", function()
      local bus = new{}
      local got, kept = 0, 0
      local unsubscribe = assert(bus:subscribe("u", function() got = got + 1 end))
      assert(bus:subscribe("u", function() kept = kept + 1 end))
      assert(bus:publish("u", 1))
      assert.is_true(wait_until(function() return got == 1 and kept == 1 end))
      assert.is_true(unsubscribe())
      assert.is_true(unsubscribe())
      assert(bus:publish("u", 2))
      assert.is_true(wait_until(function() return kept == 2 end))
      assert.are.equal(1, got)
      assert.are.equal(1, bus:stats().subscribers)
      bus:close()
    end)

    it("drops a slow subscriber's newest messages, counted, and keeps the oldest in order", function()
      local bus = new{ max_pending = 4 }
      local got, gate = {}, false
      local _, sub = assert(bus:subscribe("slow", function(n)
        while not gate do sched.sleep(0.002) end
        got[#got + 1] = n
      end))
      local fast = 0
      assert(bus:subscribe("slow", function() fast = fast + 1 end, { max_pending = 100 }))
      assert(bus:publish("slow", 1))
      assert.is_true(wait_until(function() return fast == 1 end))   -- 1 is in the slow handler
      for i = 2, 11 do assert(bus:publish("slow", i)) end            -- never held up
      assert.is_true(wait_until(function() return fast == 11 end))
      assert.is_true(wait_until(function() return bus:stats().dropped == 6 end))
      assert.are.equal(6, sub.dropped)
      gate = true
      assert.is_true(wait_until(function() return #got == 5 end))
      assert.are.same({ 1, 2, 3, 4, 5 }, got)
      bus:close()
    end)

    it("counts a handler that raises and keeps its subscription", function()
      local reported = {}
      local bus = new{ on_error = function(err, topic, pattern)
        reported[#reported + 1] = { tostring(err):match("handler failure") or tostring(err), topic,
          pattern }
      end }
      local seen = 0
      assert(bus:subscribe("boom", function(n)
        seen = seen + 1
        if n == 1 then error("handler failure (expected by the spec)") end
      end))
      assert(bus:publish("boom", 1))
      assert(bus:publish("boom", 2))
      assert.is_true(wait_until(function() return seen == 2 end))
      local st = bus:stats()
      assert.are.equal(1, st.failed)
      assert.are.equal(1, st.delivered)
      assert.are.same({ { "handler failure", "boom", "boom" } }, reported)
      bus:close()
    end)

    it("returns invalid for a bad topic or pattern and raises on misuse", function()
      local bus = new{}
      for _, t in ipairs({ "", "a..b", ".a", "a.", "a.*", "a.>", "a b", ("x"):rep(257) }) do
        local ok, err = bus:publish(t, 1)
        assert.is_nil(ok, t)
        assert.are.equal("invalid", err.code)
      end
      for _, p in ipairs({ "", "a.>.b", "a..b", "a*.b", "a.b>" }) do
        local ok, err = bus:subscribe(p, function() end)
        assert.is_nil(ok, p)
        assert.are.equal("invalid", err.code)
      end
      assert.has_error(function() bus:publish(1, 1) end, "eventbus:publish: topic must be a string")
      assert.has_error(function() bus:subscribe("a", 1) end,
        "eventbus:subscribe: fn must be a function")
      assert.has_error(function() bus:subscribe("a", print, { max_pending = 0 }) end,
        "eventbus:subscribe: max_pending must be an integer >= 1")
      bus:close()
    end)

    it("returns closed from publish and subscribe after close", function()
      local bus = new{}
      assert.is_true(bus:close())
      assert.is_true(bus:close())
      assert.are.equal("closed", select(2, bus:publish("a", 1)).code)
      assert.are.equal("closed", select(2, bus:subscribe("a", print)).code)
    end)
  end)
end
