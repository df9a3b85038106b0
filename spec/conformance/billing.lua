-- The billing battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.billing")("stub", function(opts) return billing end)

local webhook = require "zever.webhook"

return function(name, new)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  describe("billing conformance: " .. name, function()
    it("subscribes, with a trial, and cancels now or at the period's end", function()
      local b = new{}
      local s = assert(b:subscribe{ customer = "cus_1", plan = "pro" })
      assert.are.same({ "active", "pro", "cus_1" }, { s.status, s.plan, s.customer })
      assert.is_true(s.current_period_end > s.current_period_start)
      local t = assert(b:subscribe{ customer = "cus_2", plan = "pro", trial_days = 14 })
      assert.are.equal("trialing", t.status)
      assert.are.equal(14 * 86400, t.current_period_end - t.current_period_start)
      assert.is_true(assert(b:cancel(s.id, { at_period_end = true })).cancel_at_period_end)
      assert.are.equal("active", b:get(s.id).status)
      assert.are.equal("canceled", assert(b:cancel(s.id)).status)
      assert.are.equal("not_found", select(2, b:cancel("sub_nope")).code)
      b:close()
    end)

    it("replays an idempotency key and refuses it with other parameters", function()
      local b = new{}
      local a = assert(b:subscribe{ customer = "c", plan = "p", idempotency_key = "k1" })
      assert.are.equal(a.id, assert(b:subscribe{ customer = "c", plan = "p", idempotency_key = "k1" }).id)
      assert.are.equal("key_mismatch", select(2, b:subscribe{ customer = "c", plan = "q",
        idempotency_key = "k1" }).code)
      assert.has_error(function() b:subscribe{ customer = "", plan = "p" } end)
      b:close()
    end)

    it("verifies webhooks with its own secret", function()
      local b = new{ webhook_secret = "whsec_billing_secret_value_000000000" }
      local body = '{"type":"invoice.paid"}'
      local h = webhook.sign("whsec_billing_secret_value_000000000", body, 1764600000)
      assert.are.equal("invoice.paid", assert(b:verify_webhook(body, h, { now = 1764600001 })).type)
      assert.are.equal("invalid", select(2, b:verify_webhook(body .. " ", h, { now = 1764600001 })).code)
      b:close()
    end)
  end)
end
