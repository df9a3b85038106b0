-- The webhook battery's conformance suite (its endpoint store): every adapter runs it.
--
--   require("spec.conformance.webhook")("memory", function(jobs, send) return hooks end)
--
-- new(jobs, send) returns a fresh zever.webhook over the adapter (an empty store), delivering
-- through jobs (an in-process app's jobs battery, run by zever.testing's perform_jobs) with
-- the given send function.

local webhook = require "zever.webhook"
local testing = require "zever.testing"

return function(name, new)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  describe("webhook conformance: " .. name, function()
    local SECRET = "whsec_conformance_0123"

    it("registers, lists by event (with '*'), never shows secrets, and unregisters", function()
      local hooks = new(nil, function() return 200 end)
      local a = assert(hooks:register("order.paid", "https://a.example/hook", SECRET))
      local b = assert(hooks:register("*", "https://b.example/all", SECRET))
      local c = assert(hooks:register("user.new", "https://c.example/u", SECRET))
      assert.are_not.equal(a, b)
      local paid = assert(hooks:endpoints("order.paid"))
      assert.are.same({ { id = a, event = "order.paid", url = "https://a.example/hook" },
        { id = b, event = "*", url = "https://b.example/all" } }, paid)
      assert.are.equal(3, #assert(hooks:endpoints()))
      for _, e in ipairs(assert(hooks:endpoints())) do assert.is_nil(e.secret) end
      assert.is_true(hooks:unregister(c))
      assert.is_false(hooks:unregister(c))
      assert.are.equal(2, #assert(hooks:endpoints()))
      hooks:close()
    end)

    it("delivers a signed request to each endpoint of the event, once each", function()
      local t = testing.app(require("zever").app())
      local jobs = t.app.jobs
      local got = {}
      local hooks = new(jobs, function(url, headers, body)
        got[#got + 1] = { url = url, ok = webhook.verify(SECRET, body, headers[webhook.HEADER]) }
        return 204
      end)
      assert(hooks:register("order.paid", "https://a.example/hook", SECRET))
      assert(hooks:register("user.new", "https://c.example/u", SECRET))
      assert.are.equal(1, hooks:deliver("order.paid", { id = 7 }))
      t:perform_jobs()
      assert.are.equal(1, #got)
      assert.are.equal("https://a.example/hook", got[1].url)
      assert.is_true(got[1].ok)
      hooks:close()
      t:close()
    end)

    it("makes a delivery to an endpoint unregistered meanwhile a no-op", function()
      local t = testing.app(require("zever").app())
      local jobs = t.app.jobs
      local sent = 0
      local hooks = new(jobs, function() sent = sent + 1; return 200 end)
      local id = assert(hooks:register("e", "https://a.example/hook", SECRET))
      assert.are.equal(1, hooks:deliver("e", {}))
      assert.is_true(hooks:unregister(id))
      t:perform_jobs()
      assert.are.equal(0, sent)
      hooks:close()
      t:close()
    end)
  end)
end
