-- zever.health (app:health()): /healthz, and /readyz pinging each configured battery with a
-- timeout, in-process through zever.testing against real SQLite files and a real redis-server.

local testing = require "zever.testing"
local fs = require "spec.support.files"
local process = require "spec.support.process"
local serve = require "spec.support.serve"
local redis_server = require "spec.support.redis_server"

local APP = [[
local zever = require "zever"
local app = zever.app()
app:health(%s)
return app
]]

-- An app folder with zever.yaml (yaml) whose app.lua calls app:health(opts).
local function app_dir(yaml, opts)
  return fs.tmpdir({ ["app.lua"] = APP:format(opts or ""), ["zever.yaml"] = yaml })
end

describe("zever.health", function()
  local t, dir
  after_each(function()
    if t then t:close() end
    t = nil
    if dir then os.execute("rm -rf " .. process.quote(dir)) end
  end)

  it("answers /healthz without touching a battery", function()
    dir = app_dir("db:\n  dsn: sqlite:app.db\n")
    t = testing.app(dir)
    local res = t:get("/healthz")
    assert.are.equal(200, res.status)
    assert.are.same({ status = "ok" }, res:json())
    assert.are.equal("no-store", res.headers["cache-control"])
  end)

  it("answers /readyz 200 with each configured battery's status", function()
    dir = app_dir("db:\n  dsn: sqlite:app.db\ncache:\n  adapter: db\nqueue:\n  adapter: memory\n")
    t = testing.app(dir)
    local res = t:get("/readyz")
    assert.are.equal(200, res.status, res.body)
    local body = res:json()
    assert.are.equal("ok", body.status)
    local names = {}
    for name, c in pairs(body.checks) do
      names[#names + 1] = name
      assert.are.equal("ok", c.status, name)
      assert.are.equal("number", type(c.ms))
    end
    table.sort(names)
    -- mailer: zever.testing configures its capturing log mailer.
    assert.are.same({ "cache", "db", "mailer", "queue" }, names)
    assert.are.same({ "db", "sqlite", "memory" },
      { body.checks.cache.adapter, body.checks.db.adapter, body.checks.queue.adapter })
  end)

  it("answers 503 while the outbox relay is stalled, and 200 once it caught up", function()
    dir = app_dir("db:\n  dsn: sqlite:app.db\noutbox:\n  adapter: db\n")
    t = testing.app(dir)
    local res = t:get("/readyz")
    assert.are.equal(200, res.status, res.body)
    assert.are.equal("ok", res:json().checks.outbox.status)
    -- A message recorded two minutes ago that no relay delivered.
    local ob = t.app.outbox
    assert(ob:record(t.app.db, { topic = "orders", payload = { id = 1 } }))
    t.app.db:exec("UPDATE outbox_messages SET created_at = created_at - 120")
    res = t:get("/readyz")
    assert.are.equal(503, res.status, res.body)
    local c = res:json().checks.outbox
    assert.are.equal("fail", c.status)
    assert.matches("oldest pending message waits for 12%d s", c.error)
    assert.are.equal(1, ob:relay(function() return true end))
    res = t:get("/readyz")
    assert.are.equal(200, res.status, res.body)
  end)

  it("answers 503 naming the battery that fails, without its password", function()
    local port = serve.free_port()
    dir = app_dir(("cache:\n  adapter: redis\n  url: redis://:hunter2@127.0.0.1:%d/0\n"):format(port),
      "{ timeout = 1 }")
    t = testing.app(dir)
    local res = t:get("/readyz")
    assert.are.equal(503, res.status, res.body)
    local body = res:json()
    assert.are.equal("fail", body.status)
    assert.are_not.equal("ok", body.checks.cache.status)
    assert.is_nil(res.body:find("hunter2", 1, true))
  end)

  it("checks only opts.batteries when given, and serves other paths", function()
    dir = app_dir("db:\n  dsn: sqlite:app.db\ncache:\n  adapter: memory\n",
      '{ batteries = { "cache" }, live = "/live", ready = "/ready" }')
    t = testing.app(dir)
    assert.are.equal(404, t:get("/readyz").status)
    local body = t:get("/ready"):json()
    assert.are.same({ "cache" }, (function()
      local k = {}
      for name in pairs(body.checks) do k[#k + 1] = name end
      return k
    end)())
    assert.are.equal(200, t:get("/live").status)
  end)

  it("is on by configuration (http.health) without app:health() in the app", function()
    dir = fs.tmpdir({ ["app.lua"] = "local app = require('zever').app()\nreturn app\n",
      ["zever.yaml"] = "http:\n  health: true\ndb:\n  dsn: sqlite:app.db\n" })
    t = testing.app(dir)
    assert.are.equal(200, t:get("/healthz").status)
    local res = t:get("/readyz")
    assert.are.equal(200, res.status, res.body)
    assert.are.equal("ok", res:json().checks.db.status)
  end)

  it("is off by default", function()
    dir = fs.tmpdir({ ["app.lua"] = "local app = require('zever').app()\nreturn app\n" })
    t = testing.app(dir)
    assert.are.equal(404, t:get("/healthz").status)
  end)

  it("rejects bad options", function()
    local zever = require "zever"
    local app = zever.app()
    assert.has_error(function() app:health({ timeout = 0 }) end,
      "app:health: timeout must be a number of seconds > 0")
    assert.has_error(function() app:health("x") end, "app:health: opts must be a table")
  end)
end)

describe("zever.health on Redis #redis", function()
  local srv = redis_server.fixture()
  local t, dir
  after_each(function()
    os.execute("kill -CONT " .. srv.pid .. " 2>/dev/null")
    if t then t:close() end
    t = nil
    if dir then os.execute("rm -rf " .. process.quote(dir)) end
  end)

  it("pings the server, and reports a server that stops answering as a timeout (503)", function()
    dir = app_dir(("cache:\n  adapter: redis\n  url: %s\n"):format(srv.url), "{ timeout = 0.5 }")
    t = testing.app(dir)
    local res = t:get("/readyz")
    assert.are.equal(200, res.status, res.body)
    assert.are.equal("redis", res:json().checks.cache.adapter)
    -- A stopped process keeps its socket open and never answers: PING waits, the check times out.
    os.execute("kill -STOP " .. srv.pid)
    res = t:get("/readyz")
    os.execute("kill -CONT " .. srv.pid)
    assert.are.equal(503, res.status, res.body)
    assert.are.equal("timeout", res:json().checks.cache.status)
    -- It recovers once the server answers again.
    assert.is_truthy(serve.wait_for(function() return t:get("/readyz").status == 200 end, 10))
  end)
end)
