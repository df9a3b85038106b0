-- The tenant battery's conformance suite: every resolver runs it.
--
--   require("spec.conformance.tenant")("header", new, request_for)
--
-- new() returns a fresh zever.tenant (front-end) over the adapter; request_for(id) a request
-- (testing.request's options: { headers = ... }) the adapter resolves to id, and the id it
-- resolves to (the single adapter ignores what it is asked for).

local zever = require "zever"
local testing = require "zever.testing"

return function(name, new, request_for)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  describe("tenant conformance: " .. name, function()
    it("resolves a request to a tenant id string", function()
      local tenants = new()
      local opts, want = request_for("acme")
      local app = zever.app()
      local got
      app:get("/x", function(req) got = { tenants:resolve(req) } return "ok" end)
      assert.are.equal(200, testing.request(app, "GET", "/x", opts).status)
      assert.are.equal(want, got[1])
      assert.are.equal("string", type(got[1]))
      tenants:close()
    end)

    it("sets req.tenant through the middleware before the handler runs", function()
      local tenants = new()
      local opts, want = request_for("t-42")
      local app = zever.app()
      app:use(tenants:middleware())
      app:get("/x", function(req) return { tenant = req.tenant } end)
      local res = testing.request(app, "GET", "/x", opts)
      assert.are.equal(200, res.status)
      assert.are.same({ tenant = want }, res:json())
      tenants:close()
    end)

    it("raises on a request that is not a table and answers closed after close", function()
      local tenants = new()
      assert.has_error(function() tenants:resolve("x") end, "tenant:resolve: expects a request")
      assert.is_true(tenants:close())
      local id, err = tenants:resolve({ header = function() end })
      assert.is_nil(id)
      assert.are.equal("closed", err.code)
    end)
  end)
end
