-- zever.permission: the conformance suite over rbac (a table, a file, the db) and noop, the
-- rbac inheritance matrix, infrastructure failures as denies, and generated .zen routes.

local permission = require "zever.permission"
local rbac = require "adapters.permission.rbac"
local noop = require "adapters.permission.noop"
local db_m = require "zever.db"
local json = require "zever.json"
local zever = require "zever"
local testing = require "zever.testing"
local files = require "spec.support.files"

-- The model of m written to a fresh SQLite file's tables, and the db.
local function db_with(m, path)
  local db = assert(db_m.open("sqlite:" .. path))
  local impl = assert(rbac.new{ db = db })      -- creates the tables
  assert(impl)
  for role, r in pairs(m.roles or {}) do
    if #(r.inherits or {}) == 0 then db:exec("INSERT INTO permission_roles VALUES (?, NULL)", role) end
    for _, p in ipairs(r.inherits or {}) do db:exec("INSERT INTO permission_roles VALUES (?, ?)", role, p) end
    for _, p in ipairs(r.permissions or {}) do db:exec("INSERT INTO permission_grants VALUES (?, ?)", role, p) end
  end
  for s, roles in pairs(m.subjects or {}) do
    for _, r in ipairs(roles) do db:exec("INSERT INTO permission_subjects VALUES (?, ?)", s, r) end
  end
  return db
end

describe("zever.permission", function()
  local dirs, dbs = {}, {}
  teardown(function()
    for _, db in ipairs(dbs) do db:close() end
    for _, d in ipairs(dirs) do files.rm_rf(d) end
  end)
  local function tmp(contents)
    local d = files.tmpdir(contents or {}, "perm")
    dirs[#dirs + 1] = d
    return d
  end

  require("spec.conformance.permission")("rbac (table)", function(m) return permission.new(m) end)
  require("spec.conformance.permission")("rbac (file)", function(m)
    local d = tmp{ ["roles.json"] = json.encode(m) }
    return permission.wrap(assert(rbac.new{ file = d .. "/roles.json" }))
  end)
  require("spec.conformance.permission")("rbac (db, sqlite)", function(m)
    local d = tmp()
    local db = db_with(m, d .. "/app.db")
    dbs[#dbs + 1] = db
    return permission.wrap(assert(rbac.new{ db = db, refresh = 0 }))
  end)
  require("spec.conformance.permission")("noop", function() return permission.wrap(noop.new()) end,
    { allow_all = true })

  describe("rbac inheritance matrix", function()
    -- guest <- member <- moderator <- admin; billing alone; auditor inherits member and billing.
    local MODEL = { roles = {
      guest = { permissions = { "post.read" } },
      member = { permissions = { "post.create", "comment.*" }, inherits = { "guest" } },
      moderator = { permissions = { "post.delete", "post.edit" }, inherits = { "member" } },
      admin = { permissions = { "*" }, inherits = { "moderator" } },
      billing = { permissions = { "invoice.read", "invoice.refund" } },
      auditor = { permissions = { "report.read" }, inherits = { "member", "billing" } },
    } }
    local PERMS = { "post.read", "post.create", "post.edit", "post.delete", "comment.create",
      "comment.delete", "invoice.read", "invoice.refund", "report.read", "user.ban" }
    -- 1 = allowed, in PERMS order.
    local MATRIX = {
      guest =     { 1, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
      member =    { 1, 1, 0, 0, 1, 1, 0, 0, 0, 0 },
      moderator = { 1, 1, 1, 1, 1, 1, 0, 0, 0, 0 },
      admin =     { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 },
      billing =   { 0, 0, 0, 0, 0, 0, 1, 1, 0, 0 },
      auditor =   { 1, 1, 0, 0, 1, 1, 1, 1, 1, 0 },
      nobody =    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
    }

    for role, row in pairs(MATRIX) do
      it("gives " .. role .. " exactly its own and inherited permissions", function()
        local perms = permission.new(MODEL)
        for i, p in ipairs(PERMS) do
          local ok, reason = perms:can({ roles = { role } }, p)
          assert.are.equal(row[i] == 1, ok, role .. " " .. p .. ": " .. reason)
        end
        perms:close()
      end)
    end

    it("names the granting role in the reason", function()
      local perms = permission.new(MODEL)
      local _, reason = perms:can({ roles = { "admin" } }, "user.ban")
      assert.are.equal("role admin grants *", reason)
      _, reason = perms:can({ roles = { "moderator" } }, "read", "post")
      assert.are.equal("role moderator grants post.read (inherited from guest)", reason)
      _, reason = perms:can({ roles = { "auditor" } }, "comment.delete")
      assert.are.equal("role auditor grants comment.* (inherited from member)", reason)
      _, reason = perms:can({ roles = { "guest", "billing" } }, "user.ban")
      assert.are.equal("no role of the subject (guest, billing) grants user.ban", reason)
      _, reason = perms:can({ id = 3 }, "user.ban")
      assert.are.equal("the subject has no role", reason)
      perms:close()
    end)

    it("refuses a cycle and an unknown parent at load", function()
      local _, err = rbac.new{ roles = { a = { inherits = { "b" } }, b = { inherits = { "a" } } } }
      assert.are.equal("invalid", err.code)
      assert.matches("an inheritance cycle: a -> b -> a", err.message, 1, true)
      _, err = rbac.new{ roles = { a = { inherits = { "ghost" } } } }
      assert.matches('role "a" inherits the unknown role "ghost"', err.message, 1, true)
      _, err = rbac.new{ roles = { a = { permission = { "x" } } } }
      assert.matches('unknown field "permission"', err.message, 1, true)
    end)
  end)

  describe("infrastructure failures", function()
    it("denies, with the reason, when the db fails", function()
      local d = tmp()
      local db = db_with({ roles = { admin = { permissions = { "*" } } },
        subjects = { ["1"] = { "admin" } } }, d .. "/app.db")
      local perms = permission.wrap(assert(rbac.new{ db = db, refresh = 0 }))
      assert.is_true(perms:can(1, "x.y"))
      db:exec("DROP TABLE permission_subjects")
      local ok, reason = perms:can(1, "x.y")
      assert.is_false(ok)
      assert.matches("denied: the permission store failed", reason, 1, true)
      assert.are.equal(1, perms:stats().errors)
      local aok, err = perms:authorize(1, "x.y")
      assert.is_nil(aok)
      assert.are.equal("denied", err.code)
      perms:close()
      db:close()
    end)

    it("denies when an adapter raises", function()
      local perms = permission.wrap({ check = function() error("boom") end })
      local ok, reason = perms:can({ id = 1 }, "a.b")
      assert.is_false(ok)
      assert.matches("boom", reason, 1, true)
    end)
  end)

  describe("generated routes", function()
    local SCHEMA = [[
entity Post { id: uuid @primary  title: string }
service PostService {
  rpc DeletePost(id: uuid) { http: DELETE "/v1/posts/{id}"  permission: "post.delete" }
  rpc EditPost(id: uuid) { http: PUT "/v1/posts/{id}"  permission: check("post.edit") }
}
]]
    it("asks app.permission for a permission: rpc (403 when denied)", function()
      local parser, resolver = require "dsl.parser", require "dsl.resolver"
      local ir = resolver.resolve({ (parser.parse(SCHEMA, "schema/app.zen")) })
      local out = assert(require("dsl.backends.routes").generate(ir))
      local d = tmp{ ["routes.lua"] = out["routes.lua"] }
      local routes = assert(loadfile(d .. "/routes.lua"))()
      local perms = permission.new{ roles = { editor = { permissions = { "post.edit" } },
        admin = { permissions = { "post.*" }, inherits = { "editor" } } } }
      local app = zever.app()
      local USERS = { ann = { id = "ann", roles = { "admin" } }, bob = { id = "bob", roles = { "editor" } } }
      routes.register(app, { PostService = {
        DeletePost = function() return { deleted = true } end,
        EditPost = function() return { edited = true } end,
      } }, { auth = function(req) return USERS[req:header("x-user") or ""] end, permission = perms })
      local id = "0b7f2a52-5d2e-4c8a-9d8e-1f6c2b3a4d5e"
      local function call(method, user)
        return testing.request(app, method, "/v1/posts/" .. id, { headers = { ["x-user"] = user } })
      end
      assert.are.equal(204, call("DELETE", "ann").status)
      local res = call("DELETE", "bob")
      assert.are.equal(403, res.status)
      assert.matches("post.delete", res:json().message, 1, true)
      assert.are.equal(204, call("PUT", "bob").status)
      assert.are.equal(401, call("PUT", "eve").status)
      assert.are.equal(2, perms:stats().allowed)
      perms:close()
    end)
  end)

  describe("app.permission", function()
    it("reads the roles file PERMISSION_FILE names and denies everything without one", function()
      local d = tmp{ ["roles.yaml"] = "roles:\n  admin:\n    permissions: [\"*\"]\nsubjects:\n  \"1\": [admin]\n" }
      local config, container = require "zever.config", require "zever.container"
      local c = container.new(assert(config.load{ dir = d, env = { PERMISSION_FILE = "roles.yaml" } }))
      local perms = assert(c:get("permission"))
      assert.is_true(perms:can(1, "anything.at_all"))
      assert.is_true(c:close())
      c = container.new(assert(config.load{ dir = d, env = {} }))
      perms = assert(c:get("permission"))
      assert.is_false(perms:can({ roles = { "admin" } }, "post.read"))
      assert.is_true(c:close())
    end)
  end)
end)
