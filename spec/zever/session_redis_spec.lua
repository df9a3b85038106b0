-- zever.session with the redis adapter (#redis): the conformance suite against a real
-- redis-server on a free loopback port, and the TTL Redis keeps for each session.

local session = require "zever.session"
local srs = require "adapters.session.redis"
local redis = require "zever.redis"
local redis_server = require "spec.support.redis_server"

describe("adapters.session.redis #redis", function()
  local srv = redis_server.fixture()

  require("spec.conformance.session")("redis", function(opts)
    return session.wrap(assert(srs.new{ url = srv.url, prefix = srv:prefix("sess") }), opts)
  end)

  it("stores a session under the prefix with a TTL of the sooner deadline", function()
    local prefix = srv:prefix("ttl")
    local store = session.wrap(assert(srs.new{ url = srv.url, prefix = prefix }),
      { idle_timeout = 120, absolute_timeout = 3600 })
    local raw
    -- One finally per test: busted keeps only the last function given.
    finally(function()
      store:close()
      if raw then raw:close() end
    end)
    local s = store:create()
    s.data.u = 1
    local token = assert(store:save(s))
    raw = assert(redis.connect(srv.url, { sync = true }))
    local ttl = raw:call("PTTL", prefix .. token)
    assert.is_true(ttl > 110000 and ttl <= 120000, tostring(ttl))
  end)
end)
