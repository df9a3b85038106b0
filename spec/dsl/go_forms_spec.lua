-- The forms of the Go framework's grammar at run time (issue #20): the generated routes of
-- dsl/testdata/go_forms.zen check roles and the owner of a resource (a real SQLite database
-- migrated by the generated migrations), datetime is timestamp, a quoted @validate format
-- validates, and versioned module folders keep their version. The parse, resolve, fmt and
-- backend goldens of every form are the fixtures go_*.zen (parser_spec, resolver_spec,
-- format_spec, gen_spec).

local compile = require "dsl.compile"
local gen = require "dsl.gen"
local routes_backend = require "dsl.backends.routes"
local zever = require "zever"
local zdb = require "zever.db"
local testing = require "zever.testing"
local fs = require "spec.support.files"

local request = testing.request

local ID = "0b7f2a52-5d2e-4c8a-9d8e-1f6c2b3a4d5e"
local OTHER = "7c1d9e33-2b4a-4f6e-8a1b-5d3c2e1f0a9b"
local GUEST = "guest-1"

local function compiled(sources, order)
  local result = compile.compile_sources(sources, order)
  return result
end

local function ir_of(file, src)
  local result = compiled({ [file] = src }, { file })
  assert(result.errors == 0, require("dsl.diagnostics").render(result.diags, result.sources))
  return result.ir
end

describe("the Go grammar's forms at run time", function()
  local src = assert(fs.slurp("dsl/testdata/go_forms.zen"))
  local ir = ir_of("dsl/testdata/go_forms.zen", src)

  describe("generated routes", function()
    local dir = fs.tmpdir()
    local files = assert(gen.generate(ir, { backends = { "models", "migrations", "routes" } }))
    for path, v in pairs(files) do
      local full = dir .. "/" .. path
      assert(gen.mkdir_p(full:match("^(.*)/")))
      fs.write(full, type(v) == "table" and v.content or v)
    end
    local routes = assert(loadfile(dir .. "/routes.lua"))()
    local db = assert(zdb.open("sqlite::memory:"))
    for path, content in pairs(files) do
      if path:match("^migrations/%d+_.*%.lua$") then
        local m = assert(loadstring(type(content) == "table" and content.content or content))()
        db:transaction(function(tx) m.up(tx:strict_handle()) end)
      end
    end
    assert(db:exec("INSERT INTO bookings (id, guest_id, status) VALUES (?, ?, 'open')", ID, GUEST))

    local function order(id)
      return { id = id, customer_id = OTHER, priority = "low", placed_at = "2026-01-01T00:00:00Z",
        contact = "a@b.example" }
    end
    local calls = {}
    local handlers = {
      BookingService = {
        CancelBooking = function(input)
          calls[#calls + 1] = input.id
          return { id = input.id, guest_id = GUEST, status = "cancelled" }
        end,
        ArchiveBooking = function(input) return { id = input.booking_id, guest_id = GUEST, status = "open" } end,
      },
      PaymentService = {
        Charge = function(input) return order(input.order_id) end,
        Ship = function(input) return order(input.order_id) end,
      },
      StockService = {
        Reserve = function(input) return order(input.order_id) end,
        Release = function(input) return order(input.order_id) end,
      },
    }
    -- Bearer <id>:<role>,<role>
    local function auth(req)
      local h = req:header("authorization")
      local id, roles = (h or ""):match("^Bearer ([^:]+):?(.*)$")
      if not id then return nil end
      local list = {}
      for r in roles:gmatch("[^,]+") do list[#list + 1] = r end
      return { id = id, roles = list }
    end
    local app = zever.app()
    routes.register(app, handlers, { auth = auth, authorize = function() return true end, db = db })

    local function as(who) return { headers = { authorization = "Bearer " .. who } } end

    teardown(function()
      db:close()
      fs.rm_rf(dir)
    end)

    it("lets the owner cancel the booking (the owner field loaded by the path's id)", function()
      local res = request(app, "POST", "/v1/bookings/" .. ID .. "/cancel", as(GUEST))
      assert.are.equal(200, res.status, res.body)
      assert.are.equal("cancelled", res:json().status)
      assert.are.same({ ID }, calls)
    end)

    it("answers 403 to someone else and never calls the handler", function()
      local before = #calls
      local res = request(app, "POST", "/v1/bookings/" .. ID .. "/cancel", as("guest-2"))
      assert.are.equal(403, res.status)
      assert.are.equal("permission_denied", res:json().error)
      assert.are.equal(before, #calls)
    end)

    it("answers 404 for a booking that does not exist", function()
      local res = request(app, "POST", "/v1/bookings/" .. OTHER .. "/cancel", as(GUEST))
      assert.are.equal(404, res.status)
      assert.are.equal("not_found", res:json().error)
    end)

    it("still asks the authorize hook for the permission", function()
      local a = zever.app()
      local asked
      routes.register(a, handlers, { auth = auth, db = db,
        authorize = function(_, permission) asked = permission return false end })
      local res = request(a, "POST", "/v1/bookings/" .. ID .. "/cancel", as(GUEST))
      assert.are.equal(403, res.status)
      assert.are.equal("booking.cancel", asked)
    end)

    it("checks auth: required(roles: {...}) against principal.roles", function()
      local res = request(app, "POST", "/v1/payments/charge", { headers = as("u1:billing").headers,
        body = { order_id = ID } })
      assert.are.equal(200, res.status, res.body)
      res = request(app, "POST", "/v1/payments/charge", { headers = as("u1:viewer").headers,
        body = { order_id = ID } })
      assert.are.equal(403, res.status)
      assert.matches("admin, billing", res:json().message, 1, true)
      res = request(app, "POST", "/v1/payments/charge", { body = { order_id = ID } })
      assert.are.equal(401, res.status)
    end)

    it("refuses to register an owner check without opts.db", function()
      assert.has_error(function()
        routes.register(zever.app(), handlers, { auth = auth, authorize = function() return true end })
      end, "routes.register: BookingService.CancelBooking checks the owner of bookings: pass opts.db")
    end)

    it("exposes the saga for zever.saga, which runs it on a workflow with the same handlers", function()
      local saga = require "zever.saga"
      local def = routes.sagas.PlaceOrder
      assert.are.same({ "reserve", "charge", "ship" }, { def.steps[1].name, def.steps[2].name,
        def.steps[3].name })
      local t = testing.app(zever.app())
      local wf = require("zever.workflow").new{ jobs = t.app.jobs, db = db }
      saga.define(wf, def, handlers)
      local id = assert(wf:start("PlaceOrder", { order_id = ID }))
      t:perform_jobs()
      assert.are.equal("completed", wf:query(id, "status"))
      assert.are.equal(3, #saga.status(wf, id).steps)
      wf:close()
      t:close()
    end)

    it("creates the @schema entity's table with its prefix and the inline enum's column", function()
      local rows = assert(db:query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?",
        "billing_orders"))
      assert.are.equal(1, #rows)
      assert(db:exec("INSERT INTO billing_orders (id, customer_id, priority, placed_at, contact) " ..
        "VALUES (?, ?, 'high', '2026-01-01T00:00:00Z', 'a@b.example')", ID, OTHER))
    end)
  end)

  describe("the IR", function()
    local function entity(name)
      for _, e in ipairs(ir.entities) do
        if e.name == name then return e end
      end
    end
    local function column(e, name)
      for _, c in ipairs(e.columns) do
        if c.name == name then return c end
      end
    end

    it("reads datetime as timestamp", function()
      local c = column(entity("Order"), "placed_at")
      assert.are.equal("timestamp", c.type)
      assert.are.equal("timestamp", c.sql)
    end)

    it("reads a quoted and a bare @validate format alike", function()
      assert.are.same({ format = "email" }, column(entity("Order"), "contact").validate)
      assert.are.same({ format = "url" }, column(entity("Order"), "site").validate)
    end)

    it("validates the quoted format in the generated model", function()
      local files = assert(routes_backend.generate(ir))
      assert.is_string(files["routes.lua"])
      local model = require "zever.model"
      local m = model.new({ name = "X", table = "xs", primary_key = { "id" }, columns = {
        { name = "id", type = "uuid", kind = "uuid", primary = true },
        { name = "contact", type = "string", kind = "string", validate = column(entity("Order"),
          "contact").validate },
      } })
      local ok, errs = m.validate({ id = ID, contact = "not an email" })
      assert.is_nil(ok)
      assert.is_string(errs.contact)
      assert.is_true(m.validate({ id = ID, contact = "a@b.example" }))
    end)

    it("gives an inline enum a named enum of its own, used by the column", function()
      local c = column(entity("Order"), "priority")
      assert.are.equal("testdata.OrderPriority", c.ref)
      local found
      for _, e in ipairs(ir.enums) do
        if e.name == "OrderPriority" then found = e end
      end
      assert.is_true(found.inline)
      assert.are.same({ "low", "normal", "high" }, { found.values[1].name, found.values[2].name,
        found.values[3].name })
    end)
  end)

  describe("modules", function()
    local SVC = [[
entity Account { id: uuid @primary }
service AccountService {
  rpc Get(id: uuid) -> Account { http: GET "/v1/accounts/{id}"  auth: required }
  rpc Old(id: uuid) -> Account { http: GET "/accounts/{id}"  auth: required }
}
]]

    it("keeps the version of a versioned folder and warns on paths outside it", function()
      local r = compiled({ ["schema/v1/iam/iam.zen"] = SVC }, { "schema/v1/iam/iam.zen" })
      assert.are.equal(0, r.errors)
      assert.are.same({ "iam" }, r.ir.modules)
      assert.are.same({ iam = "v1" }, r.ir.versions)
      local warnings = {}
      for _, d in ipairs(r.diags) do warnings[#warnings + 1] = d.line .. ": " .. d.message end
      assert.are.same({ "4: the path /accounts/{id} of module iam (folder v1/) does not start with /v1/" },
        warnings)
    end)

    it("names modules as the Go compiler does: the first folder under schema/, or public", function()
      local C = require "dsl.resolve.common"
      local rows = {
        { "schema/app.zen", "public" },
        { "schema/app/a.zen", "app" },
        { "schema/billing/invoices/x.zen", "billing" },
        { "schema/v1/iam/u.zen", "iam", "v1" },
        { "schema/v1/iam/sub/x.zen", "iam", "v1" },
        { "/srv/app/schema/accounts/a.zen", "accounts" },
        { "dsl/testdata/t.zen", "testdata" },
      }
      for _, row in ipairs(rows) do
        assert.are.same({ row[2], row[3] }, { C.module_of(row[1]) }, row[1])
      end
      local r = compiled({ ["schema/a.zen"] = "entity A { id: uuid @primary }\n",
        ["schema/b/b.zen"] = "entity B { id: uuid @primary  belongs_to a: public.A }\n" },
        { "schema/a.zen", "schema/b/b.zen" })
      assert.are.equal(0, r.errors, require("dsl.diagnostics").render(r.diags, r.sources))
      assert.are.same({ "b", "public" }, r.ir.modules)
    end)

    it("gives no version and no warning to an unversioned folder", function()
      local r = compiled({ ["schema/iam/iam.zen"] = SVC }, { "schema/iam/iam.zen" })
      assert.are.equal(0, r.errors)
      assert.are.equal(0, r.warnings)
      assert.is_nil(r.ir.versions)
    end)
  end)
end)
