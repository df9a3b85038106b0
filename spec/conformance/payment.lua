-- The payment battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.payment")("stub", function(opts) return payments end)
--
-- new(opts) returns a fresh zever.payment over the adapter, opts.webhook_secret set.

local webhook = require "zever.webhook"

return function(name, new)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert
  local SECRET = "whsec_" .. ("s"):rep(32)

  describe("payment conformance: " .. name, function()
    it("charges, reads back and refunds in parts", function()
      local p = new{ webhook_secret = SECRET }
      local c = assert(p:charge{ amount = 1999, currency = "EUR", source = "tok_visa", customer = "cus_1" })
      assert.are.same({ "succeeded", 1999, "eur" }, { c.status, c.amount, c.currency })
      assert.are.equal(c.id, p:get(c.id).id)
      local r = assert(p:refund(c.id, { amount = 500 }))
      assert.are.equal(500, r.amount)
      assert(p:refund(c.id))
      assert.are.equal("refunded", p:get(c.id).status)
      assert.are.equal("invalid", select(2, p:refund(c.id, { amount = 1 })).code)
      assert.are.equal("not_found", select(2, p:get("ch_nope")).code)
      p:close()
    end)

    it("replays an idempotency key and refuses it with other parameters", function()
      local p = new{}
      local a = assert(p:charge{ amount = 500, currency = "usd", source = "tok_visa", idempotency_key = "order-1" })
      local b = assert(p:charge{ amount = 500, currency = "usd", source = "tok_visa", idempotency_key = "order-1" })
      assert.are.equal(a.id, b.id)
      local c = assert(p:charge{ amount = 500, currency = "usd", source = "tok_visa", idempotency_key = "order-2" })
      assert.are_not.equal(a.id, c.id)
      local d, err = p:charge{ amount = 501, currency = "usd", source = "tok_visa", idempotency_key = "order-1" }
      assert.is_nil(d)
      assert.are.equal("key_mismatch", err.code)
      local r1 = assert(p:refund(a.id, { amount = 100, idempotency_key = "rf-1" }))
      local r2 = assert(p:refund(a.id, { amount = 100, idempotency_key = "rf-1" }))
      assert.are.equal(r1.id, r2.id)
      assert.are.equal(100, p:get(a.id).amount_refunded)
      p:close()
    end)

    it("declines the declining test token and raises on bad amounts", function()
      local p = new{}
      local c, err = p:charge{ amount = 100, currency = "usd", source = "tok_chargeDeclined" }
      assert.is_nil(c)
      assert.are.equal("declined", err.code)
      assert.has_error(function() p:charge{ amount = 10.5, currency = "usd" } end)
      assert.has_error(function() p:charge{ amount = 0, currency = "usd" } end)
      assert.has_error(function() p:charge{ amount = 1, currency = "dollars" } end)
      p:close()
    end)

    it("verifies Stripe-style webhook signatures: good, tampered, expired, unsigned", function()
      local p = new{ webhook_secret = SECRET }
      local body = '{"id":"evt_1","type":"charge.succeeded"}'
      local now = 1764600000
      local header = webhook.sign(SECRET, body, now)
      local event = assert(p:verify_webhook(body, header, { now = now + 10 }))
      assert.are.equal("charge.succeeded", event.type)
      assert.are.equal("invalid", select(2, p:verify_webhook(body:gsub("succeeded", "refunded"), header,
        { now = now })).code)
      assert.are.equal("expired", select(2, p:verify_webhook(body, header, { now = now + 301 })).code)
      assert.are.equal("invalid", select(2, p:verify_webhook(body, webhook.sign("other", body, now),
        { now = now })).code)
      assert.are.equal("invalid", select(2, p:verify_webhook(body, nil)).code)
      assert.are.equal("invalid", select(2, new{}:verify_webhook(body, header, { now = now })).code)
      p:close()
    end)
  end)
end
