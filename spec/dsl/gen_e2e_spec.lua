-- zever gen end to end: dsl/testdata/tasks.zen compiled into a temporary folder, its migrations
-- run on a real SQLite file by zever.migrations, a row written and read through the generated
-- models, the validators, and the CLI (`zever gen`, then `zever migrate up`) over two schema
-- versions, a refused drop and a schema with errors.

local gen = require "dsl.gen"
local migrations = require "zever.migrations"
local process = require "spec.support.process"
local zdb = require "zever.db"
local sys = require "zever.sys"
local json = require "zever.json"
local testing = require "zever.testing"
local zever = require "zever"
local fs = require "spec.support.files"

local read, write = fs.read, fs.write

local HOME = sys.home()
local UID = "0b9e3c1e-4a57-4d2c-9a55-6c1f0f7e2a10"
local TID = "5d6f7a8b-1c2d-4e3f-8a9b-0c1d2e3f4a5b"

-- Requires <dir>/generated/models.lua as an application would (the app root on package.path).
local function load_models(dir)
  local path = package.path
  package.path = dir .. "/?.lua;" .. path
  local ok, models = pcall(require, "generated.models")
  package.path = path
  package.loaded["generated.models"] = nil
  assert(ok, models)
  return models
end

local function zever_in(dir, ...)
  local parts = { "cd " .. process.quote(dir) .. " &&", process.quote(sys.exe()) }
  for i = 1, select("#", ...) do parts[#parts + 1] = process.quote((select(i, ...))) end
  return process.run(table.concat(parts, " "))
end

describe("zever gen end to end", function()
  local dir

  before_each(function()
    dir = fs.tmpdir({ schema = true })
    write(dir .. "/schema/tasks.zen", read(HOME .. "/dsl/testdata/tasks.zen"))
  end)

  after_each(function()
    os.execute("rm -rf " .. process.quote(dir))
  end)

  it("migrates a SQLite file and writes and validates rows through the generated models", function()
    local report = assert(gen.run({ dir .. "/schema" }, { out = dir .. "/generated",
      backends = { "models", "migrations" } }))
    assert.are.same({ "migrations/0001_create_tasks_users.lua", "migrations/schema.snapshot.lua",
      "models.lua" }, report.written)

    local db = assert(zdb.open("sqlite:" .. dir .. "/app.db"))
    local applied = assert(migrations.up(db, dir .. "/generated/migrations"))
    assert.are.equal(1, #applied)
    local models = load_models(dir)
    local Task, User = models.Task, models.User

    assert.are.equal("tasks", tostring(Task))
    assert.is_true(User.validate{ id = UID, email = "ada@example.com" })
    assert(db:insert_into(User):values{ id = UID, email = "ada@example.com" }:exec())
    local row = { id = TID, title = "Write the spec", user_id = UID }
    assert.is_true(Task.validate(row))
    assert(db:insert_into(Task):values(row):exec())

    local rows = assert(db:from(Task):select(Task.c.title, Task.c.done)
      :where(Task.c.user_id, UID):all())
    assert.are.same({ { title = "Write the spec", done = 0 } }, rows)
    local joined = assert(db:from(Task):select(User.c.email)
      :join(User, User.c.id, "=", Task.c.user_id):where(Task.c.id, TID):first())
    assert.are.equal("ada@example.com", joined.email)
    local rel = Task.relations.user
    assert.are.equal(User, rel.model)
    assert.are.same({ "belongs_to", "user_id", "id" }, { rel.kind, rel.foreign_key, rel.references })

    -- Validators: each failing field gets a message; partial skips what is missing.
    local ok, errs = Task.validate{ id = TID, title = "", user_id = UID }
    assert.is_nil(ok)
    assert.are.same({ title = "must be at least 1 character long" }, errs)
    ok, errs = Task.validate{ id = "nope", title = ("x"):rep(201), done = "yes" }
    assert.is_nil(ok)
    assert.are.same({ id = "must be a UUID", title = "must be at most 200 characters long",
      done = "must be true or false", user_id = "is required" }, errs)
    assert.is_true(Task.validate({ title = "ok" }, true))
    ok, errs = User.validate{ id = UID, email = "not an email" }
    assert.is_nil(ok)
    assert.are.same({ email = "must be an email address" }, errs)

    -- What the migration declared holds in the database: unique, foreign key, cascade.
    local dup, derr = db:try(function(d)
      return d:insert_into(User):values{ id = TID, email = "ada@example.com" }:exec()
    end)
    assert.is_nil(dup)
    assert.are.equal("constraint", derr.code)
    local orphan, oerr = db:try(function(d)
      return d:insert_into(Task.table):values{ id = UID, title = "x", user_id = TID }:exec()
    end)
    assert.is_nil(orphan)
    assert.are.equal("constraint", oerr.code)
    assert(db:delete_from(User):where(User.c.id, UID):exec())
    assert.are.equal(0, db:from(Task):count())

    assert(migrations.down(db, dir .. "/generated/migrations", 1))
    assert.is_nil(db:first("SELECT name FROM sqlite_master WHERE name = 'tasks'"))
    db:close()
  end)

  it("serves the generated routes over the migrated database; the OpenAPI document validates", function()
    assert(gen.run({ dir .. "/schema" }, { out = dir .. "/generated" }))
    local db = assert(zdb.open("sqlite:" .. dir .. "/app.db"))
    assert(migrations.up(db, dir .. "/generated/migrations"))
    local models = load_models(dir)
    local Task, User = models.Task, models.User
    assert(db:insert_into(User):values{ id = UID, email = "ada@example.com" }:exec())

    -- The handlers an app author writes, over the generated models.
    local n = 0
    local handlers = { TaskService = {
      CreateTask = function(input, ctx)
        if db:from(Task):where(Task.c.title, input.title):first() then
          return nil, { code = "already_exists", message = "title is taken" }
        end
        n = n + 1
        local row = { id = ("00000000-0000-4000-8000-%012d"):format(n), title = input.title,
          user_id = ctx.principal.id }
        local ok, errs = Task.validate(row)
        assert(ok, errs)
        assert(db:insert_into(Task):values(row):exec())
        return db:from(Task):where(Task.c.id, row.id):first()
      end,
      ListTasks = function(input)
        return { items = assert(db:from(Task):where(Task.c.user_id, input.user_id)
          :order_by(Task.c.title):all()), next_page_token = "" }
      end,
    } }
    local routes = assert(loadfile(dir .. "/generated/routes.lua"))()
    local app = zever.app()
    routes.register(app, handlers, { auth = function(req)
      if req:header("authorization") == "Bearer ada" then return { id = UID } end
    end })
    local auth = { authorization = "Bearer ada" }
    local function post(body, headers)
      local res = testing.request(app, "POST", "/v1/tasks", { headers = headers or auth,
        body = json.encode(body) })
      return res.status, json.decode(res.body)
    end

    local status, body = post({ title = "Write the spec", priority = "high" }, {})
    assert.are.equal(401, status)
    assert.are.equal("unauthenticated", body.error)
    status, body = post{ title = "", priority = "urgent" }
    assert.are.equal(400, status)
    assert.are.equal("invalid_argument", body.error)
    assert.is_string(body.fields.title)
    assert.is_string(body.fields.priority)
    assert.are.equal(0, db:from(Task):count())

    status, body = post{ title = "Write the spec", priority = "high" }
    assert.are.equal(200, status)
    assert.are.equal("Write the spec", body.title)
    assert.are.equal(UID, body.user_id)
    assert.are.equal(1, db:from(Task):count())
    status, body = post{ title = "Write the spec", priority = "low" }
    assert.are.equal(409, status)
    assert.are.equal("already_exists", body.error)

    local res = testing.request(app, "GET", "/v1/users/" .. UID .. "/tasks", { headers = auth })
    assert.are.equal(200, res.status)
    local page = json.decode(res.body)
    assert.are.equal(1, #page.items)
    assert.are.equal("Write the spec", page.items[1].title)
    db:close()

    -- The OpenAPI document of the same run, checked by an independent validator from npm.
    local validator = HOME .. "/spec/support/openapi"
    if not sys.isdir(validator .. "/node_modules/@apidevtools/swagger-parser") then
      pending("the npm validator is not installed (make deps)")
      return
    end
    local r = process.run("/usr/bin/node " .. process.quote(validator .. "/validate.js") .. " "
      .. process.quote(dir .. "/generated/openapi.json"))
    assert.are.equal("ok\n", r.stdout)
    assert.are.equal(0, r.code)
  end)

  it("serves tasks.zen over a socket; live responses validate against the OpenAPI document of the same run", function()
    local validator = HOME .. "/spec/support/openapi"
    if not sys.isdir(validator .. "/node_modules/ajv") then
      pending("the npm validator is not installed (make deps)")
      return
    end
    assert(gen.run({ dir .. "/schema" }, { out = dir .. "/generated" }))
    local db = assert(zdb.open("sqlite:" .. dir .. "/app.db"))
    assert(migrations.up(db, dir .. "/generated/migrations"))
    assert(db:exec("INSERT INTO users (id, email) VALUES (?, ?)", UID, "ada@example.com"))
    -- A row as SQLite stores it: done as 1, due_at as CURRENT_TIMESTAMP writes it.
    assert(db:exec("INSERT INTO tasks (id, title, done, due_at, user_id) VALUES (?, ?, 1, ?, ?)",
      TID, "Read the RFC", "2026-12-01 14:00:03", UID))
    db:close()
    write(dir .. "/app.lua", ([[
local zever = require "zever"
local app = zever.app()
local routes = dofile(%q .. "/generated/routes.lua")
local Task = dofile(%q .. "/generated/models.lua").Task
local n = 0
routes.register(app, { TaskService = {
  CreateTask = function(input, ctx)
    n = n + 1
    local id = ("00000000-0000-4000-8000-%%012d"):format(n)
    app.db:insert_into(Task):values{ id = id, title = input.title, user_id = ctx.principal.id }:exec()
    ctx.status = 201
    return app.db:from(Task):where(Task.c.id, id):first()
  end,
  ListTasks = function(input)
    return { items = app.db:from(Task):where(Task.c.user_id, input.user_id):order_by(Task.c.title):all(),
      next_page_token = "" }
  end,
} }, { auth = function(req)
  if req:header("authorization") == "Bearer ada" then return { id = %q } end
end })
return app
]]):format(dir, dir, UID))
    local log = dir .. "/serve.log"
    -- The log appears when the background shell opens it, maybe after popen returns.
    local function read_log()
      local f = io.open(log, "rb")
      if not f then return "" end
      local text = f:read("*a")
      f:close()
      return text
    end
    local p = io.popen("cd " .. process.quote(dir) .. " && " .. process.quote(sys.exe()) ..
      " serve app.lua --listen 127.0.0.1:0 --workers 1 >" .. process.quote(log) .. " 2>&1 & echo $!")
    local pid = tonumber(p:read("*l"))
    p:close()
    local port
    for _ = 1, 500 do
      port = read_log():match("on http://127%.0%.0%.1:(%d+)")
      if port then break end
      process.sleep(0.01)
    end
    local samples = {}
    local ok, err = pcall(function()
      assert(port, "the server did not start: " .. read_log())
      -- One request with curl; its sample { method, path (the document's template), status, body }.
      local function call(method, path, template, body, token)
        local cmd = "curl -s -S --max-time 10 -o - -w '\\n%{http_code}' -X " .. method
        if token then cmd = cmd .. " -H " .. process.quote("Authorization: Bearer " .. token) end
        if body then cmd = cmd .. " -H 'Content-Type: application/json' --data-binary " .. process.quote(body) end
        local r = process.run(cmd .. " " .. process.quote("http://127.0.0.1:" .. port .. path))
        local text, status = r.stdout:match("^(.*)\n(%d+)$")
        local sample = { method = method:lower(), path = template, status = tonumber(status),
          body = text ~= "" and assert(json.decode(text)) or json.null }
        samples[#samples + 1] = sample
        return sample
      end
      local created = call("POST", "/v1/tasks", "/v1/tasks", '{"title":"Write the spec","priority":"high"}', "ada")
      assert.are.equal(201, created.status)
      assert.are.equal(false, created.body.done)
      assert.are.equal(201, call("POST", "/v1/tasks", "/v1/tasks", '{"title":"Another","priority":"low"}', "ada").status)
      assert.are.equal(400, call("POST", "/v1/tasks", "/v1/tasks", '{"title":"","priority":"urgent"}', "ada").status)
      assert.are.equal(400, call("POST", "/v1/tasks", "/v1/tasks", '[NaN]', "ada").status)
      assert.are.equal(401, call("POST", "/v1/tasks", "/v1/tasks", '{"title":"x","priority":"low"}').status)
      local list = call("GET", "/v1/users/" .. UID .. "/tasks", "/v1/users/{user_id}/tasks", nil, "ada")
      assert.are.equal(200, list.status)
      assert.are.equal(3, #list.body.items)
      local rfc
      for _, t in ipairs(list.body.items) do
        if t.id == TID then rfc = t end
      end
      assert.are.same({ id = TID, title = "Read the RFC", done = true, due_at = "2026-12-01T14:00:03Z",
        user_id = UID }, rfc)
      local empty = call("GET", "/v1/users/" .. TID .. "/tasks", "/v1/users/{user_id}/tasks", nil, "ada")
      assert.are.equal(200, empty.status)
      assert.are.equal(0, #empty.body.items)
      assert.is_true(json.is_array(empty.body.items))
    end)
    os.execute("kill -TERM " .. pid)
    for _ = 1, 500 do
      if not process.alive(pid) then break end
      process.sleep(0.01)
    end
    assert(ok, err)

    local file = dir .. "/samples.json"
    write(file, json.encode(samples))
    local r = process.run("/usr/bin/node " .. process.quote(validator .. "/check_responses.js") .. " "
      .. process.quote(dir .. "/generated/openapi.json") .. " " .. process.quote(file))
    assert.are.equal("ok\n", r.stdout, r.stderr)
    assert.are.equal(0, r.code)
  end)

  it("runs from the command line over two schema versions and refuses a drop", function()
    local r = zever_in(dir, "gen", "--backend", "models,migrations")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("", r.stdout) -- piped: quiet
    -- The migrations go to the app's migrations/ (db.migrations), which migrate up applies.
    assert.is_nil(io.open(dir .. "/generated/migrations/0001_create_tasks_users.lua"))
    assert(io.open(dir .. "/migrations/0001_create_tasks_users.lua")):close()
    r = zever_in(dir, "migrate", "up", "--dsn", "sqlite:app.db")
    assert.are.equal(0, r.code, r.stderr)

    -- Version 2: a new column and a new index.
    local src = read(dir .. "/schema/tasks.zen")
    local v2 = src:gsub("  due_at: timestamp%?\n", "%0  priority: string @default(\"normal\")\n")
      :gsub("  index%(user_id, due_at%)\n", "%0  index(priority)\n")
    write(dir .. "/schema/tasks.zen", v2)
    r = zever_in(dir, "gen", "--backend", "models,migrations")
    assert.are.equal(0, r.code, r.stderr)
    local mig = read(dir .. "/migrations/0002_add_tasks_priority_and_1_more.lua")
    assert.matches([[ALTER TABLE "tasks" ADD COLUMN "priority" TEXT NOT NULL DEFAULT 'normal']], mig, 1, true)
    assert.is_nil(mig:find("CREATE TABLE", 1, true))
    r = zever_in(dir, "migrate", "up", "--dsn", "sqlite:app.db")
    assert.are.equal(0, r.code, r.stderr)
    local db = assert(zdb.open("sqlite:" .. dir .. "/app.db"))
    assert(db:first("SELECT 1 AS x FROM pragma_index_list('tasks') WHERE name = 'tasks_priority_idx'"))
    db:close()

    -- Version 3 drops the column: refused, nothing written; with --allow-drop, a migration.
    write(dir .. "/schema/tasks.zen", src)
    r = zever_in(dir, "gen", "--backend", "models,migrations")
    assert.are.equal(1, r.code)
    assert.matches("drops the column priority of tasks: refused without --allow-drop", r.stderr, 1, true)
    assert.is_nil(io.open(dir .. "/migrations/0003_drop_index_tasks_priority_idx_and_1_more.lua"))
    r = zever_in(dir, "gen", "--backend", "models,migrations", "--allow-drop")
    assert.are.equal(0, r.code, r.stderr)
    assert(io.open(dir .. "/migrations/0003_drop_index_tasks_priority_idx_and_1_more.lua")):close()
    r = zever_in(dir, "migrate", "up", "--dsn", "sqlite:app.db")
    assert.are.equal(0, r.code, r.stderr)
  end)

  it("exits 1 with the diagnostics and writes nothing when the schema has errors", function()
    write(dir .. "/schema/tasks.zen", "entity Task {\n  id: uuid @primary\n  title: strin\n}\n")
    local r = zever_in(dir, "gen")
    assert.are.equal(1, r.code)
    assert.matches("schema/tasks.zen:3:10: [resolve] unknown type strin", r.stderr, 1, true)
    assert.is_false(sys.isdir(dir .. "/generated"))
  end)

  it("exits 2 on an unknown backend", function()
    local r = zever_in(dir, "gen", "--backend", "model")
    assert.are.equal(2, r.code)
    assert.matches('unknown backend "model" (did you mean models?)', r.stderr, 1, true)
  end)
end)
