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
