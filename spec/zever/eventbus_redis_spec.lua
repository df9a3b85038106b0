-- zever.eventbus with the redis adapter (a Redis stream), against a real redis-server on a
-- free loopback port: the conformance suite, one command per publish, fan-out to two other
-- processes, failure as "unavailable", and the container.

local eventbus = require "zever.eventbus"
local rbus = require "adapters.eventbus.redis"
local redis = require "zever.redis"
local sched = require "zever.sched"
local sys = require "zever.sys"
local process = require "spec.support.process"

describe("adapters.eventbus.redis #redis", function()
  local srv = require("spec.support.redis_server").fixture()

  require("spec.conformance.eventbus")("redis", function(opts)
    return eventbus.wrap(assert(rbus.new{ url = srv.url, prefix = srv:prefix("conf"),
      block = 0.2 }), opts)
  end)

  local function wait_until(pred)
    local deadline = sys.now() + 20
    while not pred() and sys.now() < deadline do sched.sleep(0.005) end
    return pred()
  end

  it("publishes with one XADD that trims the stream to about maxlen", function()
    local prefix = srv:prefix("xadd")
    local bus = eventbus.wrap(assert(rbus.new{ url = srv.url, prefix = prefix, maxlen = 100 }))
    local c = assert(redis.connect(srv.url, { sync = true }))
    local function calls()
      return tonumber(c:call("INFO", "commandstats"):match("cmdstat_xadd:calls=(%d+)") or 0)
    end
    local before = calls()
    for i = 1, 1000 do assert(bus:publish("t", i)) end
    assert.are.equal(1000, calls() - before)
    local len = c:call("XLEN", prefix .. "stream")
    assert.is_true(len >= 100 and len < 1000, "XLEN " .. tostring(len))
    c:close()
    bus:close()
  end)

  it("fans a message out to subscribers in two other processes", function()
    local prefix = srv:prefix("procs")
    local cmd = process.quote(sys.exe()) .. " run spec/fixtures/eventbus_listener.lua "
      .. process.quote(srv.url) .. " " .. prefix .. " 20"
    local p1 = assert(io.popen(cmd))
    local p2 = assert(io.popen(cmd))
    -- Each listener sets <prefix>ready:<pid> once it subscribed; publish after both did.
    local c = assert(redis.connect(srv.url, { sync = true }))
    assert.is_true(wait_until(function()
      local keys = c:call("KEYS", prefix .. "ready:*")
      return type(keys) == "table" and #keys == 2
    end))
    local bus = eventbus.wrap(assert(rbus.new{ url = srv.url, prefix = prefix }))
    for i = 1, 20 do assert(bus:publish(i % 2 == 0 and "orders.even" or "orders.odd", i)) end
    local out1, out2 = p1:read("*a"), p2:read("*a")
    p1:close()
    p2:close()
    local want = "got 20 sum 210 in order\n"
    assert.are.equal(want, out1)
    assert.are.equal(want, out2)
    c:close()
    bus:close()
  end)

  it("returns unavailable from publish when the server is gone", function()
    local srv2 = assert(require("spec.support.redis_server").start())
    local bus = eventbus.wrap(assert(rbus.new{ url = srv2.url, timeout = 1 }))
    srv2:stop()
    local ok, err = bus:publish("t", 1)
    assert.is_nil(ok)
    assert.are.equal("unavailable", err.code)
    bus:close()
  end)

  it("is app.eventbus with EVENTBUS_ADAPTER=redis", function()
    local cfg = assert(require("zever.config").load{ env = { EVENTBUS_ADAPTER = "redis",
      REDIS_URL = srv.url, EVENTBUS_PREFIX = srv:prefix("container") } })
    local c = require("zever.container").new(cfg)
    local bus = assert(c:get("eventbus"))
    local got
    assert(bus:subscribe("c.*", function(m) got = m end))
    assert(bus:publish("c.x", { a = 1 }))
    assert.is_true(wait_until(function() return got ~= nil end))
    assert.are.same({ a = 1 }, got)
    c:close()
  end)
end)
