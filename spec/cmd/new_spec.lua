-- zever new, end to end through the real binary: the files it writes, its refusals, and a matrix
-- of battery picks (the default, every zero-infrastructure battery, the Redis adapters on a real
-- redis-server) whose generated apps pass their own `zever test` and answer under `zever serve`.

local process = require "spec.support.process"
local serve = require "spec.support.serve"
local redis_server = require "spec.support.redis_server"
local fs = require "spec.support.files"
local json = require "zever.json"
local sys = require "zever.sys"
local scaffold = require "zever.cli.scaffold"

local quote = process.quote

-- Runs the binary in dir with env (a table) and args.
local function zever_in(dir, env, ...)
  local parts = { "cd " .. quote(dir) .. " && env" }
  for k, v in pairs(env or {}) do parts[#parts + 1] = k .. "=" .. quote(v) end
  parts[#parts + 1] = quote(sys.exe())
  for i = 1, select("#", ...) do parts[#parts + 1] = quote((select(i, ...))) end
  return process.run(table.concat(parts, " "))
end

-- A new app in a fresh folder, its `zever test`, then `zever serve` asked for /, /healthz and
-- /readyz; returns the ready body (decoded).
local function new_test_serve(root, flags, env)
  local app = root .. "/shop"
  local r = zever_in(root, env, "new", "shop", unpack(flags))
  assert.are.equal(0, r.code, r.stderr)
  local t = zever_in(app, env, "test")
  assert.are.equal(0, t.code, t.stdout .. t.stderr)
  assert.matches("3 passed, 0 failed", t.stdout)
  local srv = assert(serve.start(app, { "--listen", "127.0.0.1:0", "--workers", "1" }, env))
  local home = srv:curl("/")
  local ready = srv:curl("/readyz", "-w '\n%{http_code}'")
  srv:signal("TERM")
  assert.is_true(srv:wait_exit(10))
  local log = srv:log()
  srv:kill()
  assert.are.same({ app = "shop", message = "hello from zever" }, json.decode(home.stdout))
  local body, code = ready.stdout:match("^(.*)\n(%d+)$")
  assert.are.equal("200", code, ready.stdout)
  -- /readyz stays out of the access log, / is in it.
  assert.matches("GET / 200", log, 1, true)
  assert.is_nil(log:find("/readyz", 1, true))
  return json.decode(body)
end

describe("zever new", function()
  local root
  before_each(function() root = fs.tmpdir() end)
  after_each(function() os.execute("rm -rf " .. quote(root)) end)

  it("writes an app folder with only the picked batteries in zever.yaml", function()
    local r = zever_in(root, nil, "new", "blog", "--batteries", "cache,jobs")
    assert.are.equal(0, r.code, r.stderr)
    for _, f in ipairs({ "app.lua", "handlers/home.lua", "schema/app.zen", "spec/app_spec.lua",
      "zever.yaml", "zever.test.yaml", ".gitignore", "README.md", "migrations/.keep" }) do
      assert.is_truthy(fs.slurp(root .. "/blog/" .. f), f)
    end
    local yaml = fs.read(root .. "/blog/zever.yaml")
    -- jobs brings queue, and the queue's default adapter (db) brings db.
    local sections = {}
    for s in yaml:gmatch("\n(%w+):") do sections[#sections + 1] = s end
    assert.are.same({ "db", "cache", "queue", "jobs", "app" }, sections)
    assert.matches('name: "blog"', yaml, 1, true)
    assert.matches("next: cd", r.stdout, 1, true)
  end)

  it("prints the files and the configuration with --dry-run and writes nothing", function()
    local r = zever_in(root, nil, "new", "dry", "--dry-run", "--adapters", "cache=redis")
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("would write dry/app.lua", r.stdout, 1, true)
    assert.matches("redis:\n  url: redis://127.0.0.1:6379/0", r.stdout, 1, true)
    assert.matches("cache:\n  adapter: redis", r.stdout, 1, true)
    assert.is_nil(sys.mtime(root .. "/dry"))
  end)

  it("prints what it wrote, would write, and the batteries as JSON with --json", function()
    local r = zever_in(root, nil, "new", "shop", "--adapters", "cache=redis", "--dry-run", "--json")
    assert.are.equal(0, r.code, r.stderr)
    local plan = json.decode(r.stdout)
    assert.is_true(plan.dry_run)
    assert.are.same({ "db", "cache" }, plan.batteries)
    assert.are.same({ db = "sqlite", cache = "redis" }, plan.adapters)
    assert.matches("cache:\n  adapter: redis", plan.config, 1, true)
    assert.are.same({ action = "write", target = "shop/app.lua" }, plan.actions[3])
    assert.is_nil(sys.mtime(root .. "/shop"))
    r = zever_in(root, nil, "new", "shop", "--adapters", "cache=redis", "--json")
    assert.are.equal(0, r.code, r.stderr)
    local done = json.decode(r.stdout)
    assert.are.same({ "shop", "shop", plan.batteries, plan.adapters },
      { done.app, done.dir, done.batteries, done.adapters })
    assert.are.equal(#plan.actions, #done.files)
    for i, a in ipairs(plan.actions) do
      assert.are.equal(a.target, "shop/" .. done.files[i])
      assert.is_truthy(fs.slurp(root .. "/" .. a.target), a.target)
    end
    assert.are.equal(plan.config, fs.read(root .. "/shop/zever.yaml"))
    -- A failure is one JSON object on stderr.
    r = zever_in(root, nil, "new", "shop", "--json")
    assert.are.equal(1, r.code)
    assert.are.equal("", r.stdout)
    assert.matches("exists and is not empty", json.decode(r.stderr).error.message, 1, true)
    r = zever_in(root, nil, "new", "--list-batteries", "--json")
    assert.are.equal(0, r.code, r.stderr)
    local rows = json.decode(r.stdout)
    assert.are.equal(#scaffold.batteries(), #rows)
    assert.are.same({ name = "cache", default = "memory", adapters = { "memory", "db", "redis" },
      doc = scaffold.CATALOGUE.cache.doc }, rows[2])
  end)

  it("refuses unknown batteries and adapters with a did-you-mean (exit 2)", function()
    local rows = {
      { { "--batteries", "cahce" }, 'unknown battery "cahce"; did you mean "cache"?' },
      { { "--adapters", "cache=redsi" }, 'cache: unknown adapter "redsi"; did you mean "redis"?' },
      { { "--adapters", "cache" }, "want battery=adapter items" },
    }
    for _, row in ipairs(rows) do
      local r = zever_in(root, nil, "new", "x", unpack(row[1]))
      assert.are.equal(2, r.code, row[2])
      assert.matches(row[2], r.stderr, 1, true)
    end
    assert.is_nil(sys.mtime(root .. "/x"))
  end)

  it("refuses a folder that is not empty unless --force", function()
    fs.write(root .. "/app/notes.txt", "mine")
    local r = zever_in(root, nil, "new", "app")
    assert.are.equal(1, r.code)
    assert.matches("exists and is not empty", r.stderr, 1, true)
    assert.is_nil(fs.slurp(root .. "/app/app.lua"))
    r = zever_in(root, nil, "new", "app", "--force")
    assert.are.equal(0, r.code, r.stderr)
    assert.is_truthy(fs.slurp(root .. "/app/app.lua"))
    assert.are.equal("mine", fs.read(root .. "/app/notes.txt"))
  end)

  it("lists every battery with its adapters", function()
    local r = zever_in(root, nil, "new", "--list-batteries")
    assert.are.equal(0, r.code, r.stderr)
    for _, b in ipairs(scaffold.batteries()) do
      assert.matches("\n" .. b .. " ", r.stdout, 1, true)
    end
    assert.matches("memory,db,redis", r.stdout, 1, true)
  end)

  describe("matrix", function()
    it("default: the app passes its tests and serves, its db ready", function()
      local ready = new_test_serve(root, {})
      local names = {}
      for name in pairs(ready.checks) do names[#names + 1] = name end
      table.sort(names)
      -- db is configured; log is resolved by every served app.
      assert.are.same({ "db", "log" }, names)
      assert.are.equal("ok", ready.checks.db.status)
    end)

    it("every zero-infrastructure battery: each one is ready", function()
      local all = scaffold.batteries()
      local ready = new_test_serve(root, { "--batteries", table.concat(all, ",") })
      for _, b in ipairs(all) do
        assert.is_truthy(ready.checks[b], b)
        assert.are.equal("ok", ready.checks[b].status, b .. ": " .. tostring(ready.checks[b].error))
        assert.is_nil(scaffold.INFRA[ready.checks[b].adapter], b)
      end
    end)
  end)
end)

-- GET path on srv: status (a number), body (decoded JSON) and the response headers.
local function get(srv, path, header)
  local r = srv:curl(path, "-i" .. (header and (" -H " .. quote(header)) or ""))
  local head, body = r.stdout:match("^(.-)\r\n\r\n(.*)$")
  assert.is_truthy(head, r.stdout .. r.stderr)
  return tonumber(head:match("^HTTP/1%.1 (%d+)")), json.decode(body), head
end

-- new, then two RPCs (one left at the default auth: required, one --auth none), gen, test and
-- serve: what a new user types, in the order docs/new.md and docs/generate.md give it.
describe("zever new, generate rpc, gen, serve", function()
  local root
  before_each(function() root = fs.tmpdir() end)
  after_each(function() os.execute("rm -rf " .. quote(root)) end)

  local function scaffold_rpcs(env, ...)
    local r = zever_in(root, env, "new", "shop", ...)
    assert.are.equal(0, r.code, r.stderr)
    local app = root .. "/shop"
    r = zever_in(app, env, "generate", "entity", "Note", "by:string")
    assert.are.equal(0, r.code, r.stdout .. r.stderr)
    r = zever_in(app, env, "generate", "rpc", "Notes.Get", "id:int64", "--http", "GET /notes/{id}",
      "--returns", "Note")
    assert.are.equal(0, r.code, r.stdout .. r.stderr)
    -- The template registers the generated routes already: no "then in app.lua" hint.
    assert.is_nil(r.stdout:find("then in app.lua", 1, true))
    r = zever_in(app, env, "generate", "rpc", "Notes.Ping", "--http", "GET /ping", "--auth", "none")
    assert.are.equal(0, r.code, r.stdout .. r.stderr)
    r = zever_in(app, env, "gen")
    assert.are.equal(0, r.code, r.stdout .. r.stderr)
    local t = zever_in(app, env, "test")
    assert.are.equal(0, t.code, t.stdout .. t.stderr)
    assert.matches("3 passed, 0 failed", t.stdout)
    r = zever_in(app, env, "routes", "--json")
    assert.are.equal(0, r.code, r.stderr)
    local handlers = {}
    for _, route in ipairs(json.decode(r.stdout)) do handlers[route.name] = route.source end
    assert.matches("/handlers/notes.lua:%d+$", handlers["Notes.Get"])
    assert.matches("/handlers/notes.lua:%d+$", handlers["Notes.Ping"])
    return app
  end

  it("serves the generated routes: 401 until current_user finds a caller, then the handler", function()
    local app = scaffold_rpcs(nil)
    local srv = assert(serve.start(app, { "--listen", "127.0.0.1:0", "--workers", "1" }))
    local s1, b1 = get(srv, "/notes/7")
    local s2, b2 = get(srv, "/ping")
    srv:kill()
    assert.are.same({ 401, "unauthenticated" }, { s1, b1.error })
    assert.are.same({ 501, "unimplemented" }, { s2, b2.error })

    -- The user writes the hook and the handler, as the comments in app.lua and the stub say.
    local src = fs.read(app .. "/app.lua")
    local hook, n = src:gsub("local function current_user%(req%) %-%- luacheck: no unused args\n  return nil\n",
      'local function current_user(req)\n  return req:header("x-user") and { id = req:header("x-user") }\n')
    assert.are.equal(1, n, "app.lua of zever new no longer has the current_user hook")
    fs.write(app .. "/app.lua", hook)
    local notes, m = fs.read(app .. "/handlers/notes.lua"):gsub(
      "function M%.Get%(input, ctx%) %-%- luacheck: no unused args\n  return nil, [^\n]*\nend\n",
      "function M.Get(input, ctx)\n  return { id = input.id, by = ctx.principal.id }\nend\n")
    assert.are.equal(1, m, "the stub of Notes.Get changed shape")
    fs.write(app .. "/handlers/notes.lua", notes)
    srv = assert(serve.start(app, { "--listen", "127.0.0.1:0", "--workers", "1" }))
    local s3, b3 = get(srv, "/notes/7", "x-user: ada")
    local s4 = get(srv, "/notes/7")
    local s5, b5 = get(srv, "/notes/seven", "x-user: ada")
    srv:kill()
    assert.are.same({ 200, { id = 7, by = "ada" } }, { s3, b3 })
    assert.are.equal(401, s4)
    assert.are.same({ 400, "invalid_argument" }, { s5, b5.error })
  end)

  it("authenticates through the auth battery when zever new picked it", function()
    -- One key for the server and for the `zever run` that issues the token.
    local env = { CRYPTO_KEYS = "k1:" .. ("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY=") }
    local app = scaffold_rpcs(env, "--batteries", "auth")
    assert.matches("app.auth:rpc_options()", fs.read(app .. "/app.lua"), 1, true)
    assert.is_nil(fs.read(app .. "/app.lua"):find("current_user", 1, true))
    fs.write(app .. "/token.lua", [[
local app = require("zever.app").load("app.lua", (require("zever.config.paths").cwd()))
io.write((assert(app.auth:issue("user:1"))))
app:close()
]])
    local tok = zever_in(app, env, "run", "token.lua")
    assert.are.equal(0, tok.code, tok.stderr)
    local srv = assert(serve.start(app, { "--listen", "127.0.0.1:0", "--workers", "1" }, env))
    local s1, b1, head = get(srv, "/notes/7")
    local s2, b2 = get(srv, "/notes/7", "authorization: Bearer " .. tok.stdout)
    local s3 = get(srv, "/notes/7", "authorization: Bearer " .. tok.stdout:sub(1, -3) .. "xx")
    srv:kill()
    assert.are.same({ 401, "unauthenticated" }, { s1, b1.error })
    assert.matches('www%-authenticate: bearer realm="zever"', head:lower())
    -- Authenticated: the stub's 501.
    assert.are.same({ 501, "unimplemented" }, { s2, b2.error })
    assert.are.equal(401, s3)
  end)
end)

describe("zever new with Redis adapters #redis", function()
  local srv = redis_server.fixture()
  local root
  before_each(function() root = fs.tmpdir() end)
  after_each(function() os.execute("rm -rf " .. quote(root)) end)

  it("writes an app whose Redis batteries pass its tests and are ready", function()
    local on = { "cache", "queue", "limiter", "idempotency", "scheduler", "session" }
    local items = {}
    for i, b in ipairs(on) do items[i] = b .. "=redis" end
    local ready = new_test_serve(root, { "--batteries", "jobs", "--adapters",
      table.concat(items, ",") }, { REDIS_URL = srv.url })
    for _, b in ipairs(on) do
      assert.are.equal("redis", ready.checks[b].adapter, b)
      assert.are.equal("ok", ready.checks[b].status, b .. ": " .. tostring(ready.checks[b].error))
    end
    assert.are.equal("ok", ready.checks.jobs.status)
  end)
end)
