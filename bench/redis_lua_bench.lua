-- redis_lua_bench.lua: what a round trip to a local redis-server costs through zever.redis, and
-- what the shared-client lookup saves over building a client:
--
--   RedisSyncGet          GET on the blocking client
--   RedisAsyncGet         GET on the loop client outside a coroutine (runs the loop until the reply)
--   RedisAsyncGetCoroutine a coroutine spawned per op that yields on GET until the reply
--   RedisPipeline10       call_many with 10 GETs (per batch)
--   RedisSharedHit        redis.shared(url) of a client that exists + close()
--   RedisNewClientAsync   redis.connect(url) + close() (the connect never finishes)
--   RedisNewClientSync    redis.connect(url, {sync = true}) + close() (a TCP connect)
--
-- Run: bin/zever run bench/redis_lua_bench.lua [filter]   (starts its own redis-server)

local harness = require "bench.harness"
local redis = require "zever.redis"
local sched = require "zever.sched"
local loop = require "zever.loop"
local redis_server = require "spec.support.redis_server"

local srv = assert(redis_server.start())
local bench = harness.new(arg and arg[1], { seconds = 0.3 })

local ok, err = pcall(function()
  local s = assert(redis.connect(srv.url, { sync = true }))
  local a = assert(redis.connect(srv.url))
  assert(s:call("SET", "bench:k", "value") == "OK")

  bench("RedisSyncGet", function() s:call("GET", "bench:k") end)
  bench("RedisAsyncGet", function() a:call("GET", "bench:k") end)

  local done
  local function get() a:call("GET", "bench:k"); done = true end
  bench("RedisAsyncGetCoroutine", function()
    done = false
    sched.spawn(get)
    while not done do loop.run("once") end
  end)

  local cmds = {}
  for i = 1, 10 do cmds[i] = { "GET", "bench:k" } end
  bench("RedisPipeline10", function() a:call_many(cmds) end)

  local keep = assert(redis.shared(srv.url))
  bench("RedisSharedHit", function() redis.shared(srv.url):close() end)
  keep:close()
  bench("RedisNewClientAsync", function() redis.connect(srv.url):close() end)
  bench("RedisNewClientSync", function() redis.connect(srv.url, { sync = true }):close() end)
  s:close()
  a:close()
end)
srv:stop()
if not ok then error(err, 0) end
