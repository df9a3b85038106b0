local parser = require "dsl.parser"
local resolver = require "dsl.resolver"
local backend = require "dsl.backends.routes"
local zever = require "zever"
local testing = require "zever.testing"
local process = require "spec.support.process"

local request = testing.request

local SCHEMA = [[
enum Priority { low, normal, high }

entity Task {
  id: uuid @primary
  title: string
  done: bool @default(false)
}

message Note {
  text: string @validate(min_len: 1)
  tags: [string]?
}

service TaskService {
  rpc CreateTask(title: string @validate(min_len: 1, max_len: 20), priority: Priority @default(normal),
                 estimate: int32? @validate(gte: 0, lte: 100), email: string? @validate(format: email),
                 note: Note?, avatar: bytes? @validate(max_len: 3)) -> Task {
    http: POST "/v1/tasks"
    auth: required
    errors: { already_exists }
  }
  rpc GetTask(id: uuid) -> Task { http: GET "/v1/tasks/{id}"  auth: none  errors: { not_found } }
  rpc ListTasks(user_id: uuid, done: bool?, limit: int64?, tags: [Priority]?) -> Task {
    http: GET "/v1/users/{user_id}/tasks"  auth: required  paginated: true
  }
  rpc DeleteTask(id: uuid) { http: DELETE "/v1/tasks/{id}"  permission: "tasks.delete" }
  rpc Ping() { auth: none }
}
]]

local ID = "0b7f2a52-5d2e-4c8a-9d8e-1f6c2b3a4d5e"

-- The IR of src, asserting the schema has no errors.
local function compile(src, file)
  local ir, diags = resolver.resolve({ (parser.parse(src, file or "schema/app.zen")) })
  for _, d in ipairs(diags) do
    assert(d.severity == "warning", "schema error: " .. d.message)
  end
  return ir
end

local dirs = {}

-- Writes the generated files under a fresh directory (removed after the specs); returns it.
local function write(files)
  local dir = os.tmpname()
  os.remove(dir)
  dirs[#dirs + 1] = dir
  assert(os.execute("mkdir -p " .. dir .. "/handlers") == 0)
  for path, v in pairs(files) do
    local f = assert(io.open(dir .. "/" .. path, "wb"))
    f:write(type(v) == "table" and v.content or v)
    f:close()
  end
  return dir
end

local function load_routes(files)
  local dir = write(files)
  return assert(loadfile(dir .. "/routes.lua"))(), dir
end

local AUTH = { authorization = "Bearer good" }

local function auth(req)
  if req:header("authorization") == "Bearer good" then return { id = "u1", admin = true } end
  return nil
end

describe("dsl.backends.routes", function()
  local files = assert(backend.generate(compile(SCHEMA)))
  local routes, dir = load_routes(files)
  local seen = {}
  local handlers = {
    TaskService = {
      CreateTask = function(input, ctx)
        seen.create = { input = input, principal = ctx.principal }
        if input.title == "taken" then
          return nil, { code = "already_exists", message = "a task with this title exists" }
        end
        return { id = ID, title = input.title, done = false }
      end,
      GetTask = function(input)
        seen.get = input
        if input.id ~= ID then return nil, { code = "not_found", message = "no such task" } end
        return { id = ID, title = "one", done = false }
      end,
      ListTasks = function(input, ctx)
        seen.list = { input = input, page = ctx.page }
        return { items = {}, next_page_token = "" }
      end,
      DeleteTask = function(input, ctx)
        seen.delete = { input = input, principal = ctx.principal }
      end,
    },
  }
  local app = zever.app()
  routes.register(app, handlers, {
    auth = auth,
    authorize = function(principal, permission) return principal.admin and permission == "tasks.delete" end,
  })

  teardown(function()
    for _, d in ipairs(dirs) do os.execute("rm -rf " .. process.quote(d)) end
  end)

  local function create(body, headers)
    return request(app, "POST", "/v1/tasks", { headers = headers or AUTH, body = body })
  end

  describe("generate", function()
    it("writes routes.lua and a handler stub per service that is written only once", function()
      assert.are.equal("string", type(files["routes.lua"]))
      local stub = files["handlers/task_service.lua"]
      assert.are.equal(true, stub.once)
      assert.is_truthy(stub.content:find("function M.CreateTask(input, ctx)", 1, true))
      assert.is_nil(stub.content:find("function M.Ping", 1, true))
    end)

    it("produces the same bytes on every run", function()
      local again = assert(backend.generate(compile(SCHEMA)))
      assert.are.equal(files["routes.lua"], again["routes.lua"])
      assert.are.equal(files["handlers/task_service.lua"].content, again["handlers/task_service.lua"].content)
    end)

    it("writes Lua that luacheck passes", function()
      local r = process.run("luacheck --no-config --std luajit " .. process.quote(dir .. "/routes.lua") .. " "
        .. process.quote(dir .. "/handlers/task_service.lua"))
      assert.are.equal(0, r.code, r.stdout)
    end)

    it("turns each {param} into a router parameter and leaves rpcs without http out", function()
      local patterns = {}
      for _, r in ipairs(app:list_routes()) do patterns[#patterns + 1] = r.method .. " " .. r.pattern end
      table.sort(patterns)
      assert.are.same({ "DELETE /v1/tasks/:id", "GET /v1/tasks/:id", "GET /v1/users/:user_id/tasks",
        "POST /v1/tasks" }, patterns)
    end)

    it("generates a stub that answers 501 unimplemented", function()
      local stub = assert(loadfile(dir .. "/handlers/task_service.lua"))()
      local a = zever.app()
      routes.register(a, { TaskService = stub }, { auth = auth, authorize = function() return true end })
      local res = request(a, "GET", "/v1/tasks/" .. ID)
      assert.are.equal(501, res.status)
      assert.are.same({ error = "unimplemented", message = "TaskService.GetTask is not written yet" },
        res:json())
    end)
  end)

  describe("register", function()
    it("raises naming a missing handler", function()
      local ok, err = pcall(routes.register, zever.app(), { TaskService = {} }, { auth = auth })
      assert.is_false(ok)
      assert.is_truthy(err:find("no handler TaskService.CreateTask (handlers/task_service.lua)", 1, true))
    end)

    it("raises when an rpc needs auth and no auth hook is given", function()
      local ok, err = pcall(routes.register, zever.app(), handlers, {})
      assert.is_false(ok)
      assert.is_truthy(err:find("auth: required: pass opts.auth", 1, true))
    end)

    it("raises when an rpc needs a permission and no authorize hook is given", function()
      local ok, err = pcall(routes.register, zever.app(), handlers, { auth = auth })
      assert.is_false(ok)
      assert.is_truthy(err:find('needs permission "tasks.delete"', 1, true))
    end)
  end)

  describe("requests", function()
    it("passes a valid request to the handler with typed input and defaults", function()
      local res = create({ title = "write specs", estimate = 5, note = { text = "soon", tags = { "a" } },
        avatar = "AAAA" })
      assert.are.equal(200, res.status)
      assert.are.same({ id = ID, title = "write specs", done = false }, res:json())
      assert.are.same({ title = "write specs", priority = "normal", estimate = 5,
        note = { text = "soon", tags = { "a" } }, avatar = "AAAA" }, seen.create.input)
      assert.are.same({ id = "u1", admin = true }, seen.create.principal)
    end)

    it("answers 400 with a message per invalid field", function()
      local res = create({ title = "", priority = "urgent", estimate = 101, email = "nope",
        note = { tags = { 1 } } })
      assert.are.equal(400, res.status)
      assert.are.same({
        error = "invalid_argument",
        message = "the request has 6 invalid fields",
        fields = {
          title = "must be at least 1 character long",
          priority = "must be one of low, normal, high",
          estimate = "must be at most 100",
          email = "must be an email address",
          ["note.text"] = "is required",
          ["note.tags[1]"] = "must be a string",
        },
      }, res:json())
    end)

    local rows = {
      { "a missing required field", {}, { title = "is required" } },
      { "a string that is too long", { title = string.rep("é", 21) }, { title = "must be at most 20 characters long" } },
      { "a number where a string goes", { title = 7 }, { title = "must be a string" } },
      { "a fractional int32", { title = "t", estimate = 1.5 }, { estimate = "must be an integer" } },
      { "a numeric string for an int32 in JSON", { title = "t", estimate = "5" }, { estimate = "must be an integer" } },
      { "an int32 below its @validate bound", { title = "t", estimate = -1 }, { estimate = "must be at least 0" } },
      { "bytes longer than max_len once decoded", { title = "t", avatar = "AAAAAA==" },
        { avatar = "must be at most 3 bytes long" } },
      { "bytes that are not base64", { title = "t", avatar = "a b" }, { avatar = "must be base64 text" } },
      { "a nested list that is not a list", { title = "t", note = { text = "x", tags = "a" } },
        { ["note.tags"] = "must be a list" } },
      { "a message that is not an object", { title = "t", note = "x" }, { note = "must be an object (Note)" } },
      { "an unknown field, with a suggestion", { title = "t", titel = "x" },
        { titel = "is not a field of CreateTask (did you mean title?)" } },
      { "an unknown field of a nested message", { title = "t", note = { text = "x", tag = {} } },
        { ["note.tag"] = "is not a field of Note (did you mean tags?)" } },
    }
    for _, row in ipairs(rows) do
      it("rejects " .. row[1] .. " with 400", function()
        local res = create(row[2])
        assert.are.equal(400, res.status)
        assert.are.same(row[3], res:json().fields)
      end)
    end

    it("rejects a body that is not a JSON object with 400", function()
      local res = request(app, "POST", "/v1/tasks", { headers = AUTH, body = "[1, 2]" })
      assert.are.equal(400, res.status)
      assert.are.equal("the request body must be a JSON object", res:json().message)
      res = request(app, "POST", "/v1/tasks", { headers = AUTH, body = "{not json" })
      assert.are.equal(400, res.status)
    end)

    it("answers 401 unauthenticated without a principal, before validating", function()
      local res = create({ title = "" }, {})
      assert.are.equal(401, res.status)
      assert.are.same({ error = "unauthenticated", message = "authentication required" }, res:json())
      assert.are.equal(401, create({ title = "x" }, { authorization = "Bearer bad" }).status)
    end)

    it("maps the handler's already_exists to 409", function()
      local res = create({ title = "taken" })
      assert.are.equal(409, res.status)
      assert.are.same({ error = "already_exists", message = "a task with this title exists" }, res:json())
    end)

    it("maps the handler's not_found to 404 on a public rpc", function()
      local res = request(app, "GET", "/v1/tasks/" .. ID:gsub("0b7f", "ffff"))
      assert.are.equal(404, res.status)
      assert.are.same({ error = "not_found", message = "no such task" }, res:json())
      assert.are.equal(200, request(app, "GET", "/v1/tasks/" .. ID).status)
    end)

    it("answers 400 for a path parameter of the wrong type", function()
      local res = request(app, "GET", "/v1/tasks/42")
      assert.are.equal(400, res.status)
      assert.are.same({ id = "must be a UUID" }, res:json().fields)
    end)

    it("coerces query parameters of a GET and ignores unknown ones", function()
      local res = request(app, "GET", "/v1/users/" .. ID .. "/tasks?done=true&limit=7&utm_source=x",
        { headers = AUTH })
      assert.are.equal(200, res.status)
      assert.are.same({ user_id = ID, done = true, limit = 7 }, seen.list.input)
      res = request(app, "GET", "/v1/users/" .. ID .. "/tasks?done=maybe&limit=x", { headers = AUTH })
      assert.are.equal(400, res.status)
      assert.are.same({ done = "must be true or false", limit = "must be an integer" }, res:json().fields)
    end)

    it("reads a list from repeated k[]= query parameters, or one value", function()
      local base = "/v1/users/" .. ID .. "/tasks"
      assert.are.equal(200, request(app, "GET", base .. "?tags[]=low&tags[]=high", { headers = AUTH }).status)
      assert.are.same({ "low", "high" }, seen.list.input.tags)
      assert.are.equal(200, request(app, "GET", base .. "?tags=normal", { headers = AUTH }).status)
      assert.are.same({ "normal" }, seen.list.input.tags)
      local res = request(app, "GET", base .. "?tags[]=low&tags[]=urgent", { headers = AUTH })
      assert.are.same({ ["tags[2]"] = "must be one of low, normal, high" }, res:json().fields)
    end)

    it("names each route Service.Rpc for url_for", function()
      assert.are.equal("/v1/users/" .. ID .. "/tasks", app:url_for("TaskService.ListTasks", { user_id = ID }))
    end)

    it("gives paginated rpcs a page with a default size, a cap and the token", function()
      request(app, "GET", "/v1/users/" .. ID .. "/tasks", { headers = AUTH })
      assert.are.same({ size = 50 }, seen.list.page)
      request(app, "GET", "/v1/users/" .. ID .. "/tasks?page_size=5000&page_token=abc", { headers = AUTH })
      assert.are.same({ size = 1000, token = "abc" }, seen.list.page)
      local res = request(app, "GET", "/v1/users/" .. ID .. "/tasks?page_size=-1", { headers = AUTH })
      assert.are.equal(400, res.status)
      assert.are.same({ page_size = "must be at least 0" }, res:json().fields)
    end)

    it("checks a permission with the authorize hook: 403, then 204 for an rpc without output", function()
      local a = zever.app()
      routes.register(a, handlers, { auth = auth, authorize = function() return false end })
      local res = request(a, "DELETE", "/v1/tasks/" .. ID, { headers = AUTH })
      assert.are.equal(403, res.status)
      assert.are.equal("permission_denied", res:json().error)
      res = request(app, "DELETE", "/v1/tasks/" .. ID, { headers = AUTH })
      assert.are.equal(204, res.status)
      assert.are.equal("", res.body)
      assert.are.same({ id = ID }, seen.delete.input)
    end)

    it("registers on a group under its prefix and gives handlers the app", function()
      local a = zever.app()
      local got
      local h = { TaskService = setmetatable({ GetTask = function(_, ctx)
        got = ctx.app
        return { id = ID, title = "t", done = false }
      end }, { __index = handlers.TaskService }) }
      a:group("/api", function(g)
        routes.register(g, h, { auth = auth, authorize = function() return true end })
      end)
      assert.are.equal(200, request(a, "GET", "/api/v1/tasks/" .. ID).status)
      assert.are.equal(a, got)
    end)

    it("answers 500 for an error code that has no status", function()
      local a = zever.app()
      local h = { TaskService = setmetatable({
        GetTask = function() return nil, { code = "no_such_code" } end }, { __index = handlers.TaskService }) }
      routes.register(a, h, { auth = auth, authorize = function() return true end })
      local res = request(a, "GET", "/v1/tasks/" .. ID)
      assert.are.equal(500, res.status)
      assert.are.equal("unknown", res:json().error)
    end)
  end)

  describe("outputs", function()
    -- A GetTask whose handler returns row; the response of GET /v1/tasks/:id.
    local function get_with(row, status)
      local a = zever.app()
      local h = { TaskService = setmetatable({ GetTask = function(_, ctx)
        ctx.status = status
        return row
      end }, { __index = handlers.TaskService }) }
      routes.register(a, h, { auth = auth, authorize = function() return true end })
      return request(a, "GET", "/v1/tasks/" .. ID)
    end

    it("writes bool columns stored as 0/1 as false/true and drops undeclared fields", function()
      local res = get_with({ id = ID, title = "t", done = 1, secret = "x", rowid = 3 })
      assert.are.equal(200, res.status)
      assert.truthy(res.body:find('"done":true', 1, true), res.body)
      assert.is_nil(res.body:find("secret", 1, true))
      assert.are.same({ id = ID, title = "t", done = true }, res:json())
    end)

    it("fills a declared default for a missing field", function()
      assert.are.same({ id = ID, title = "t", done = false }, get_with({ id = ID, title = "t" }):json())
    end)

    it("answers 500 when the handler leaves out a required field", function()
      assert.are.equal(500, get_with({ id = ID }).status)
    end)

    it("answers with the 2xx status the handler sets in ctx.status, shaped", function()
      local res = get_with({ id = ID, title = "t", done = 0 }, 201)
      assert.are.equal(201, res.status)
      assert.are.same({ id = ID, title = "t", done = false }, res:json())
      res = get_with({ id = ID, title = "t", done = 0 }, 204)
      assert.are.equal(204, res.status)
      assert.are.equal("", res.body)
      assert.are.equal(500, get_with({ id = ID, title = "t" }, 404).status)
    end)

    it("writes an empty page as items: []", function()
      local res = request(app, "GET", "/v1/users/" .. ID .. "/tasks", { headers = AUTH })
      assert.are.equal(200, res.status)
      assert.truthy(res.body:find('"items":[]', 1, true), res.body)
    end)
  end)

  describe("required by name", function()
    it("finds the handlers beside the generated module when given none", function()
      local root = os.tmpname()
      os.remove(root)
      dirs[#dirs + 1] = root
      assert(os.execute("mkdir -p " .. root .. "/generated/handlers") == 0)
      for path, v in pairs(files) do
        local f = assert(io.open(root .. "/generated/" .. path, "wb"))
        f:write(type(v) == "table" and v.content or v)
        f:close()
      end
      local saved = package.path
      package.path = root .. "/?.lua;" .. saved
      local ok, r = pcall(require, "generated.routes")
      local a = zever.app()
      local ok2, err = pcall(function() return r.register(a, nil, { auth = auth, authorize = function() return true end }) end)
      package.path = saved
      package.loaded["generated.routes"] = nil
      package.loaded["generated.handlers.task_service"] = nil
      assert(ok, r)
      assert(ok2, err)
      -- The stub written once beside routes.lua answers 501 until it is written.
      local res = request(a, "GET", "/v1/tasks/" .. ID)
      assert.are.equal(501, res.status)
      assert.are.equal("unimplemented", res:json().error)
    end)
  end)

  describe("the tasks.zen fixture", function()
    it("serves CreateTask with its enum input", function()
      local f = assert(io.open("dsl/testdata/tasks.zen", "rb"))
      local src = f:read("*a")
      f:close()
      local r = load_routes(assert(backend.generate(compile(src, "dsl/testdata/tasks.zen"))))
      local got
      local a = zever.app()
      r.register(a, { TaskService = {
        CreateTask = function(input)
          got = input
          return { id = ID, title = input.title, done = 0, user_id = "u1" }
        end,
        ListTasks = function() return { items = {} } end,
      } }, { auth = auth })
      local res = request(a, "POST", "/v1/tasks", { headers = AUTH, body = { title = "x", priority = "high" } })
      assert.are.equal(200, res.status)
      assert.are.same({ title = "x", priority = "high" }, got)
      res = request(a, "POST", "/v1/tasks", { headers = AUTH, body = { title = "x" } })
      assert.are.same({ priority = "is required" }, res:json().fields)
    end)
  end)
end)
