-- zever.breaker with the redis adapter, against a real redis-server on a free loopback port: the
-- conformance suite (fake clock, sent with each script), one breaker shared by two clients with
-- their own connections (as two processes would), one script per call through a closed breaker
-- (INFO commandstats), and calls let through when the server is gone.

local breaker = require "zever.breaker"
local rbreaker = require "adapters.breaker.redis"
local redis = require "zever.redis"

describe("adapters.breaker.redis #redis", function()
  local srv = require("spec.support.redis_server").fixture()
  local made = {}
  after_each(function()
    for i = #made, 1, -1 do
      made[i]:close()
      made[i] = nil
    end
  end)

  require("spec.conformance.breaker")("redis", function(opts)
    local b = breaker.wrap(assert(rbreaker.new{ url = srv.url, prefix = srv:prefix("conf") }),
      opts)
    made[#made + 1] = b
    return b
  end)

  it("shares one breaker between clients on separate connections", function()
    local prefix, t = srv:prefix("shared"), 1000
    local clock = function() return t end
    local c1, c2 = assert(redis.connect(srv.url)), assert(redis.connect(srv.url))
    local a = breaker.wrap(assert(rbreaker.new{ client = c1, prefix = prefix }), { clock = clock })
    local b = breaker.wrap(assert(rbreaker.new{ client = c2, prefix = prefix }), { clock = clock })
    local opts = { window = 4, min_calls = 4, failure_rate = 0.5, open_for = 10 }
    local ca, cb = a:get("up", opts), b:get("up", opts)
    local down = function() return nil, "down" end
    ca:call(down)
    cb:call(down)                        -- 2 failures of 2: below min_calls
    assert.are.equal("closed", ca:state())
    ca:call(function() return "ok" end)
    cb:call(down)                        -- 3 of 4 failed, counted across both clients
    assert.are.equal("open", ca:state())
    -- a's last reply said closed: its next call goes through once, and the reply tells it.
    assert.are.equal("ok", ca:call(function() return "ok" end))
    local r, err = ca:call(function() return "not called" end)
    assert.is_nil(r)
    assert.are.equal("open", err.code)
    assert.are.equal(10, err.retry_after)
    t = t + 10
    assert.are.equal("ok", cb:call(function() return "ok" end))   -- trial 1 of 3
    assert.are.equal("half_open", ca:state())
    a:close()
    b:close()
    c1:close()
    c2:close()
  end)

  it("costs one script per call through a closed breaker", function()
    local c = assert(redis.connect(srv.url, { sync = true }))
    local b = breaker.wrap(assert(rbreaker.new{ url = srv.url, prefix = srv:prefix("rt") }))
    made[#made + 1] = b
    local cb = b:get("rt", { window = 100, min_calls = 100 })
    cb:call(function() return 1 end)     -- loads the scripts
    local function evalsha()
      return tonumber(c:call("INFO", "commandstats"):match("cmdstat_evalsha:calls=(%d+)")) or 0
    end
    local before = evalsha()
    for i = 1, 40 do assert.are.equal(i, cb:call(function() return i end)) end
    assert.are.equal(40, evalsha() - before)
    c:close()
  end)

  it("lets calls through and counts the errors when the server is gone", function()
    local srv2 = assert(require("spec.support.redis_server").start())
    local b = breaker.wrap(assert(rbreaker.new{ url = srv2.url, timeout = 1 }))
    local cb = b:get("gone", { window = 2, min_calls = 2, failure_rate = 1, half_open_calls = 1 })
    srv2:stop()
    for _ = 1, 3 do assert.are.equal("ran", cb:call(function() return "ran" end)) end
    assert.is_true(b.impl.by_name.gone.errors >= 3)
    b:close()
  end)
end)
