-- zever.eventbus with the inproc adapter (host/bus/: one hub in C memory per name, a mailbox per
-- worker drained on its own loop): the conformance suite, two buses of one name sharing their
-- messages, a full mailbox dropping the newest, and `zever serve --workers 2` where a message
-- published in one worker reaches the subscribers of both.

local eventbus = require "zever.eventbus"
local inproc = require "adapters.eventbus.inproc"
local sched = require "zever.sched"
local sys = require "zever.sys"
local serve = require "spec.support.serve"

local seq = 0
local function fresh_name()
  seq = seq + 1
  return ("spec-bus-%d-%d"):format(seq, math.random(1e9))
end

local function wait_until(pred)
  local deadline = sys.now() + 20
  while not pred() and sys.now() < deadline do sched.sleep(0.002) end
  return pred()
end

describe("adapters.eventbus.inproc", function()
  local made = {}
  after_each(function()
    for i = #made, 1, -1 do
      made[i]:close()
      made[i] = nil
    end
  end)
  local function bus_named(name, opts)
    local b = eventbus.wrap(assert(inproc.new{ name = name, max_pending = opts and opts.box }),
      opts)
    made[#made + 1] = b
    return b
  end

  require("spec.conformance.eventbus")("inproc", function(opts)
    return bus_named(fresh_name(), opts)
  end)

  it("shares messages between every bus opened under one name, and no other", function()
    local name = fresh_name()
    local a, b, other = bus_named(name), bus_named(name), bus_named(fresh_name())
    local got = { a = {}, b = {}, other = {} }
    assert(a:subscribe("orders.*", function(msg) got.a[#got.a + 1] = msg.id end))
    assert(b:subscribe("orders.>", function(msg) got.b[#got.b + 1] = msg.id end))
    assert(other:subscribe(">", function(msg) got.other[#got.other + 1] = msg end))
    for i = 1, 3 do assert(b:publish("orders.created", { id = i })) end
    assert.is_true(wait_until(function() return #got.a == 3 and #got.b == 3 end))
    assert.are.same({ 1, 2, 3 }, got.a)
    assert.are.same({ 1, 2, 3 }, got.b)
    assert.are.same({}, got.other)
  end)

  it("drops the newest messages of a mailbox its loop has not drained", function()
    local name = fresh_name()
    local sub = bus_named(name, { box = 4 })
    local pub = bus_named(name)
    local got = {}
    assert(sub:subscribe("t", function(msg) got[#got + 1] = msg end))
    -- Published back to back without yielding: the loop drains nothing in between.
    for i = 1, 10 do assert(pub:publish("t", i)) end
    assert.is_true(wait_until(function() return #got >= 4 end))
    sched.sleep(0.01)
    assert.are.same({ 1, 2, 3, 4 }, got)
    assert.are.equal(6, sub:stats().dropped_inproc)
  end)

  it("refuses a message that is not JSON with invalid", function()
    local bus = bus_named(fresh_name())
    local ok, err = bus:publish("t", { f = print })
    assert.is_nil(ok)
    assert.are.equal("invalid", err.code)
  end)

  describe("under zever serve with two workers", function()
    local dir, srv
    setup(function()
      dir = serve.temp_app([[
local zever = require "zever"
local app = zever.app()
local me = tostring({}):match("0x%x+")   -- one per worker: each has its own Lua state
local seen = {}
app.eventbus:subscribe("news.>", function(msg) seen[#seen + 1] = msg.text end)
app:post("/publish/:text", function(req)
  assert(app.eventbus:publish("news.today", { text = req.params.text, from = me }))
  return { worker = me }
end)
app:get("/seen", function() return { worker = me, seen = seen } end)
return app
]])
      srv = assert(serve.start(dir, { "--workers", "2", "--access-log", "off",
        "--listen", "127.0.0.1:" .. serve.free_port() },
        { EVENTBUS_ADAPTER = "inproc" }))
    end)
    teardown(function()
      if srv then srv:kill() end
      serve.remove(dir)
    end)

    local function call(path, extra)
      local r = srv:curl(path, extra)
      assert.are.equal(0, r.code, r.stderr)
      return require("zever.json").decode(r.stdout)
    end

    it("delivers a message published in one worker to the subscribers of both", function()
      call("/publish/hello", "-X POST")
      local by_worker = {}
      for _ = 1, 200 do
        local r = call("/seen")
        by_worker[r.worker] = r.seen
        local n, all = 0, true
        for _, s in pairs(by_worker) do
          n = n + 1
          if s[1] ~= "hello" then all = false end
        end
        if n == 2 and all then break end
      end
      local n = 0
      for w, s in pairs(by_worker) do
        n = n + 1
        assert.are.same({ "hello" }, s, "worker " .. w)
      end
      assert.are.equal(2, n)
    end)
  end)
end)
