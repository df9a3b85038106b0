-- The cache battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.cache")("memory", function(opts) return cache end)
--
-- new(opts) returns a fresh, empty zever.cache (front-end) over the adapter, with the fake clock
-- opts.clock (a function returning seconds) when the adapter can take one. An adapter that
-- cannot passes { real_clock = true }: expiry rows then poll against a deadline.

return function(name, new, caps)
  caps = caps or {}
  -- The runner gives each spec file its own busted environment: use the caller's.
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  describe("cache conformance: " .. name, function()
    local t
    local function clock() return t end
    local function make()
      t = 1000
      return new{ clock = not caps.real_clock and clock or nil }
    end
    -- Waits until pred() holds: the fake clock jumps, the real one is polled to a deadline.
    local function after(seconds, pred)
      if not caps.real_clock then
        t = t + seconds
        return pred()
      end
      local sys = require "zever.sys"
      local deadline = sys.now() + seconds * 20 + 2
      while sys.now() < deadline do
        if pred() then return true end
      end
      return pred()
    end

    -- { name, value } round trips: what comes out equals what went in.
    local values = {
      { "a string", "hello" },
      { "an empty string", "" },
      { "a string with zero bytes", "a\0b\0" },
      { "a long string", ("x"):rep(10000) },
      { "an integer", 42 },
      { "a float", -1.5 },
      { "true", true },
      { "false", false },
      { "a table", { a = 1, list = { 1, 2, 3 }, nested = { s = "x" } } },
    }
    for _, row in ipairs(values) do
      it("returns " .. row[1] .. " as it was stored", function()
        local c = make()
        assert.is_true(c:set("v", row[2]))
        assert.are.same(row[2], c:get("v"))
        c:close()
      end)
    end

    it("returns nil for an absent key", function()
      local c = make()
      assert.is_nil(c:get("nope"))
      assert.is_false(c:exists("nope"))
      c:close()
    end)

    it("stores copies: changing a table after set or after get changes nothing", function()
      local c = make()
      local v = { n = 1 }
      c:set("t", v)
      v.n = 2
      local got = c:get("t")
      assert.are.equal(1, got.n)
      got.n = 3
      assert.are.equal(1, c:get("t").n)
      c:close()
    end)

    it("replaces a value on set", function()
      local c = make()
      c:set("k", "one")
      c:set("k", 2)
      assert.are.equal(2, c:get("k"))
      c:close()
    end)

    it("expires a value after its ttl", function()
      local c = make()
      c:set("e", "v", 0.05)
      assert.are.equal("v", c:get("e"))
      assert.is_true(after(0.06, function() return c:get("e") == nil end))
      assert.is_false(c:exists("e"))
      c:close()
    end)

    it("keeps a value with ttl 0 forever", function()
      local c = make()
      c:set("f", "v", 0)
      if not caps.real_clock then t = t + 1e6 end
      assert.are.equal("v", c:get("f"))
      c:close()
    end)

    it("adds only when the key is absent", function()
      local c = make()
      assert.is_true(c:add("a", "first"))
      assert.is_false(c:add("a", "second"))
      assert.are.equal("first", c:get("a"))
      c:close()
    end)

    it("lets add re-claim an expired key", function()
      local c = make()
      c:add("a", "first", 0.05)
      assert.is_true(after(0.06, function() return not c:exists("a") end))
      assert.is_true(c:add("a", "second"))
      assert.are.equal("second", c:get("a"))
      c:close()
    end)

    it("deletes and says whether the key was there", function()
      local c = make()
      c:set("d", 1)
      assert.is_true(c:delete("d"))
      assert.is_false(c:delete("d"))
      assert.is_nil(c:get("d"))
      c:close()
    end)

    -- { name, setup value or nil, increments, expected results }
    local incrs = {
      { "starts a missing key at 0", nil, { 1, 1, 5 }, { 1, 2, 7 } },
      { "adds to a stored number", 10, { -3 }, { 7 } },
      { "adds fractions", 0.5, { 0.25 }, { 0.75 } },
    }
    for _, row in ipairs(incrs) do
      it("incr " .. row[1], function()
        local c = make()
        if row[2] ~= nil then c:set("n", row[2]) end
        for i, n in ipairs(row[3]) do assert.are.equal(row[4][i], c:incr("n", n)) end
        assert.are.equal(row[4][#row[4]], c:get("n"))
        c:close()
      end)
    end

    it("incr defaults n to 1", function()
      local c = make()
      assert.are.equal(1, c:incr("n"))
      c:close()
    end)

    it("refuses incr on a value that is not a number with code invalid", function()
      local c = make()
      for _, v in ipairs({ "abc", "12", true, { 1 } }) do
        c:set("s", v)
        local n, err = c:incr("s", 1)
        assert.is_nil(n)
        assert.are.equal("invalid", err.code)
      end
      c:close()
    end)

    it("restarts incr at 0 on an expired key", function()
      local c = make()
      c:set("n", 41, 0.05)
      assert.is_true(after(0.06, function() return not c:exists("n") end))
      assert.are.equal(1, c:incr("n", 1))
      c:close()
    end)

    it("raises on misuse", function()
      local c = make()
      assert.has_error(function() c:get(1) end)
      assert.has_error(function() c:set("k", nil) end)
      assert.has_error(function() c:set("k", function() end) end)
      assert.has_error(function() c:set("k", "v", -1) end)
      assert.has_error(function() c:incr("k", "1") end)
      assert.has_error(function() c:delete(nil) end)
      c:close()
    end)

    it("returns code closed from every call after close", function()
      local c = make()
      c:set("k", "v")
      assert.is_true(c:close())
      local calls = {
        function() return c:get("k") end,
        function() return c:set("k", "v") end,
        function() return c:add("k", "v") end,
        function() return c:delete("k") end,
        function() return c:incr("k", 1) end,
        function() return c:exists("k") end,
      }
      for i, call in ipairs(calls) do
        local v, err = call()
        assert.is_nil(v, "call " .. i)
        assert.are.equal("closed", err.code, "call " .. i)
      end
      assert.is_true(c:close())
    end)
  end)
end
