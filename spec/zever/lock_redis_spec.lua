-- zever.lock with the redis adapter, against a real redis-server on a free loopback port: the
-- conformance suite (on the server's clock), one script per acquire and per unlock (INFO
-- commandstats), exclusion across two processes of eight contenders each (a shared counter),
-- failure as "unavailable", and the container.

local lock = require "zever.lock"
local rlock = require "adapters.lock.redis"
local redis = require "zever.redis"
local sys = require "zever.sys"
local process = require "spec.support.process"

describe("adapters.lock.redis #redis", function()
  local srv = require("spec.support.redis_server").fixture()

  require("spec.conformance.lock")("redis", function()
    return lock.wrap(assert(rlock.new{ url = srv.url, prefix = srv:prefix("conf") }))
  end, { real_clock = true })

  local commandstats = require("spec.support.redis_server").commandstats

  it("costs one round trip (one EVALSHA) per acquire, extend and unlock", function()
    local locks = lock.wrap(assert(rlock.new{ url = srv.url, prefix = srv:prefix("rt") }))
    local c = assert(redis.connect(srv.url, { sync = true }))
    -- Warm up: the first call of each script may load it (NOSCRIPT, then EVAL).
    local warm = assert(locks:try_acquire("w", 10))
    assert(warm:extend())
    assert(warm:unlock())
    local before = commandstats(c)
    for i = 1, 50 do
      local lease = assert(locks:try_acquire("k" .. i, 10))
      assert(lease:extend(20))
      assert(lease:unlock())
    end
    local after = commandstats(c)
    local sources = (rlock.ACQUIRE .. rlock.EXTEND .. rlock.UNLOCK):upper()
    for name, calls in pairs(after) do
      local d = calls - (before[name] or 0)
      if d ~= 0 and name ~= "info" then
        if name == "evalsha" then
          assert.are.equal(150, d)
        else
          -- Any other command ran inside a script, not from the client.
          assert.truthy(sources:find("'" .. name:upper() .. "'", 1, true), name)
        end
      end
    end
    c:close()
    locks:close()
  end)

  it("never grants the key to two holders across two processes of eight contenders", function()
    local prefix = srv:prefix("procs")
    local script = "spec/fixtures/lock_contender.lua"
    local cmd = process.quote(sys.exe()) .. " run " .. script .. " " .. process.quote(srv.url)
      .. " " .. prefix .. " 8 10"
    assert.same({ "overlaps 0 leases 80\n", "overlaps 0 leases 80\n" }, process.together(cmd, 2))
    local c = assert(redis.connect(srv.url, { sync = true }))
    assert.are.equal("160", c:call("GET", prefix .. "total"))
    assert.are.equal("0", c:call("GET", prefix .. "inside"))
    c:close()
  end)

  it("returns unavailable when the server is gone", function()
    local srv2 = assert(require("spec.support.redis_server").start())
    local locks = lock.wrap(assert(rlock.new{ url = srv2.url, timeout = 1 }))
    srv2:stop()
    local l, err = locks:try_acquire("k", 10)
    assert.is_nil(l)
    assert.are.equal("unavailable", err.code)
    assert.is_nil(err.message:find(srv2.url, 1, true))
    locks:close()
  end)

  it("is app.lock with LOCK_ADAPTER=redis", function()
    local container = require("zever.container")
    local cfg = assert(require("zever.config").load{ env = { LOCK_ADAPTER = "redis",
      REDIS_URL = srv.url } })
    local c = container.new(cfg)
    local locks = assert(c:get("lock"))
    local lease = assert(locks:try_acquire("container", 5))
    assert.is_string(lease.token)
    assert.is_true(lease:unlock())
    c:close()
  end)
end)
