-- zever.dashboard (/_zever): the JSON API in-process (who may see it, what each endpoint
-- answers, retrying a failed job), and the page in headless Chromium driven through the
-- DevTools protocol (spec/support/cdp.py): it loads, shows the failed-jobs table, a click on
-- retry puts the job back and `zever worker` runs it. Chromium comes from Debian (DEBS); when
-- it is absent the Chromium describe is skipped with the reason printed.

local testing = require "zever.testing"
local json = require "zever.json"
local fs = require "spec.support.files"
local process = require "spec.support.process"
local serve = require "spec.support.serve"

local APP = [[
local zever = require "zever"
local app = zever.app()
app:get("/hello", function() return "hello world" end)
app:get("greet", "/greet/:name", function(req) return "hi " .. req.params.name end)
app.jobs:register("flaky", function(args)
  local f = io.open(args.dir .. "/fail")
  if f then f:close() error("flaky: the fail flag is set") end
  f = assert(io.open(args.dir .. "/ran", "a"))
  f:write("ran\n")
  f:close()
end, { attempts = 1 })
app:post("/seed", function(req)
  return { id = assert(app.jobs:dispatch("flaky", { dir = req:json().dir })) }
end)
return app
]]

-- An app with a workflow whose step after the pivot fails while the flag file is there.
local WF_APP = [[
local zever = require "zever"
local app = zever.app()
app.workflow:define("ship", function(ctx, input)
  ctx:step("charge", function() return 1 end, { pivot = true })
  ctx:step("send", function()
    local f = io.open(input.dir .. "/fail")
    if f then f:close() error("send: the fail flag is set") end
    return 2
  end)
  return "sent"
end, { attempts = 1 })
app:post("/ship", function(req)
  return { id = assert(app.workflow:start("ship", { dir = req:json().dir }, "ship-1")) }
end)
return app
]]

local function exists(path)
  local f = io.open(path)
  if f then f:close() end
  return f ~= nil
end

local AUTH = { headers = { authorization = "Bearer s3cret-token" } }
local ENABLED = "dashboard:\n  enabled: true\n  token: s3cret-token\n"

-- The app fixture a describe owns: fx.open(source[, yaml]) loads source as app.lua of a fresh
-- folder (zever.yaml: yaml, or the dashboard enabled with the token of AUTH) and returns t, dir;
-- fx.close (the describe's after_each) closes the app and removes the folder.
local function fixture()
  local fx = {}
  function fx.open(source, yaml)
    fx.dir = fs.tmpdir({ ["app.lua"] = source, ["zever.yaml"] = yaml or ENABLED })
    fx.t = testing.app(fx.dir)
    return fx.t, fx.dir
  end
  function fx.close()
    if fx.t then fx.t:close() end
    if fx.dir then fs.rm_rf(fx.dir) end
    fx.t, fx.dir = nil, nil
  end
  return fx
end

describe("zever.dashboard API", function()
  local fx = fixture()
  local dir, t
  local function open(yaml)
    t, dir = fx.open(APP, yaml)
    return t
  end
  after_each(fx.close)

  it("is not routed unless dashboard.enabled is set", function()
    open("queue:\n  adapter: memory\n")
    assert.are.equal(404, t:get("/_zever").status)
    assert.are.equal(404, t:get("/_zever/api/routes").status)
  end)

  it("is not installed outside development without a token", function()
    open("dashboard:\n  enabled: true\n")            -- zever test's environment is test
    assert.are.equal(404, t:get("/_zever").status)
  end)

  it("wants the token on every call when one is set", function()
    open(ENABLED)
    assert.are.equal(401, t:get("/_zever").status)
    assert.are.equal(401, t:get("/_zever/api/routes").status)
    assert.are.equal(401, t:get("/_zever/api/routes",
      { headers = { authorization = "Bearer s3cret-tokeN" } }).status)
    local page = t:get("/_zever?token=s3cret-token")
    assert.are.equal(200, page.status)
    assert.are.equal("text/html; charset=utf-8", page.headers["content-type"])
    assert.truthy(page.body:find('var BASE = "/_zever"', 1, true))
    assert.is_nil(page.body:find("https?://"))         -- nothing from a CDN
    assert.are.equal(200, t:get("/_zever/api/routes", AUTH).status)
  end)

  it("lists the app's routes with their handlers, not its own", function()
    open(ENABLED)
    local r = t:get("/_zever/api/routes", AUTH):json().routes
    local by = {}
    for _, x in ipairs(r) do by[x.method .. " " .. x.pattern] = x end
    assert.is_not_nil(by["GET /hello"])
    assert.are.equal("greet", by["GET /greet/:name"].name)
    assert.truthy(by["GET /greet/:name"].source:match("app%.lua:%d+$"))
    for _, x in ipairs(r) do assert.is_nil(x.pattern:find("^/_zever")) end
  end)

  it("reports battery health, recent requests and the redacted configuration", function()
    open(ENABLED .. "queue:\n  adapter: memory\n")
    t:get("/hello")
    t:get("/greet/ann")
    local h = t:get("/_zever/api/health", AUTH):json()
    assert.are.equal("ok", h.status)
    local names = {}
    for _, b in ipairs(h.batteries) do names[b.battery] = b end
    assert.are.equal("memory", names.queue.adapter)
    assert.are.equal("ok", names.queue.status)
    local reqs = t:get("/_zever/api/requests", AUTH):json().requests
    assert.are.equal("/_zever/api/health", reqs[1].path)   -- newest first
    assert.are.equal("/greet/ann", reqs[2].path)
    assert.are.equal(200, reqs[3].status)
    local cfg = t:get("/_zever/api/config", AUTH)
    assert.is_nil(cfg.body:find("s3cret-token", 1, true))
    assert.are.equal("[REDACTED]", cfg:json().config.dashboard.token)
  end)

  it("lists a failed job and retries it", function()
    open(ENABLED)
    assert(io.open(dir .. "/fail", "w")):close()
    assert.are.equal(200, t:post("/seed", { json = { dir = dir } }).status)
    t:perform_jobs()
    local q = t:get("/_zever/api/queues", AUTH):json().queues
    assert.are.same({ "flaky" }, q[1].jobs)
    local failed = t:get("/_zever/api/failed", AUTH):json().failed
    assert.are.equal(1, #failed)
    assert.are.equal("flaky", failed[1].name)
    assert.truthy(failed[1].error:find("the fail flag is set", 1, true))
    os.remove(dir .. "/fail")
    local res = t:post("/_zever/api/failed/retry", { json = { id = failed[1].id },
      headers = AUTH.headers })
    assert.are.equal(200, res.status, res.body)
    assert.are.equal(1, res:json().retried)
    t:perform_jobs()
    assert.is_true(exists(dir .. "/ran"))
    assert.are.equal(0, #t:get("/_zever/api/failed", AUTH):json().failed)
    assert.are.equal(400, t:post("/_zever/api/failed/retry", { json = {},
      headers = AUTH.headers }).status)
  end)
end)

describe("zever.dashboard API: workflows", function()
  local fx = fixture()
  after_each(fx.close)

  it("lists runs, shows one, and retries a stuck run", function()
    local t, dir = fx.open(WF_APP)
    assert(io.open(dir .. "/fail", "w")):close()
    assert.are.equal(200, t:post("/ship", { json = { dir = dir } }).status)
    t:perform_jobs()
    assert.are.equal(401, t:get("/_zever/api/workflows").status)
    local list = t:get("/_zever/api/workflows", AUTH):json()
    assert.is_true(list.enabled)
    assert.are.equal(1, #list.workflows)
    assert.are.equal("ship-1", list.workflows[1].id)
    assert.are.equal("stuck", list.workflows[1].status)
    assert.truthy(list.workflows[1].error:find("the fail flag is set", 1, true))
    assert.are.equal(0, #t:get("/_zever/api/workflows?status=completed", AUTH):json().workflows)
    assert.are.equal(400, t:get("/_zever/api/workflows?limit=0", AUTH).status)
    local run = t:get("/_zever/api/workflows/ship-1", AUTH):json()
    assert.are.same({ "charge" }, run.steps)
    assert.is_true(run.committed)
    assert.are.equal(404, t:get("/_zever/api/workflows/nope", AUTH).status)
    assert.are.equal(400, t:post("/_zever/api/workflows/retry", { json = {},
      headers = AUTH.headers }).status)
    os.remove(dir .. "/fail")
    local res = t:post("/_zever/api/workflows/retry", { json = { id = "ship-1" },
      headers = AUTH.headers })
    assert.are.equal(200, res.status, res.body)
    assert.are.equal("ship-1", res:json().retried)
    t:perform_jobs()
    run = t:get("/_zever/api/workflows/ship-1", AUTH):json()
    assert.are.equal("completed", run.status)
    assert.are.same({ "charge", "send" }, run.steps)
    res = t:post("/_zever/api/workflows/retry", { json = { id = "ship-1" }, headers = AUTH.headers })
    assert.are.equal(409, res.status)
    assert.are.equal("invalid", res:json().code)
    assert.are.equal(404, t:post("/_zever/api/workflows/cancel", { json = { id = "nope" },
      headers = AUTH.headers }).status)
  end)
end)

local BREAKER_APP = [[
local zever = require "zever"
local app = zever.app()
app:get("/call", function(req, res)
  local cb = app.breaker:get("payments", { window = 2, min_calls = 2, failure_rate = 0.5 })
  local ok, err = cb:call(function() return nil, "upstream down" end)
  return res:json({ ok = ok or false, code = err and err.code or "" })
end)
return app
]]

describe("zever.dashboard API: breakers", function()
  local fx = fixture()
  after_each(fx.close)

  it("shows each circuit breaker's state and counts", function()
    local t = fx.open(BREAKER_APP)
    assert.are.same({ enabled = false, breakers = {} }, t:get("/_zever/api/breakers", AUTH):json())
    for _ = 1, 3 do assert.are.equal(200, t:get("/call").status) end
    assert.are.equal(401, t:get("/_zever/api/breakers").status)
    local b = t:get("/_zever/api/breakers", AUTH):json()
    assert.is_true(b.enabled)
    assert.are.same({ { name = "payments", state = "open", calls = 2, failures = 2, slow = 0,
      rejected = 1, opened = 1 } }, b.breakers)
  end)
end)

local CHROMIUM = process.run("command -v chromium").stdout:match("chromium") ~= nil
  and process.run("/usr/bin/python3 -c 'import websockets'").code == 0

describe("the /_zever page in headless Chromium #chromium #serve", function()
  if not CHROMIUM then
    print("dashboard_spec: chromium or python3-websockets is not installed (Debian packages " ..
      "chromium, python3-websockets): the page's browser spec is skipped")
    return
  end
  local dir, srv
  setup(function()
    dir = fs.tmpdir({ ["app.lua"] = APP, ["zever.yaml"] = "db:\n  dsn: sqlite:app.db\n" })
    srv = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "1",
      "--access-log", "off" }, { ZEVER_ENV = "development", DASHBOARD_ENABLED = "true" }))
  end)
  teardown(function()
    if srv then srv:kill() end
    if dir then os.execute("rm -rf " .. process.quote(dir)) end
  end)

  -- Runs `zever worker` on the app until until() holds, then stops it (by its PID).
  local function work(until_fn)
    local p = io.popen(("%s worker %s >%s/worker.log 2>&1 & echo $!"):format(
      process.quote(require("zever.sys").exe()), process.quote(dir), dir))
    local pid = p:read("*l")
    p:close()
    local ok = serve.wait_for(until_fn, 20)
    os.execute("kill -TERM " .. pid)
    local gone = serve.wait_for(function()
      return not process.alive(pid)
    end, 15)
    if not gone then os.execute("kill -KILL " .. pid) end
    return ok ~= nil
  end

  local function drive(steps, shot)
    local plan_path, out_path = os.tmpname(), os.tmpname()
    local f = assert(io.open(plan_path, "w"))
    f:write(json.encode({ url = ("http://127.0.0.1:%d/_zever"):format(srv.port),
      screenshot = shot or json.null, steps = steps }))
    f:close()
    local r = process.run("/usr/bin/python3 spec/support/cdp.py " .. plan_path .. " " .. out_path)
    local out = json.decode(serve.slurp(out_path))
    os.remove(plan_path)
    os.remove(out_path)
    assert.is_true(out.ok, tostring(out.error) .. r.stderr)
    return out.results
  end

  it("shows the failed-jobs table; retry puts the job back and the worker runs it", function()
    assert(io.open(dir .. "/fail", "w")):close()
    local r = srv:curl("/seed", "-X POST -H 'Content-Type: application/json' -d " ..
      process.quote(json.encode({ dir = dir })))
    assert.are.equal(0, r.code, r.stderr)
    assert.is_true(work(function()
      return srv:curl("/_zever/api/failed").stdout:find('"flaky"', 1, true)
    end), serve.slurp(dir .. "/worker.log"))
    os.remove(dir .. "/fail")
    local shot = os.tmpname() .. ".png"
    local res = drive({
      { wait = "document.body.dataset.ready === '1'" },
      { eval = "Array.from(document.querySelectorAll('#failed tbody tr')).map(tr => tr.cells[1].textContent)" },
      { eval = "document.querySelector('#failed tbody tr').cells[4].textContent" },
      { eval = "Array.from(document.querySelectorAll('#routes tbody tr')).map(tr => tr.cells[1].textContent)" },
      { eval = "document.querySelector('#health tbody').textContent" },
      { eval = "document.querySelector('#failed button.retry').click(), true" },
      { wait = "document.getElementById('failed-status').dataset.retried === '1'" },
      { wait = "document.getElementById('failed').dataset.loaded === '0'" },
    }, shot)
    assert.are.same({ "flaky" }, res[1])
    assert.truthy(res[2]:find("the fail flag is set", 1, true))
    assert.truthy(res[3][1] and table.concat(res[3], " "):find("/greet/:name", 1, true))
    assert.truthy(res[4]:find("sqlite", 1, true))
    -- The screenshot is the spec's artifact (a PNG: its signature).
    assert.are.equal("\137PNG", serve.slurp(shot):sub(1, 4))
    print("dashboard_spec: screenshot at " .. shot)
    assert.is_true(work(function() return exists(dir .. "/ran") end),
      serve.slurp(dir .. "/worker.log"))
    local after = json.decode(srv:curl("/_zever/api/failed").stdout)
    assert.are.equal(0, #after.failed)
  end)
end)
