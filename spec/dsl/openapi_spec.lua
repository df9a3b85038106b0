local parser = require "dsl.parser"
local resolver = require "dsl.resolver"
local backend = require "dsl.backends.openapi"
local golden = require "spec.dsl.golden"
local json = require "zever.json"
local process = require "spec.support.process"
local sys = require "zever.sys"

local NODE = "/usr/bin/node"
local VALIDATOR = sys.home() .. "/spec/support/openapi"

-- The IR of a fixture of dsl/testdata (its resolve errors kept: blog.zen has some on purpose).
local function fixture_ir(name)
  local file = "dsl/testdata/" .. name .. ".zen"
  local src = assert(golden.read(golden.dir .. "/" .. name .. ".zen"))
  return (resolver.resolve({ (parser.parse(src, file)) }))
end

-- A schema with what the fixtures lack: messages as inputs, optional references, list and JSON
-- query parameters, a permission, several errors on one status, every scalar.
local WIDE = [[
enum Priority { low, normal, high }
message Note { text: string @validate(min_len: 1)  tags: [string]?  at: timestamp? }
entity Item {
  id: uuid @primary
  n32: int32 @validate(gt: 0, lte: 10)
  n64: int64?
  f32: float32
  raw: bytes? @validate(max_len: 16)
  day: date
  meta: json?
  prio: Priority?
  site: string? @validate(format: url)
}
service Items {
  rpc FindItems(q: string?, prios: [Priority]?, filter: json?, note: Note?) -> Item {
    http: GET "/v1/items"  auth: none  paginated: true
  }
  rpc PutItem(id: uuid, note: Note?, prio: Priority @default(normal)) -> Item {
    http: PUT "/v1/items/{id}"
    permission: "items.write"
    errors: { not_found, failed_precondition("locked"), invalid_argument("bad note"), aborted }
  }
  rpc DropItem(id: uuid) { http: DELETE "/v1/items/{id}"  auth: required }
}
]]

local function wide_ir()
  return (resolver.resolve({ (parser.parse(WIDE, "schema/wide/app.zen")) }))
end

local function document(name)
  local ir = name == "wide" and wide_ir() or fixture_ir(name)
  return assert(backend.generate(ir))["openapi.json"]
end

-- Runs the npm validator on text; returns its output and exit code.
local function validate(text)
  local path = os.tmpname() .. ".json"
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  local r = process.run(NODE .. " " .. process.quote(VALIDATOR .. "/validate.js") .. " " .. process.quote(path))
  os.remove(path)
  return r.stdout, r.code
end

local function installed()
  return sys.isdir(VALIDATOR .. "/node_modules/@apidevtools/swagger-parser")
end

describe("dsl.backends.openapi", function()
  describe("the independent validator (@apidevtools/swagger-parser)", function()
    for _, name in ipairs({ "tasks", "blog", "wide" }) do
      if installed() then
        it("accepts the document generated for " .. name .. (name == "wide" and " (inline)" or ".zen"), function()
          local out, code = validate(document(name))
          assert.are.equal("ok\n", out)
          assert.are.equal(0, code)
        end)
      else
        pending("validating " .. name .. ".zen's document needs the npm validator: " ..
          "npm install --prefix spec/support/openapi")
      end
    end

    if installed() then
      it("rejects a document with a broken reference, so an ok means something", function()
        local text = document("tasks"):gsub('"#/components/schemas/Task"', '"#/components/schemas/Tsak"', 1)
        local out, code = validate(text)
        assert.are.equal(1, code)
        assert.is_truthy(out:find("^error: ") and out:find("Tsak", 1, true), out)
      end)
    end
  end)

  describe("generate", function()
    it("writes one openapi.json whose bytes are the same on every run", function()
      local files = assert(backend.generate(fixture_ir("tasks")))
      local n = 0
      for _ in pairs(files) do n = n + 1 end
      assert.are.equal(1, n)
      assert.are.equal(files["openapi.json"], document("tasks"))
      assert.are.equal("3.1.0", json.decode(files["openapi.json"]).openapi)
    end)

    it("keeps the top-level keys in OpenAPI's reading order", function()
      local text = document("tasks")
      local keys = {}
      for k in text:gmatch('\n  "([%w]+)":') do keys[#keys + 1] = k end
      assert.are.same({ "openapi", "info", "tags", "paths", "components" }, keys)
    end)

    it("returns nil and an error for something that is not the IR", function()
      local files, err = backend.generate({ kind = "file" })
      assert.is_nil(files)
      assert.are.equal("invalid", err.code)
    end)
  end)

  describe("paths and status codes", function()
    local rows = {
      { "tasks", "/v1/tasks", "post", { "200", "201", "400", "401", "409", "default" } },
      { "tasks", "/v1/users/{user_id}/tasks", "get", { "200", "400", "401", "default" } },
      { "blog", "/v1/v1/posts/{id}", "get", { "200", "400", "default" } },
      { "wide", "/v1/items", "get", { "200", "400", "default" } },
      { "wide", "/v1/items/{id}", "put", { "200", "400", "401", "403", "404", "409", "default" } },
      { "wide", "/v1/items/{id}", "delete", { "204", "400", "401", "default" } },
    }
    local docs = { tasks = json.decode(document("tasks")), blog = json.decode(document("blog")),
      wide = json.decode(document("wide")) }
    for _, row in ipairs(rows) do
      it(string.format("gives %s %s of %s.zen the responses %s", row[3]:upper(), row[2], row[1],
        table.concat(row[4], " ")), function()
        local op = docs[row[1]].paths[row[2]][row[3]]
        local codes = {}
        for code in pairs(op.responses) do codes[#codes + 1] = code end
        table.sort(codes)
        assert.are.same(row[4], codes)
      end)
    end

    it("lists exactly the routed rpcs (Ping has no http: and no path)", function()
      local got = {}
      for _, name in ipairs({ "tasks", "blog" }) do
        for path, item in pairs(docs[name].paths) do
          for method, op in pairs(item) do got[#got + 1] = method .. " " .. path .. " " .. op.operationId end
        end
      end
      table.sort(got)
      assert.are.same({
        "get /v1/users/{user_id}/tasks TaskService_ListTasks",
        "get /v1/v1/posts/{id} Blog_GetPost",
        "post /v1/tasks TaskService_CreateTask",
      }, got)
    end)

    it("describes the path parameter, the page parameters and the body of the tasks rpcs", function()
      local list = docs.tasks.paths["/v1/users/{user_id}/tasks"].get
      local params = {}
      for i, p in ipairs(list.parameters) do params[i] = p.name .. ":" .. p["in"] .. ":" .. tostring(p.required) end
      assert.are.same({ "user_id:path:true", "page_size:query:false", "page_token:query:false" }, params)
      assert.are.same({ "items" }, list.responses["200"].content["application/json"].schema.required)
      local create = docs.tasks.paths["/v1/tasks"].post
      local body = create.requestBody.content["application/json"].schema
      assert.are.same({ "title", "priority" }, body.required)
      assert.are.equal(false, body.additionalProperties)
      assert.are.same({ type = "string", minLength = 1 }, body.properties.title)
      assert.are.same({ { bearerAuth = {} } }, create.security)
      assert.is_nil(docs.blog.paths["/v1/v1/posts/{id}"].get.security)
      assert.are.same({ type = "http", scheme = "bearer" }, {
        type = docs.tasks.components.securitySchemes.bearerAuth.type,
        scheme = docs.tasks.components.securitySchemes.bearerAuth.scheme })
    end)

    it("writes query parameters without null: lists as name[], objects and JSON as JSON content", function()
      local params = docs.wide.paths["/v1/items"].get.parameters
      assert.are.same({ name = "q", ["in"] = "query", required = false, schema = { type = "string" } }, params[1])
      assert.are.same({ name = "prios[]", ["in"] = "query", required = false, schema = { type = "array",
        items = { ["$ref"] = "#/components/schemas/Priority" } } }, params[2])
      assert.are.same({ ["application/json"] = { schema = {} } }, params[3].content)
      assert.are.same({ ["application/json"] = { schema = { ["$ref"] = "#/components/schemas/Note" } } },
        params[4].content)
    end)

    it("shares one response between the codes of one status", function()
      local r = docs.wide.paths["/v1/items/{id}"].put.responses
      assert.are.equal("invalid_argument: the input is not valid; failed_precondition: locked; "
        .. "invalid_argument: bad note", r["400"].description)
      assert.are.equal("permission_denied: needs items.write", r["403"].description)
      assert.are.equal("aborted", r["409"].description)
      local body = docs.wide.paths["/v1/items/{id}"].put.requestBody
      assert.are.equal(false, body.required)
      assert.are.same({ ["$ref"] = "#/components/schemas/Priority", default = "normal" },
        body.content["application/json"].schema.properties.prio)
    end)

    it("describes every error of errors: in the response of its status", function()
      local r = docs.tasks.paths["/v1/tasks"].post.responses
      assert.are.equal("already_exists", r["409"].description)
      assert.is_truthy(r["400"].description:find("invalid_argument: title is taken", 1, true))
      assert.are.equal("#/components/schemas/Error", r["409"].content["application/json"].schema["$ref"])
    end)
  end)

  describe("components", function()
    local docs = { tasks = json.decode(document("tasks")), blog = json.decode(document("blog")),
      wide = json.decode(document("wide")) }
    local rows = {
      { "tasks", "Task", "id", { type = "string", format = "uuid" } },
      { "tasks", "Task", "title", { type = "string", minLength = 1, maxLength = 200 } },
      { "tasks", "Task", "done", { type = "boolean", default = false } },
      { "tasks", "Task", "due_at", { type = { "string", "null" }, format = "date-time" } },
      { "tasks", "User", "email", { type = "string", format = "email" } },
      { "blog", "Post", "id", { type = "integer", format = "int64" } },
      { "blog", "Post", "slug", { type = "string", format = "uri", maxLength = 120,
        description = "The slug is unique." } },
      { "blog", "Post", "score", { type = "number", format = "double", minimum = -10,
        exclusiveMaximum = 1000, default = -1.5 } },
      { "blog", "Post", "labels", { type = "array", items = { type = "string" } } },
      { "blog", "Post", "author", { description = "unresolved type accounts.User" } },
      { "blog", "PostSummary", "title", { type = "string", default = "untitled \u{1F4DD}\n" } },
      { "wide", "Item", "n32", { type = "integer", format = "int32", exclusiveMinimum = 0, maximum = 10 } },
      { "wide", "Item", "n64", { type = { "integer", "null" }, format = "int64" } },
      { "wide", "Item", "f32", { type = "number", format = "float" } },
      { "wide", "Item", "raw", { type = { "string", "null" }, contentEncoding = "base64",
        description = "at most 16 bytes once decoded" } },
      { "wide", "Item", "day", { type = "string", format = "date" } },
      { "wide", "Item", "meta", {} },
      { "wide", "Item", "prio", { anyOf = { { ["$ref"] = "#/components/schemas/Priority" }, { type = "null" } } } },
      { "wide", "Item", "site", { type = { "string", "null" }, format = "uri" } },
    }
    for _, row in ipairs(rows) do
      it(string.format("writes %s.%s of %s.zen as %s", row[2], row[3], row[1], json.encode(row[4])), function()
        assert.are.same(row[4], docs[row[1]].components.schemas[row[2]].properties[row[3]])
      end)
    end

    it("writes enums as string enums and lists the required columns", function()
      assert.are.same({ type = "string", enum = { "low", "normal", "high" } }, docs.tasks.components.schemas.Priority)
      assert.are.same({ "draft", "published", "archived" }, docs.blog.components.schemas.Status.enum)
      assert.are.same({ "id", "title", "done", "user_id" }, docs.tasks.components.schemas.Task.required)
      assert.are.same({ "id" }, docs.blog.components.schemas.PostSummary.required)
    end)
  end)

  describe("encode", function()
    local obj = backend.obj
    local rows = {
      { "an empty object", obj(), "{}\n" },
      { "an empty array", {}, "[]\n" },
      { "keys in the order set", obj():set("b", 1):set("a", 2), '{\n  "b": 1,\n  "a": 2\n}\n' },
      { "control characters and quotes escaped", 'a"\\\n\1', '"a\\"\\\\\\n\\u0001"\n' },
      { "UTF-8 kept as it is", "é📝", '"é📝"\n' },
      { "the shortest float that reads back", 0.1, "0.1\n" },
      { "integers without a fraction", 1e3, "1000\n" },
      { "arrays of scalars on one line", { 1, "x", true }, '[1, "x", true]\n' },
    }
    for _, row in ipairs(rows) do
      it("writes " .. row[1], function()
        assert.are.equal(row[3], backend.encode(row[2]))
      end)
    end
  end)
end)
