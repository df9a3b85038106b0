-- zever.rpc, the runtime of the routes.lua and jobs.lua that `zever gen` writes, tested directly
-- with hand-written definitions (the generated modules are covered by spec/dsl/routes_spec.lua
-- and spec/dsl/jobs_backend_spec.lua).

local rpc = require "zever.rpc"
local zever = require "zever"
local testing = require "zever.testing"

local request = testing.request

local ID = "0b7f2a52-5d2e-4c8a-9d8e-1f6c2b3a4d5e"

local TYPES = {
  ["app.Color"] = { kind = "enum", name = "Color", values = { "red", "green" } },
  ["app.Note"] = { kind = "record", name = "Note", fields = {
    { name = "text", type = { kind = "string" }, validate = { min_len = 2 } },
    { name = "color", type = { kind = "ref", ref = "app.Color" }, default = "red" },
    { name = "tags", type = { kind = "list", of = { kind = "string" } }, optional = true },
  } },
}

-- Raises unless fn raises; returns the message, which must blame this file (error(msg, 2)).
local function raises(fn)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected a raise")
  assert.is_truthy(err:find("rpc_spec.lua:%d+: "), "the caller is not blamed: " .. tostring(err))
  return err
end

describe("zever.rpc", function()
  describe("ERROR_STATUS", function()
    it("maps the same codes to the same statuses as the schema compiler", function()
      assert.are.same(require("dsl.ir").ERROR_STATUS, rpc.ERROR_STATUS)
    end)
  end)

  describe("coerce", function()
    -- name, value, type, opts, expected value (or nil), expected fields (or nil)
    local rows = {
      { "keeps a string", "hi", { kind = "string" }, nil, "hi" },
      { "rejects a number for a string", 7, { kind = "string" }, nil, nil,
        { value = "must be a string" } },
      { "accepts a UUID", ID, { kind = "uuid" }, nil, ID },
      { "rejects a malformed UUID", "42", { kind = "uuid" }, nil, nil,
        { value = "must be a UUID" } },
      { "accepts an RFC 3339 timestamp with an offset", "2024-02-29T23:59:60.5+01:00",
        { kind = "timestamp" }, nil, "2024-02-29T23:59:60.5+01:00" },
      { "rejects a timestamp without a zone", "2024-01-01T10:00:00", { kind = "timestamp" }, nil,
        nil, { value = "must be an RFC 3339 timestamp (2006-01-02T15:04:05Z)" } },
      { "accepts 29 February of a leap year", "2000-02-29", { kind = "date" }, nil, "2000-02-29" },
      { "rejects 29 February of a common year", "1900-02-29", { kind = "date" }, nil, nil,
        { value = "must be a date (2006-01-02)" } },
      { "rejects bytes that are not base64", "a b", { kind = "bytes" }, nil, nil,
        { value = "must be base64 text" } },
      { "parses an int32 from text", "-12", { kind = "int32" }, { text = true }, -12 },
      { "rejects an int32 string in JSON", "5", { kind = "int32" }, nil, nil,
        { value = "must be an integer" } },
      { "rejects an int32 out of range", 2147483648, { kind = "int32" }, nil, nil,
        { value = "must be an integer from -2147483648 to 2147483647" } },
      { "reads an int64 from a JSON string, as proto3 does", "123", { kind = "int64" }, nil, 123 },
      { "rejects an int64 beyond 53 bits", 2 ^ 53, { kind = "int64" }, nil, nil,
        { value = "must be an integer of at most 53 bits (a Lua number)" } },
      { "parses a float from text", "2.5", { kind = "float64" }, { text = true }, 2.5 },
      { "rejects an infinite float", math.huge, { kind = "float32" }, nil, nil,
        { value = "must be a number" } },
      { "parses 1 as true from text", "1", { kind = "bool" }, { text = true }, true },
      { "rejects the text true in JSON", "true", { kind = "bool" }, nil, nil,
        { value = "must be true or false" } },
      { "decodes JSON text for a json value", '{"a":1}', { kind = "json" }, { text = true },
        { a = 1 } },
      { "rejects JSON text that does not parse", "{", { kind = "json" }, { text = true }, nil,
        { value = "must be JSON text" } },
      { "wraps one text value into a list", "a", { kind = "list", of = { kind = "string" } },
        { text = true }, { "a" } },
      { "names the bad element of a list", { "a", 2 }, { kind = "list", of = { kind = "string" } },
        { name = "tags" }, nil, { ["tags[2]"] = "must be a string" } },
      { "accepts an enum value", "green", { kind = "ref", ref = "app.Color" }, { types = TYPES },
        "green" },
      { "lists the values of an enum on a miss", "blue", { kind = "ref", ref = "app.Color" },
        { types = TYPES }, nil, { value = "must be one of red, green" } },
      { "fills a record's defaults", { text = "hello" }, { kind = "ref", ref = "app.Note" },
        { types = TYPES }, { text = "hello", color = "red" } },
      { "checks every field of a record with its rules", { text = "x", color = "blue", tag = 1 },
        { kind = "ref", ref = "app.Note" }, { types = TYPES, name = "note" }, nil, {
          ["note.text"] = "must be at least 2 characters long",
          ["note.color"] = "must be one of red, green",
          ["note.tag"] = "is not a field of Note (did you mean tags?)",
        } },
      { "decodes a record from JSON text", '{"text":"ok","tags":["a"]}',
        { kind = "ref", ref = "app.Note" }, { types = TYPES, text = true },
        { text = "ok", color = "red", tags = { "a" } } },
      { "rejects a list where a record goes", { 1 }, { kind = "ref", ref = "app.Note" },
        { types = TYPES }, nil, { value = "must be an object (Note)" } },
    }
    for _, row in ipairs(rows) do
      it(row[1], function()
        local v, err = rpc.coerce(row[2], row[3], row[4])
        if row[6] then
          assert.is_nil(v)
          assert.are.equal("invalid", err.code)
          assert.are.same(row[6], err.fields)
        else
          assert.is_nil(err)
          assert.are.same(row[5], v)
        end
      end)
    end

    it("accepts an int64 beyond 53 bits as the exact int64_t cdata zever.json decodes", function()
      local body = require("zever.json").decode('{"id":9007199254740993}')
      local v = assert(rpc.coerce(body.id, { kind = "int64" }))
      assert.is_true(v == 9007199254740993LL)
      assert.is_nil(rpc.coerce(body.id, { kind = "int32" }))
    end)

    it("shapes an output: booleans, RFC 3339 timestamps, declared fields only", function()
      local types = { ["a.T"] = { kind = "record", name = "T", fields = {
        { name = "done", type = { kind = "bool" } },
        { name = "at", type = { kind = "timestamp" }, optional = true },
        { name = "n", type = { kind = "int64" } },
      } } }
      local out = rpc.shape({ done = 0, at = "2026-12-01 14:00:03", n = 9007199254740993LL, extra = 1 },
        { kind = "ref", ref = "a.T" }, types)
      assert.are.equal(false, out.done)
      assert.are.equal("2026-12-01T14:00:03Z", out.at)
      assert.is_true(out.n == 9007199254740993LL)
      assert.is_nil(out.extra)
      assert.are.equal("2026-12-01T14:00:03.5+02:00",
        rpc.shape("2026-12-01T14:00:03.5+02:00", { kind = "timestamp" }))
      assert.are.equal("[]", require("zever.json").encode(rpc.shape({}, { kind = "list", of = { kind = "bool" } })))
      local ok, err = pcall(rpc.shape, { done = true, n = 1, at = "x" }, { kind = "ref", ref = "a.T" }, types)
      assert.is_false(ok)
      assert.are.equal("output value.at is not a timestamp: x", err)
    end)

    it("says the path and the message when one field fails, else how many", function()
      local _, err = rpc.coerce("x", { kind = "int32" }, { name = "age" })
      assert.are.equal("age must be an integer", err.message)
      _, err = rpc.coerce({ color = 1 }, { kind = "ref", ref = "app.Note" }, { types = TYPES })
      assert.are.equal("2 invalid fields", err.message)
    end)

    it("raises on a type that is not a descriptor or a ref missing from types", function()
      assert.is_truthy(raises(function() rpc.coerce(1, "int32") end):find("not a type descriptor"))
      assert.is_truthy(raises(function() rpc.coerce(1, { kind = "ref", ref = "app.Nope" }) end)
        :find("type app.Nope is not in types", 1, true))
      assert.is_truthy(raises(function()
        rpc.coerce({}, { kind = "ref", ref = "a.R" }, { types = { ["a.R"] = { kind = "record",
          name = "R", fields = { { name = "x", type = { kind = "ref", ref = "a.Gone" } } } } } })
      end):find("type a.Gone is not in types", 1, true))
      raises(function() rpc.coerce(1, { kind = "int32" }, "text") end)
    end)
  end)

  describe("validate", function()
    -- name, value, rules, kind, expected message (nil: passes)
    local rows = {
      { "min_len counts characters, not bytes", "éé", { min_len = 3 }, "string",
        "must be at least 3 characters long" },
      { "min_len of one says character", "", { min_len = 1 }, "string",
        "must be at least 1 character long" },
      { "max_len passes at the bound", "ééé", { max_len = 3 }, "string", nil },
      { "max_len of bytes counts decoded base64", "AAAAAA==", { max_len = 3 }, "bytes",
        "must be at most 3 bytes long" },
      { "format email", "a@b", { format = "email" }, "string", "must be an email address" },
      { "format email passes", "a@b.io", { format = "email" }, "string", nil },
      { "format url", "example.com", { format = "url" }, "string",
        "must be a URL (scheme://host...)" },
      { "format uuid", "x", { format = "uuid" }, "string", "must be a UUID" },
      { "gt", 0, { gt = 0 }, "int32", "must be greater than 0" },
      { "gte with a fraction", 0.25, { gte = 0.5 }, "float64", "must be at least 0.5" },
      { "lt", 10, { lt = 10 }, "int64", "must be less than 10" },
      { "lte", 101, { lte = 100 }, "int32", "must be at most 100" },
      { "number rules leave strings alone", "5", { gt = 10 }, "string", nil },
    }
    for _, row in ipairs(rows) do
      it("checks " .. row[1], function()
        assert.are.equal(row[5], rpc.validate(row[2], row[3], row[4]))
      end)
    end

    it("raises on rules that are not a table or an unknown format", function()
      raises(function() rpc.validate("x", nil) end)
      assert.is_truthy(raises(function() rpc.validate("x", { format = "phone" }) end)
        :find('unknown format "phone"', 1, true))
    end)
  end)

  describe("routes", function()
    local RPCS = {
      { service = "Notes", name = "Put", method = "PUT", path = "/notes/{id}", pattern = "/notes/:id",
        handlers = "notes", auth = "none", body = true, output = "Note", errors = {},
        inputs = {
          { name = "id", from = "path", type = { kind = "int64" } },
          { name = "note", from = "body", type = { kind = "ref", ref = "app.Note" } },
        } },
      { service = "Notes", name = "Find", method = "GET", path = "/notes", pattern = "/notes",
        handlers = "notes", auth = "required", paginated = true, output = "Note", errors = {},
        inputs = { { name = "q", from = "query", type = { kind = "string" }, optional = true } } },
    }

    local function serve(handlers, def, opts)
      local app = zever.app()
      local routes = rpc.routes(def or { rpcs = RPCS, types = TYPES })
      routes.register(app, handlers, opts or { auth = function(req)
        return req:header("authorization") == "ok" and "me" or nil
      end })
      return app, routes
    end

    it("exposes its tables and defaults error_status to ERROR_STATUS", function()
      local routes = rpc.routes({ rpcs = RPCS, types = TYPES })
      assert.are.equal(RPCS, routes.rpcs)
      assert.are.equal(TYPES, routes.types)
      assert.are.equal(rpc.ERROR_STATUS, routes.error_status)
    end)

    it("serves typed input from the path and the body, and the page from the query", function()
      local got = {}
      local app = serve({ Notes = {
        Put = function(input) got.put = input; return { ok = true } end,
        Find = function(input, ctx) got.find = { input, ctx.page, ctx.principal }; return {} end,
      } })
      local res = request(app, "PUT", "/notes/7", { body = { note = { text = "hello" } } })
      assert.are.equal(200, res.status)
      assert.are.same({ id = 7, note = { text = "hello", color = "red" } }, got.put)
      res = request(app, "GET", "/notes?q=x&page_size=3&page_token=t",
        { headers = { authorization = "ok" } })
      assert.are.equal(200, res.status)
      assert.are.same({ { q = "x" }, { size = 3, token = "t" }, "me" }, got.find)
    end)

    it("answers 400 with every invalid field and 401 before decoding", function()
      local app = serve({ Notes = { Put = function() return {} end, Find = function() return {} end } })
      local res = request(app, "PUT", "/notes/x", { body = { note = { text = "" }, xyzzy = 1 } })
      assert.are.equal(400, res.status)
      assert.are.same({ error = "invalid_argument", message = "the request has 3 invalid fields",
        fields = { id = "must be an integer", ["note.text"] = "must be at least 2 characters long",
          xyzzy = "is not a field of Put" } }, res:json())
      res = request(app, "GET", "/notes?page_size=x")
      assert.are.equal(401, res.status)
    end)

    it("maps an error code with def.error_status when one is given", function()
      local h = { Notes = { Put = function() return nil, { code = "teapot", message = "short" } end,
        Find = function() return {} end } }
      local app = serve(h, { rpcs = RPCS, types = TYPES, error_status = { teapot = 418 } })
      local res = request(app, "PUT", "/notes/1", { body = { note = { text = "hi" } } })
      assert.are.equal(418, res.status)
      assert.are.same({ error = "teapot", message = "short" }, res:json())
      res = request(serve(h), "PUT", "/notes/1", { body = { note = { text = "hi" } } })
      assert.are.equal(500, res.status)
      assert.are.equal("unknown", res:json().error)
    end)

    it("answers 500 internal, without its text, for an error that is not a table with a code",
      function()
        local app = serve({ Notes = { Put = function() return nil, "secret detail" end,
          Find = function() return {} end } })
        local res = request(app, "PUT", "/notes/1", { body = { note = { text = "hi" } } })
        assert.are.equal(500, res.status)
        assert.are.same({ error = "internal" }, res:json())
      end)

    it("returns the response a handler wrote itself", function()
      local app = serve({ Notes = { Find = function() return {} end,
        Put = function(_, ctx) return ctx.res:status(202):json({ queued = true }) end } })
      local res = request(app, "PUT", "/notes/1", { body = { note = { text = "hi" } } })
      assert.are.equal(202, res.status)
      assert.are.same({ queued = true }, res:json())
    end)

    it("raises on a definition it cannot serve, naming what is wrong", function()
      raises(function() rpc.routes(nil) end)
      raises(function() rpc.routes({ rpcs = RPCS }) end)
      raises(function() rpc.routes({ rpcs = RPCS, types = TYPES, error_status = 5 }) end)
      assert.is_truthy(raises(function() rpc.routes({ rpcs = { { service = "S" } }, types = {} }) end)
        :find("rpcs[1].name must be a string", 1, true))
      assert.is_truthy(raises(function() rpc.routes({ rpcs = RPCS, types = {} }) end)
        :find("Notes.Put input note: type app.Note is not in types", 1, true))
    end)

    it("raises from register on a bad app, a missing handler or a missing auth hook", function()
      local routes = rpc.routes({ rpcs = RPCS, types = TYPES })
      local ok = { Notes = { Put = function() end, Find = function() end } }
      assert.is_truthy(raises(function() routes.register({}, ok, {}) end)
        :find("app must be a zever app or group", 1, true))
      assert.is_truthy(raises(function() routes.register(zever.app(), { Notes = {} }, {}) end)
        :find("no handler Notes.Put (handlers/notes.lua)", 1, true))
      assert.is_truthy(raises(function() routes.register(zever.app(), ok, {}) end)
        :find("Notes.Find has auth: required", 1, true))
      raises(function() routes.register(zever.app(), ok, 1) end)
    end)
  end)

  describe("jobs", function()
    local JOBS = {
      { name = "Send", queue = "mail", attempts = 4, backoff = { base = "5s", cap = "1m" } },
      { name = "Sweep" },
    }
    local SCHEDULES = { { name = "Nightly", cron = "0 3 * * *", job = "Sweep", args = { all = true } } }

    it("registers every job with its policy and every schedule", function()
      local mod = rpc.jobs({ jobs = JOBS, schedules = SCHEDULES })
      assert.are.equal(JOBS, mod.jobs)
      local app = zever.app()
      local fn = function() end
      assert.are.equal(app, mod.register(app, { Send = fn, Sweep = fn }))
      local h = app.jobs:handler("Send")
      assert.are.same({ "mail", 4, 5, 60 }, { h.queue, h.attempts, h.base, h.cap })
      assert.are.equal("default", app.jobs:handler("Sweep").queue)
      assert.are.same({ { kind = "cron", spec = "0 3 * * *", job = "Sweep", args = { all = true },
        next = 3 * 3600 } }, app.scheduler:list(0))
    end)

    it("registers nothing, and resolves no battery, for a schema without jobs", function()
      -- What a new app's app.lua does before its schema has a job: app.jobs is not built.
      local mod = rpc.jobs({ jobs = {}, schedules = {} })
      local app = zever.app()
      assert.are.equal(app, mod.register(app))
      assert.is_nil(app:container():resolved("jobs"))
    end)

    it("raises on a bad definition, a bad app or a job without a handler", function()
      raises(function() rpc.jobs({ jobs = JOBS }) end)
      assert.is_truthy(raises(function() rpc.jobs({ jobs = { {} }, schedules = {} }) end)
        :find("jobs[1].name must be a string", 1, true))
      local mod = rpc.jobs({ jobs = JOBS, schedules = {} })
      raises(function() mod.register("app", {}) end)
      raises(function() mod.register(zever.app(), 5) end)
      assert.is_truthy(raises(function() mod.register(zever.app(), { Send = function() end }) end)
        :find("no handler for job Sweep (handlers/jobs.lua)", 1, true))
    end)
  end)
end)
