-- The permission battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.permission")("rbac (table)", function(model) return perms end[, caps])
--
-- new(model) returns a fresh zever.permission (front-end) over the adapter loaded with model
-- ({ roles = {...}, subjects = {...} }, adapters.permission.rbac's shape). caps.allow_all: the
-- adapter grants every permission of a subject (noop); rows then check that instead.

return function(name, new, caps)
  caps = caps or {}
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  local MODEL = {
    roles = {
      viewer = { permissions = { "post.read" } },
      editor = { permissions = { "post.edit" }, inherits = { "viewer" } },
      admin = { permissions = { "*" } },
    },
    subjects = { ["7"] = { "editor" } },
  }

  describe("permission conformance: " .. name, function()
    it("answers can with a boolean and a reason", function()
      local perms = new(MODEL)
      local ok, reason = perms:can({ id = 1, roles = { "viewer" } }, "read", "post")
      assert.is_true(ok)
      assert.are.equal("string", type(reason))
      ok, reason = perms:can({ id = 1, roles = { "viewer" } }, "post.edit")
      assert.are.equal(caps.allow_all and true or false, ok)
      assert.are.equal("string", type(reason))
      perms:close()
    end)

    it("denies a missing subject whatever the adapter", function()
      local perms = new(MODEL)
      local ok, reason = perms:can(nil, "post.read")
      assert.is_false(ok)
      assert.are.equal("no subject", reason)
      perms:close()
    end)

    it("gives authorize a denied error naming the permission", function()
      local perms = new(MODEL)
      assert.is_true(perms:authorize({ roles = { "admin" } }, "delete", { type = "post" }))
      if not caps.allow_all then
        local ok, err = perms:authorize({ roles = { "viewer" } }, "delete", "post")
        assert.is_nil(ok)
        assert.are.equal("denied", err.code)
        assert.are.equal("permission", err.battery)
        assert.matches("post.delete", err.message, 1, true)
      end
      perms:close()
    end)

    it("finds the roles assigned to a subject id", function()
      local perms = new(MODEL)
      assert.is_true(perms:can(7, "post.edit"))
      assert.is_true(perms:can({ id = "7" }, "post.read"))
      assert.are.equal(caps.allow_all and true or false, (perms:can(8, "post.read")))
      perms:close()
    end)

    it("raises on misuse and denies after close", function()
      local perms = new(MODEL)
      assert.has_error(function() perms:can({}, 42) end, "permission:can: action must be a non-empty string")
      assert.has_error(function() perms:can({}, "read", 5) end)
      assert.is_true(perms:close())
      local ok, reason = perms:can({ roles = { "admin" } }, "post.read")
      assert.is_false(ok)
      assert.matches("closed", reason, 1, true)
    end)
  end)
end
