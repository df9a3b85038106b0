-- zever.limiter with the redis adapter, against a real redis-server on a free loopback port:
-- the conformance suite (on the server's clock), then what only the redis adapter promises
-- (one script per call, state shared between clients, buckets that expire when full, failure
-- as "unavailable" and recovery after a restart) and the container.

local limiter = require "zever.limiter"
local rlim = require "adapters.limiter.redis"
local redis = require "zever.redis"
local sys = require "zever.sys"
local sched = require "zever.sched"
local process = require "spec.support.process"

describe("adapters.limiter.redis #redis", function()
  local srv = require("spec.support.redis_server").fixture()

  require("spec.conformance.limiter")("redis", function(opts)
    return limiter.wrap(assert(rlim.new{ url = srv.url, rate = opts.rate, burst = opts.burst,
      prefix = srv:prefix("conf") }))
  end, { real_clock = true })

  local function open(rate, burst, prefix)
    return limiter.wrap(assert(rlim.new{ url = srv.url, rate = rate, burst = burst,
      prefix = prefix or srv:prefix("lim") }))
  end

  it("shares one bucket between two connections with the same prefix", function()
    local prefix = srv:prefix("share")
    local a = open(0, 2, prefix)
    local other = assert(redis.connect(srv.url))   -- a second connection
    local b = limiter.wrap(assert(rlim.new{ client = other, rate = 0, burst = 2,
      prefix = prefix }))
    assert.is_true((a:allow("k")))
    assert.is_true((b:allow("k")))
    assert.is_false((a:allow("k")))
    assert.is_false((b:allow("k")))
    a:close()
    b:close()
    other:close()
  end)

  it("stores the bucket in a hash that expires when the bucket would be full again", function()
    local prefix = srv:prefix("ttl")
    local lim = open(10, 5, prefix)
    local c = assert(redis.connect(srv.url, { sync = true }))
    lim:allow("k", 2)
    local ttl = c:call("PTTL", prefix .. "k")
    -- 2 tokens at 10/s refill in 200 ms.
    assert.is_true(ttl > 100 and ttl <= 201, "pttl " .. tostring(ttl))
    assert.are.equal(2, #c:call("HKEYS", prefix .. "k"))
    local deadline = sys.now() + 3
    while c:call("EXISTS", prefix .. "k") == 1 and sys.now() < deadline do
      process.sleep(0.05)
    end
    assert.are.equal(0, c:call("EXISTS", prefix .. "k"))
    local _, remaining = lim:allow("k", 0)
    assert.are.equal(5, remaining)
    -- A call that leaves the bucket full writes nothing.
    assert.are.equal(0, c:call("EXISTS", prefix .. "k"))
    c:close()
    lim:close()
  end)

  it("keeps a bucket of rate 0 without expiry and answers retry_after math.huge", function()
    local prefix = srv:prefix("zero")
    local lim = open(0, 1, prefix)
    local c = assert(redis.connect(srv.url, { sync = true }))
    assert.is_true((lim:allow("k")))
    assert.are.equal(-1, c:call("PTTL", prefix .. "k"))
    local allowed, remaining, retry_after = lim:allow("k")
    assert.is_false(allowed)
    assert.are.equal(0, remaining)
    assert.are.equal(math.huge, retry_after)
    c:close()
    lim:close()
  end)

  it("uses the server's clock: refills measured by redis TIME", function()
    local lim = open(20, 1)
    assert.is_true((lim:allow("t")))
    local allowed, _, retry_after = lim:allow("t")
    assert.is_false(allowed)
    assert.is_true(retry_after > 0 and retry_after <= 0.05 + 1e-6)
    local deadline = sys.now() + 2
    local ok = false
    while not ok and sys.now() < deadline do
      ok = lim:allow("t")
      if not ok then process.sleep(0.01) end
    end
    assert.is_true(ok)
    lim:close()
  end)

  it("runs each allow as one EVALSHA and nothing else from the client", function()
    local lim = open(5, 5)
    local c = assert(redis.connect(srv.url, { sync = true }))
    lim:allow("warm")   -- loads the script
    local function stats()
      local text = c:call("INFO", "commandstats")
      local t = {}
      for name, calls in text:gmatch("cmdstat_([%w_|]+):calls=(%d+)") do t[name] = tonumber(calls) end
      return t
    end
    local before = stats()
    for _ = 1, 10 do lim:allow("one") end
    local after = stats()
    assert.are.equal(10, (after.evalsha or 0) - (before.evalsha or 0))
    for name, calls in pairs(after) do
      local d = calls - (before[name] or 0)
      if d > 0 and name ~= "evalsha" and name ~= "info" then
        -- Only the commands the script itself runs may move.
        assert.is_truthy(rlim.ALLOW:upper():find("'" .. name:upper() .. "'", 1, true), name)
      end
    end
    c:close()
    lim:close()
  end)

  it("answers unavailable while the server is down and recovers after a restart", function()
    local lim = limiter.wrap(assert(rlim.new{ url = srv.url, rate = 1, burst = 3,
      prefix = srv:prefix("down"), timeout = 1 }))
    assert.is_true((lim:allow("k")))
    srv:kill()
    local ok, err = lim:allow("k")
    assert.is_nil(ok)
    assert.are.equal("unavailable", err.code)
    local rok, rerr = lim:reset("k")
    assert.is_nil(rok)
    assert.are.equal("unavailable", rerr.code)
    assert(srv:launch())
    local deadline = sys.now() + 10
    local allowed
    while sys.now() < deadline do
      allowed = lim:allow("k")
      if allowed ~= nil then break end
      sched.sleep(0.05)   -- runs the loop: the client's reconnect timer fires there
    end
    -- The restarted server is empty: a full bucket again.
    assert.is_true(allowed)
    lim:close()
  end)

  it("is resolved by the container from the config, with limiter.url over redis.url", function()
    local config = require "zever.config"
    local container = require "zever.container"
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = {
      LIMITER_ADAPTER = "redis", LIMITER_RATE = "0", LIMITER_BURST = "2",
      REDIS_URL = "redis://127.0.0.1:1/0", LIMITER_URL = srv.url } })
    local c = container.new(cfg)
    local lim = assert(c:get("limiter"))
    assert.are.equal(2, lim.burst)
    local key = srv:prefix("container")
    local first, err0 = lim:allow(key)
    assert.is_true(first, tostring(err0))
    assert.is_true((lim:allow(key)))
    assert.is_false((lim:allow(key)))
    assert.is_true(c:close())
    local ok, err = lim:allow(key)
    assert.is_nil(ok)
    assert.are.equal("closed", err.code)
  end)
end)
