-- zever.tenant: the conformance suite over the single and header resolvers, the header rules,
-- tenant ids in every log line of a request, and query-builder scoping on a real SQLite file.

local tenant = require "zever.tenant"
local zever = require "zever"
local testing = require "zever.testing"
local log = require "zever.log"
local db_m = require "zever.db"
local json = require "zever.json"
local files = require "spec.support.files"

describe("zever.tenant", function()
  require("spec.conformance.tenant")("single", function() return tenant.new{ id = "solo" } end,
    function() return {}, "solo" end)
  require("spec.conformance.tenant")("header", function() return tenant.new{ adapter = "header" } end,
    function(id) return { headers = { ["x-tenant-id"] = id } }, id end)

  local function app_with(tenants, handler)
    local app = zever.app()
    app:use(tenants:middleware())
    app:get("/x", handler or function(req) return req.tenant end)
    return app
  end

  describe("header resolver", function()
    it("answers 400 tenant_required without the header and does not run the handler", function()
      local ran = false
      local app = app_with(tenant.new{ adapter = "header" }, function() ran = true return "no" end)
      local res = testing.request(app, "GET", "/x")
      assert.are.equal(400, res.status)
      assert.are.equal("tenant_required", res:json().error)
      assert.is_false(ran)
    end)

    it("refuses ids that are not plain tokens", function()
      local app = app_with(tenant.new{ adapter = "header", header = "X-Org" })
      for _, bad in ipairs{ "a b", "../etc", ("x"):rep(65), "-lead", "a;drop", "é" } do
        local res = testing.request(app, "GET", "/x", { headers = { ["x-org"] = bad } })
        assert.are.equal(400, res.status, bad)
        assert.are.equal("invalid_tenant", res:json().error, bad)
      end
      for _, good in ipairs{ "acme", "A1", "org_7.eu-west", ("x"):rep(64) } do
        local res = testing.request(app, "GET", "/x", { headers = { ["x-org"] = good } })
        assert.are.equal(200, res.status, good)
        assert.are.equal(good, res.body)
      end
    end)
  end)

  describe("log lines", function()
    it("carry the tenant id (and the request id) in every line of the request", function()
      local d = files.tmpdir({}, "tenant")
      local path = d .. "/log.jsonl"
      local out = assert(io.open(path, "w"))
      local logger = log.new{ format = "json", out = out }
      local app = zever.app()
      app:use(require("zever.middleware.request_id")())
      app:use(tenant.new{ adapter = "header" }:middleware())
      app:get("/x", function()
        logger:info("first")
        zever.sleep(0.001)          -- the context survives a wait
        logger:info("second", { n = 2 })
        return "ok"
      end)
      local res = testing.request(app, "GET", "/x", { headers = { ["x-tenant-id"] = "acme",
        ["x-request-id"] = "req-1" } })
      assert.are.equal(200, res.status)
      logger:info("outside")
      out:close()
      local lines = {}
      for line in io.lines(path) do lines[#lines + 1] = json.decode(line) end
      assert.are.equal(3, #lines)
      assert.are.equal("acme", lines[1].tenant)
      assert.are.equal("req-1", lines[1].request_id)
      assert.are.equal("acme", lines[2].tenant)
      assert.is_nil(lines[3].tenant)
      files.rm_rf(d)
    end)
  end)

  describe("log context order", function()
    it("keeps the tenant when request_id runs inside the tenant middleware", function()
      local d = files.tmpdir({}, "tenant")
      local path = d .. "/log.jsonl"
      local out = assert(io.open(path, "w"))
      local logger = log.new{ format = "json", out = out }
      local app = zever.app()
      app:use(tenant.new{ id = "solo" }:middleware())
      app:use(require("zever.middleware.request_id")())
      app:get("/x", function() logger:info("in") return "ok" end)
      assert.are.equal(200, testing.request(app, "GET", "/x", { headers = { ["x-request-id"] = "r-9" } }).status)
      out:close()
      local line = json.decode(io.lines(path)())
      assert.are.same({ "solo", "r-9" }, { line.tenant, line.request_id })
      files.rm_rf(d)
    end)
  end)

  describe("query scoping", function()
    local db
    before_each(function()
      db = assert(db_m.open("sqlite::memory:"))
      db:exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, total INTEGER)")
      db:exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, org TEXT NOT NULL, body TEXT)")
    end)
    after_each(function() db:close() end)

    it("reads, updates and deletes only the tenant's rows", function()
      db:insert_into("orders"):values{ { total = 1 }, { total = 2 } }:for_tenant("acme"):exec()
      db:insert_into("orders"):values{ total = 3 }:for_tenant({ id = "globex" }):exec()
      assert.are.equal(2, db:from("orders"):for_tenant("acme"):count())
      assert.are.same({ 3 }, { db:from("orders"):for_tenant("globex"):first().total })
      assert.are.equal(2, db:update("orders"):set{ total = 0 }:for_tenant("acme"):exec())
      assert.are.equal(3, db:from("orders"):for_tenant("globex"):first().total)
      assert.are.equal(1, db:delete_from("orders"):for_tenant("globex"):exec())
      assert.are.equal(2, db:from("orders"):count())
      local text = db:from("orders"):where("total", ">", 0):for_tenant("acme"):to_sql()
      assert.matches('"tenant_id" = ?', text, 1, true)
    end)

    it("takes another column, and refuses a row naming another tenant or no tenant", function()
      db:insert_into("notes"):values{ body = "hi" }:for_tenant("acme", "org"):exec()
      assert.are.equal("acme", db:from("notes"):for_tenant("acme", "org"):first().org)
      assert.has_error(function()
        db:insert_into("orders"):values{ total = 1, tenant_id = "globex" }:for_tenant("acme")
      end, "for_tenant: row 1 names another tenant in 'tenant_id'")
      assert.has_error(function() db:from("orders"):for_tenant(nil) end)
      assert.has_error(function() db:insert_into("orders"):for_tenant("acme") end,
        "for_tenant: call it after values")
    end)
  end)

  describe("app.tenant", function()
    it("resolves the adapter TENANT_ADAPTER names", function()
      local d = files.tmpdir({}, "tenant")
      local config, container = require "zever.config", require "zever.container"
      local c = container.new(assert(config.load{ dir = d,
        env = { TENANT_ADAPTER = "header", TENANT_HEADER = "X-Org" } }))
      local tenants = assert(c:get("tenant"))
      assert.are.equal("o1", tenants:resolve({ header = function(_, h) return h == "x-org" and "o1" end }))
      assert.is_true(c:close())
      c = container.new(assert(config.load{ dir = d, env = {} }))
      assert.are.equal("default", assert(c:get("tenant")):resolve({}))
      assert.is_true(c:close())
      files.rm_rf(d)
    end)
  end)
end)
