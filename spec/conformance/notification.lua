-- The notification battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.notification")("log", function() return notifier, sent end)
--
-- new() returns a fresh zever.notification and sent(), which returns what the adapter
-- delivered so far, in order (the log adapter: its lines, decoded).

return function(name, new)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  describe("notification conformance: " .. name, function()
    it("delivers a notification with an id, its channel, recipient and text", function()
      local n, sent = new()
      local id = assert(n:send{ to = "user:42", channel = "push", title = "Hi", body = "Your order shipped",
        data = { order = 17 } })
      local id2 = assert(n:send{ to = 7, channel = "sms", body = "Code: 1234" })
      assert.are_not.equal(id, id2)
      local got = sent()
      assert.are.equal(2, #got)
      assert.are.equal(id, got[1].id)
      assert.are.equal("push", got[1].channel)
      assert.are.equal("user:42", got[1].to)
      assert.are.equal("Your order shipped", got[1].body)
      assert.are.equal(17, got[1].data.order)
      assert.are.equal("7", got[2].to)
      assert.matches("^%d%d%d%d%-%d%d%-%d%dT", got[1].time)
      n:close()
    end)

    it("raises on misuse and refuses an oversized body", function()
      local n, sent = new()
      assert.has_error(function() n:send{ channel = "sms", body = "x" } end)
      assert.has_error(function() n:send{ to = "a", channel = "bad channel", body = "x" } end)
      assert.has_error(function() n:send{ to = "a", channel = "sms", body = 5 } end)
      local ok, err = n:send{ to = "a", channel = "sms", body = ("x"):rep(65537) }
      assert.is_nil(ok)
      assert.are.equal("invalid", err.code)
      assert.are.equal(0, #sent())
      assert.is_true(n:close())
      assert.are.equal("closed", select(2, n:send{ to = "a", channel = "sms", body = "x" }).code)
    end)
  end)
end
