-- zever.saga: the runtime of .zen sagas on a real SQLite file. Steps persist their results;
-- a failure before the pivot compensates in reverse order; after the pivot the saga rolls
-- forward with retries and then waits for saga.retry; a worker killed (SIGKILL) between a
-- step's effect and its record re-runs that step with the same idempotency key, so each effect
-- happens once.

local saga = require "zever.saga"
local zdb = require "zever.db"
local process = require "spec.support.process"
local fs = require "spec.support.files"
local sys = require "zever.sys"

local DEF = { name = "PlaceOrder", steps = {
  { name = "reserve", execute = { service = "Stock", rpc = "Reserve" },
    compensate = { service = "Stock", rpc = "Release" } },
  { name = "hold", execute = { service = "Pay", rpc = "Hold" },
    compensate = { service = "Pay", rpc = "Unhold" } },
  { name = "charge", execute = { service = "Pay", rpc = "Charge" }, pivot = true },
  { name = "ship", execute = { service = "Ship", rpc = "Ship" } },
} }

describe("zever.saga", function()
  local dir, db, calls, fail

  -- Handlers that log every call and fail where fail[step] says (a count of failures left).
  local function handler(name)
    return function(input, ctx)
      calls[#calls + 1] = name
      assert.are.equal(ctx.saga_id .. ":" .. ctx.step .. ":" .. ctx.phase, ctx.idempotency_key)
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
    dir = fs.tmpdir()
    db = assert(zdb.open("sqlite:" .. dir .. "/s.db"))
    saga.migrate(db)
    saga.migrate(db) -- idempotent
    calls, fail = {}, {}
  end)

  after_each(function()
    db:close()
    fs.rm_rf(dir)
  end)

  it("runs every step once and stores each result", function()
    local id = saga.start(db, DEF, { order = 7 })
    assert.are.equal("done", (saga.run(db, DEF, handlers, id)))
    assert.are.same({ "Reserve", "Hold", "Charge", "Ship" }, calls)
    local st = saga.status(db, id)
    assert.are.equal("done", st.state)
    assert.are.equal(4, #st.steps)
    -- run again: nothing runs twice
    assert.are.equal("done", (saga.run(db, DEF, handlers, id)))
    assert.are.equal(4, #calls)
  end)

  it("compensates the finished steps in reverse order when a step before the pivot fails", function()
    fail.Charge = 1 -- the pivot itself fails: still compensated
    local id = saga.start(db, DEF, { order = 1 })
    local state, err = saga.run(db, DEF, handlers, id)
    assert.are.equal("compensated", state)
    assert.are.equal("unavailable: Charge is down", err)
    assert.are.same({ "Reserve", "Hold", "Charge", "Unhold", "Release" }, calls)
    assert.are.equal("charge: unavailable: Charge is down", saga.status(db, id).error)
  end)

  it("rolls forward after the pivot with retries, then waits for saga.retry", function()
    fail.Ship = 5
    local id = saga.start(db, DEF, { order = 2 })
    local state = saga.run(db, DEF, handlers, id, { attempts = 3 })
    assert.are.equal("stuck", state)
    assert.are.same({ "Reserve", "Hold", "Charge", "Ship", "Ship", "Ship" }, calls)
    assert.is_nil(saga.run(db, DEF, handlers, id) == "done" or nil) -- stuck stays stuck
    local ok, err = saga.retry(db, saga.start(db, DEF, {}))
    assert.is_nil(ok)
    assert.matches("is running, not stuck", err, 1, true)
    fail.Ship = 0
    assert.is_true(saga.retry(db, id))
    assert.are.equal("done", (saga.run(db, DEF, handlers, id)))
    assert.are.same({ "Reserve", "Hold", "Charge", "Ship", "Ship", "Ship", "Ship" }, calls)
  end)

  it("runs each step's effect once when the worker is killed between steps", function()
    local script = dir .. "/worker.lua"
    fs.write(script, [[
local saga, zdb, sys = require "zever.saga", require "zever.db", require "zever.sys"
local path, id, kill_in = arg[1], arg[2], arg[3]
local db = assert(zdb.open("sqlite:" .. path))
db:exec("CREATE TABLE IF NOT EXISTS effects (key TEXT PRIMARY KEY, step TEXT)")
db:exec("CREATE TABLE IF NOT EXISTS runs (step TEXT)")
local function step(name)
  return function(_, ctx)
    db:exec("INSERT INTO runs (step) VALUES (?)", name)
    -- the effect, keyed: a second run with the same key changes nothing
    db:exec("INSERT INTO effects (key, step) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
      ctx.idempotency_key, name)
    if name == kill_in then os.execute("kill -9 " .. sys.getpid()) end
    return { ok = name }
  end
end
local h = { Stock = { Reserve = step("Reserve"), Release = step("Release") },
  Pay = { Hold = step("Hold"), Unhold = step("Unhold"), Charge = step("Charge") },
  Ship = { Ship = step("Ship") } }
local def = ]] .. require("zever.json").encode(DEF):gsub("%[", "{"):gsub("%]", "}")
      :gsub('"(%w+)":', "%1 = ") .. [[

saga.migrate(db)
if not db:first("SELECT 1 AS x FROM zever_sagas WHERE id = ?", id) then saga.start(db, def, {}, id) end
print(saga.run(db, def, h, id))
]])
    local function worker(kill_in)
      return process.run(process.quote(sys.exe()) .. " run " .. process.quote(script) .. " "
        .. process.quote(dir .. "/s.db") .. " s1 " .. kill_in)
    end
    local r = worker("Charge")
    assert.are_not.equal(0, r.code) -- killed inside Charge, after its effect
    r = worker("none")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("done\n", r.stdout)
    local runs = {}
    for _, x in ipairs(db:query("SELECT step FROM runs ORDER BY rowid")) do runs[#runs + 1] = x.step end
    -- Reserve and Hold ran once (recorded before the kill); Charge ran twice; Ship once.
    assert.are.same({ "Reserve", "Hold", "Charge", "Charge", "Ship" }, runs)
    local effects = {}
    for _, x in ipairs(db:query("SELECT step, count(*) AS n FROM effects GROUP BY step ORDER BY step")) do
      effects[x.step] = x.n
    end
    assert.are.same({ Charge = 1, Hold = 1, Reserve = 1, Ship = 1 }, effects)
    assert.are.equal("done", saga.status(db, "s1").state)
  end)
end)

describe("zever saga status|retry", function()
  it("shows a saga's steps and retries a stuck one through the command", function()
    local dir = fs.tmpdir()
    local dsn = "sqlite:" .. dir .. "/s.db"
    local db = assert(zdb.open(dsn))
    saga.migrate(db)
    local id = saga.start(db, DEF, {}, "x1")
    local h = { Stock = { Reserve = function() return { r = 1 } end },
      Pay = { Hold = function() return {} end, Charge = function() return {} end },
      Ship = { Ship = function() return nil, { code = "unavailable", message = "no truck" } end } }
    assert.are.equal("stuck", (saga.run(db, DEF, h, id, { attempts = 2 })))
    db:close()
    local r = process.zever("saga", "status", "x1", "--dsn", dsn)
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("saga x1 (PlaceOrder): stuck - ship: unavailable: no truck", r.stdout, 1, true)
    assert.matches("ship%s+execute%s+failed%s+attempts 2", r.stdout)
    r = process.zever("saga", "retry", "x1", "--dsn", dsn)
    assert.are.equal(0, r.code, r.stderr)
    r = process.zever("saga", "status", "x1", "--dsn", dsn, "--json")
    assert.are.equal("running", require("zever.json").decode(r.stdout).state)
    r = process.zever("saga", "retry", "nope", "--dsn", dsn)
    assert.are.equal(1, r.code)
    assert.matches("no saga nope", r.stderr, 1, true)
    fs.rm_rf(dir)
  end)
end)
