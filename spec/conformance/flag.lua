-- The flag battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.flag")("memory", function(tree) return flags end)
--
-- new(tree) returns a fresh zever.flag (front-end) over the adapter holding the flags of tree
-- (the flag-file shape of adapters.flag.rules); the suite closes what it makes.

return function(name, new)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  describe("flag conformance: " .. name, function()
    local TREE = {
      beta = true, banner = "hello", limit = 10, ratio = 0.25,
      colors = { "red", "green" },
      checkout = { rollout = 30 },
      theme = { value = "light", tenants = { acme = "dark" } },
      everyone = { value = true, rollout = 100 },
      nobody = { rollout = 0 },
      pilot = { rollout = 50, tenants = { acme = true, initech = false } },
    }

    it("returns each flag's value through the getter of its type", function()
      local flags = new(TREE)
      assert.are.equal(true, flags:bool("beta", false))
      assert.are.equal("hello", flags:string("banner", "x"))
      assert.are.equal(10, flags:int("limit", 0))
      assert.are.equal(0.25, flags:number("ratio", 0))
      assert.are.same({ "red", "green" }, flags:json("colors", {}))
      assert.is_true(flags:enabled("beta"))
      flags:close()
    end)

    it("returns the fallback and no error for a missing flag", function()
      local flags = new(TREE)
      local v, err = flags:bool("missing", true)
      assert.are.equal(true, v)
      assert.is_nil(err)
      assert.are.equal("fb", flags:string("missing", "fb"))
      assert.is_false(flags:enabled("missing"))
      flags:close()
    end)

    it("returns the fallback plus an invalid error on a type mismatch", function()
      local flags = new(TREE)
      local v, err = flags:bool("banner", false)
      assert.are.equal(false, v)
      assert.are.equal("invalid", err.code)
      assert.are.equal("flag", err.battery)
      assert.matches('"banner" is a string, not a bool', err.message, 1, true)
      local n, nerr = flags:int("ratio", 7)
      assert.are.equal(7, n)
      assert.are.equal("invalid", nerr.code)
      assert.are.equal(3, select(1, flags:string("limit", 3)))
      assert.is_false(flags:enabled("banner"))
      flags:close()
    end)

    it("applies tenant overrides before the value and the rollout", function()
      local flags = new(TREE)
      assert.are.equal("dark", flags:string("theme", "x", { tenant = "acme" }))
      assert.are.equal("light", flags:string("theme", "x", { tenant = "other" }))
      assert.are.equal("light", flags:string("theme", "x"))
      assert.is_true(flags:bool("pilot", false, { tenant = "acme", key = "u1" }))
      assert.is_false(flags:bool("pilot", true, { tenant = "initech", key = "u1" }))
      flags:close()
    end)

    it("rolls a flag out to a stable share of keys", function()
      local flags = new(TREE)
      local on = 0
      for i = 1, 2000 do
        local key = "user-" .. i
        local a = flags:enabled("checkout", key)
        assert.are.equal(a, flags:bool("checkout", not a, { key = key }))
        assert.are.equal(a, (require("zever.flag").bucket("checkout", key) < 3000))
        if a then on = on + 1 end
      end
      assert.is_true(on > 480 and on < 720, "30 % of 2000 keys, got " .. on)
      assert.is_true(flags:enabled("everyone", "anyone"))
      assert.is_false(flags:enabled("nobody", "anyone"))
      assert.is_false(flags:enabled("checkout"))   -- no key: the plain value (false)
      flags:close()
    end)

    it("raises on a name that is not a string, and answers fallbacks after close", function()
      local flags = new(TREE)
      assert.has_error(function() flags:bool(42, false) end, "flag:bool: name must be a string")
      assert.has_error(function() flags:bool("beta", false, 42) end)
      assert.is_true(flags:close())
      assert.is_true(flags:close())
      local v, err = flags:bool("beta", false)
      assert.are.equal(false, v)
      assert.are.equal("closed", err.code)
      assert.is_false(flags:enabled("beta"))
    end)

    it("lists the flag names in order", function()
      local flags = new({ b = 1, a = true })
      assert.are.same({ "a", "b" }, flags:names())
      flags:close()
    end)
  end)
end
