-- The analytics battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.analytics")("log", function() return analytics, recorded end)
--
-- new() returns a fresh zever.analytics and recorded(), what the adapter stored, in order.

return function(name, new)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  describe("analytics conformance: " .. name, function()
    it("records track and identify calls with ids", function()
      local a, recorded = new()
      local id = assert(a:track("Signed Up", { user_id = 42, properties = { plan = "pro" } }))
      assert(a:track("Viewed Page", { anonymous_id = "anon-1" }))
      assert(a:identify("42", { email = "ann@example.com" }))
      local got = recorded()
      assert.are.equal(3, #got)
      assert.are.same({ "track", "Signed Up", "42", "pro", id },
        { got[1].type, got[1].event, got[1].user_id, got[1].properties.plan, got[1].id })
      assert.are.equal("anon-1", got[2].anonymous_id)
      assert.are.same({ "identify", "42", "ann@example.com" }, { got[3].type, got[3].user_id, got[3].traits.email })
      a:close()
    end)

    it("raises on misuse and answers closed after close", function()
      local a = new()
      assert.has_error(function() a:track("", { user_id = 1 }) end)
      assert.has_error(function() a:track("E", {}) end, "analytics:track: needs user_id or anonymous_id")
      assert.has_error(function() a:identify(nil) end)
      assert.is_true(a:close())
      assert.are.equal("closed", select(2, a:track("E", { user_id = 1 })).code)
    end)
  end)
end
