-- The secrets battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.secrets")("env", function(values) return secrets end)
--
-- new(values) returns a fresh zever.secrets (front-end) over the adapter holding values
-- ({ name = value }); names are lower-case words with "_".

return function(name, new)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  describe("secrets conformance: " .. name, function()
    it("returns a set secret and nil for a missing one", function()
      local s = new{ stripe_key = "sk_test_123", db_password = "p@ss word\tx" }
      assert.are.equal("sk_test_123", s:get("stripe_key"))
      assert.are.equal("p@ss word\tx", s:get("db_password"))
      local v, err = s:get("missing")
      assert.is_nil(v)
      assert.is_nil(err)
      s:close()
    end)

    it("makes require fail with not_found, never with the value", function()
      local s = new{ api_token = "tok-secret-value" }
      assert.are.equal("tok-secret-value", s:require("api_token"))
      local v, err = s:require("other")
      assert.is_nil(v)
      assert.are.equal("not_found", err.code)
      assert.is_nil(tostring(s):find("tok-secret-value", 1, true))
      assert.is_nil(tostring(err):find("tok-secret-value", 1, true))
      s:close()
    end)

    it("raises on a bad name and answers closed after close", function()
      local s = new{}
      assert.has_error(function() s:get("") end, "secrets:get: name must be a non-empty string")
      assert.has_error(function() s:get(1) end)
      assert.is_true(s:close())
      assert.are.equal("closed", select(2, s:get("x")).code)
    end)
  end)
end
