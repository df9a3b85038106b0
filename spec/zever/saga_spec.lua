-- zever.saga: the .zen sagas on zever.workflow. In process (the memory store, jobs performed by
-- a testing app): each step's handler runs once and its result is recorded; a failure at or
-- before the pivot compensates the finished steps in reverse order at once; after the pivot the
-- failing step is retried forward, the run ends stuck (never compensated) and saga.retry
-- resumes it; the routes.sagas table the routes backend generates runs as it is. Real
-- processes on a SQLite file: `zever worker` killed (SIGKILL) inside a step after its effect,
-- a second worker finishing the saga with each effect once (idempotency keys), and
-- `zever saga status|retry`.

local zever = require "zever"
local testing = require "zever.testing"
local workflow = require "zever.workflow"
local saga = require "zever.saga"
local zdb = require "zever.db"
local json = require "zever.json"
local sys = require "zever.sys"
local sched = require "zever.sched"
local process = require "spec.support.process"
local fs = require "spec.support.files"

local quote = process.quote

local DEF = { name = "PlaceOrder", steps = {
  { name = "reserve", execute = { service = "Stock", rpc = "Reserve" },
    compensate = { service = "Stock", rpc = "Release" } },
  { name = "hold", execute = { service = "Pay", rpc = "Hold" },
    compensate = { service = "Pay", rpc = "Unhold" } },
  { name = "charge", execute = { service = "Pay", rpc = "Charge" }, pivot = true },
  { name = "ship", execute = { service = "Ship", rpc = "Ship" } },
} }

describe("zever.saga on zever.workflow", function()
  local t, wf, calls, fail, keys

  -- Handlers that log every call and fail where fail[rpc] says (a count of failures left).
  local function handler(name)
    return function(input, ctx)
      calls[#calls + 1] = name
      keys[#keys + 1] = ctx.idempotency_key
      assert.equals(ctx.phase == "execute" and ctx.saga_id .. "/" .. ctx.step or
        ctx.saga_id .. "/compensate:" .. ctx.step, ctx.idempotency_key)
      local left = fail[name]
      if left and left > 0 then
        fail[name] = left - 1
        return nil, { code = "unavailable", message = name .. " is down" }
      end
      return { by = name, order = input.order }
    end
  end
  local handlers = {
    Stock = { Reserve = handler("Reserve"), Release = handler("Release") },
    Pay = { Hold = handler("Hold"), Unhold = handler("Unhold"), Charge = handler("Charge") },
    Ship = { Ship = handler("Ship") },
  }

  before_each(function()
    t = testing.app(zever.app())
    wf = workflow.new{ jobs = t.app.jobs }
    calls, fail, keys = {}, {}, {}
  end)

  after_each(function()
    wf:close()
    t:close()
  end)

  local function until_status(id, status)
    assert(sched.wait_until(function()
      t:perform_jobs()
      return wf:query(id, "status") == status
    end, 10), "the saga is " .. tostring(wf:query(id, "status")))
  end

  it("runs every step once as one workflow run and records each result", function()
    saga.define(wf, DEF, handlers)
    local id = assert(wf:start("PlaceOrder", { order = 7 }, "s1"))
    t:perform_jobs()
    assert.equals("completed", wf:query(id, "status"))
    assert.same({ "Reserve", "Hold", "Charge", "Ship" }, calls)
    assert.same({ "s1/reserve", "s1/hold", "s1/charge", "s1/ship" }, keys)
    assert.same({ by = "Ship", order = 7 }, wf:query(id, "output").ship)
    local st = saga.status(wf, id)
    assert.equals(4, #st.steps)
    assert.same({ step = "charge", phase = "execute", status = "done" }, st.steps[3])
    assert.equals("ended", workflow.execute(wf, id)) -- a duplicate job runs nothing again
    assert.equals(4, #calls)
  end)

  it("compensates the finished steps in reverse order at once when the pivot fails", function()
    fail.Charge = 1
    saga.define(wf, DEF, handlers, { attempts = 5, base = 0 })
    local id = assert(wf:start("PlaceOrder", { order = 1 }, "s2"))
    t:perform_jobs()
    assert.equals("failed", wf:query(id, "status"))
    assert.same({ "Reserve", "Hold", "Charge", "Unhold", "Release" }, calls)
    assert.same({ "s2/compensate:hold", "s2/compensate:reserve" }, { keys[4], keys[5] })
    local st = saga.status(wf, id)
    assert.equals("charge: unavailable: Charge is down", st.error)
    assert.equals(1, st.attempts)
    assert.same({ step = "hold", phase = "compensate", status = "done" }, st.steps[3])
    assert.same({ step = "reserve", phase = "compensate", status = "done" }, st.steps[4])
  end)

  it("rolls forward after the pivot with retries, then is stuck until saga.retry", function()
    fail.Ship = 5
    saga.define(wf, DEF, handlers, { attempts = 3, base = 0 })
    local id = assert(wf:start("PlaceOrder", { order = 2 }, "s3"))
    until_status(id, "stuck")
    assert.same({ "Reserve", "Hold", "Charge", "Ship", "Ship", "Ship" }, calls)
    local st = saga.status(wf, id)
    assert.is_true(st.committed)
    assert.equals("ship: unavailable: Ship is down", st.error)
    local ok, err = saga.retry(wf, assert(wf:start("PlaceOrder", {}, "fresh")))
    assert.is_nil(ok)
    assert.matches("is pending, not stuck", err.message, 1, true)
    fail.Ship = 0
    assert.is_true(saga.retry(wf, id))
    until_status(id, "completed")
    local ships = 0
    for _, c in ipairs(calls) do if c == "Ship" then ships = ships + 1 end end
    assert.equals(4 + 1, ships) -- 3 failed tries and the retried one for s3; 1 for "fresh"
    for _, c in ipairs(calls) do assert.is_not.equals("Release", c) end
  end)

  it("runs the routes.sagas table the routes backend generates", function()
    local routes = assert(loadfile("dsl/testdata/gen/go_forms/routes/routes.lua"))()
    local order = {}
    local function h(name) return function() order[#order + 1] = name; return name end end
    saga.register(wf, routes.sagas, { StockService = { Reserve = h("Reserve"), Release = h("Release") },
      PaymentService = { Charge = h("Charge"), Ship = h("Ship") } })
    local id = assert(wf:start("PlaceOrder", {}))
    t:perform_jobs()
    assert.equals("completed", wf:query(id, "status"))
    assert.same({ "Reserve", "Charge", "Ship" }, order)
  end)

  it("refuses a saga whose handlers are missing, and the first runtime's calls", function()
    assert.has_error(function() saga.define(wf, DEF, { Stock = {} }) end,
      "saga.define: PlaceOrder.reserve: no handler Stock.Reserve")
    assert.has_error(function() saga.define({}, DEF, handlers) end)
    local ok, err = pcall(saga.run, {}, DEF, handlers, "x")
    assert.is_false(ok)
    assert.matches("zever.saga.run(db, ...) is gone", err, 1, true)
    assert.matches("saga.define(app.workflow", err, 1, true)
  end)
end)

local APP = [[
local zever = require "zever"
local saga = require "zever.saga"
local sys = require "zever.sys"
local app = zever.app()
local DEF = require("zever.json").decode(os.getenv("SAGA_DEF"))
local function step(name)
  return function(_, ctx)
    app.db:exec("INSERT INTO runs (step) VALUES (?)", name)
    -- the effect, keyed: a second run with the same key changes nothing
    app.db:exec("INSERT INTO effects (key, step) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
      ctx.idempotency_key, name)
    if name == os.getenv("KILL_IN") then os.execute("kill -9 " .. sys.getpid()) end
    if name == "Ship" and os.getenv("SHIP_DOWN") then return nil, { code = "unavailable", message = "no truck" } end
    return { ok = name }
  end
end
saga.define(app.workflow, DEF, {
  Stock = { Reserve = step("Reserve"), Release = step("Release") },
  Pay = { Hold = step("Hold"), Unhold = step("Unhold"), Charge = step("Charge") },
  Ship = { Ship = step("Ship") } }, { attempts = 2, base = 0 })
return app
]]

describe("zever.saga in zever worker", function()
  local dir, path, db, pids = nil, nil, nil, {}

  local function env(extra)
    return "DB_DSN=" .. quote("sqlite:" .. path) .. " QUEUE_ADAPTER=db WORKFLOW_ADAPTER=db " ..
      "QUEUE_VISIBILITY_TIMEOUT=1s QUEUE_SWEEP_INTERVAL=200ms QUEUE_POLL_MAX=20ms LOG_LEVEL=error " ..
      "SAGA_DEF=" .. quote(json.encode(DEF)) .. " " .. (extra or "")
  end

  local function zever_cmd(extra, ...)
    local parts = { env(extra), quote(sys.exe()) }
    for i = 1, select("#", ...) do parts[#parts + 1] = quote((select(i, ...))) end
    parts[#parts + 1] = "--app"
    parts[#parts + 1] = quote(dir)
    return process.run(table.concat(parts, " "))
  end

  local function start_worker(extra)
    local log = dir .. "/worker" .. (#pids + 1) .. ".log"
    local p = io.popen(env(extra) .. "exec " .. quote(sys.exe()) .. " worker " .. quote(dir) ..
      " >" .. quote(log) .. " 2>&1 & echo $!")
    local pid = tonumber(p:read("*l"))
    p:close()
    pids[#pids + 1] = pid
    return pid, log
  end

  local function status(id)
    local r = zever_cmd(nil, "saga", "status", id, "--json")
    return r.code == 0 and json.decode(r.stdout) or nil, r
  end

  before_each(function()
    dir = fs.tmpdir({ ["app.lua"] = APP }, "zever-saga")
    path = dir .. "/app.db"
    db = assert(zdb.open("sqlite:" .. path))
    db:exec("CREATE TABLE effects (key TEXT PRIMARY KEY, step TEXT)")
    db:exec("CREATE TABLE runs (id INTEGER PRIMARY KEY, step TEXT)")
  end)

  after_each(function()
    for _, pid in ipairs(pids) do if process.alive(pid) then os.execute("kill -KILL " .. pid) end end
    pids = {}
    db:close()
    fs.rm_rf(dir)
  end)

  it("finishes a saga whose worker was killed inside a step, each effect once", function()
    local r = zever_cmd(nil, "workflow", "start", "PlaceOrder", "--id", "s1")
    assert.equals(0, r.code, r.stderr)
    local pid1, log1 = start_worker("KILL_IN=Charge ")
    assert(process.wait_for(function() return not process.alive(pid1) end, 30),
      "the worker was not killed in Charge: " .. fs.text(log1))
    local _, log2 = start_worker()
    assert(process.wait_for(function()
      local st = status("s1")
      return st and st.status == "completed"
    end, 30), "the saga did not complete: " .. fs.text(log2))
    local runs = {}
    for _, x in ipairs(db:query("SELECT step FROM runs ORDER BY id")) do runs[#runs + 1] = x.step end
    -- Reserve and Hold ran once (recorded before the kill); Charge ran twice (killed after its
    -- effect, before its record); Ship once.
    assert.same({ "Reserve", "Hold", "Charge", "Charge", "Ship" }, runs)
    local effects = {}
    for _, x in ipairs(db:query("SELECT key, step FROM effects ORDER BY key")) do
      effects[#effects + 1] = x.key .. " " .. x.step
    end
    assert.same({ "s1/charge Charge", "s1/hold Hold", "s1/reserve Reserve", "s1/ship Ship" }, effects)
  end)

  it("shows a stuck saga with zever saga status and runs it again with zever saga retry", function()
    assert.equals(0, zever_cmd(nil, "workflow", "start", "PlaceOrder", "--id", "x1").code)
    start_worker("SHIP_DOWN=1 ")
    assert(process.wait_for(function()
      local st = status("x1")
      return st and st.status == "stuck"
    end, 30))
    local r = zever_cmd(nil, "saga", "status", "x1")
    assert.equals(0, r.code, r.stderr)
    assert.matches("saga x1 (PlaceOrder): stuck, attempts 2 - ship: unavailable: no truck",
      r.stdout, 1, true)
    assert.matches("charge%s+execute%s+done", r.stdout)
    os.execute("kill -KILL " .. pids[1])
    assert(process.wait_for(function() return not process.alive(pids[1]) end, 10))
    r = zever_cmd(nil, "saga", "retry", "x1")
    assert.equals(0, r.code, r.stderr)
    assert.equals("pending", status("x1").status)
    start_worker()
    assert(process.wait_for(function()
      local st = status("x1")
      return st and st.status == "completed"
    end, 30))
    r = zever_cmd(nil, "saga", "retry", "x1")
    assert.equals(1, r.code)
    assert.matches("is completed, not stuck", r.stderr, 1, true)
    r = zever_cmd(nil, "saga", "status", "nope")
    assert.equals(1, r.code)
    assert.matches('no run "nope"', r.stderr, 1, true)
    r = process.zever("saga", "status", "x1", "--dsn", "sqlite:" .. path)
    assert.equals(2, r.code)
    assert.matches("--dsn is gone", r.stderr, 1, true)
  end)
end)
