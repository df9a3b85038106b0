-- cache_adapters_lua_bench.lua: what a handler pays for app.cache with the db and redis adapters
-- (the front-end included), next to each other:
--
--   CacheDbGet / CacheDbGetMiss    get of a 51-byte string / of an absent key (SQLite WAL file)
--   CacheDbSet                     set of a 51-byte string with a ttl (an upsert, one commit)
--   CacheDbIncr                    incr (one INSERT ... ON CONFLICT DO UPDATE ... RETURNING)
--   CacheRedisGet / CacheRedisSet  GET / SET PX on the shared async client, outside a coroutine
--   CacheRedisIncr                 incr (EVALSHA of the adapter's script)
--
-- Run: bin/zever run bench/cache_adapters_lua_bench.lua [filter]
-- It makes its SQLite file in a temporary directory and starts its own redis-server on a free
-- loopback port (spec/support/redis_server.lua), and removes both at the end.

local harness = require "bench.harness"
local cache = require "zever.cache"
local zdb = require "zever.db"
local dbc = require "adapters.cache.db"
local rc = require "adapters.cache.redis"
local redis_server = require "spec.support.redis_server"

local bench = harness.new(arg and arg[1], { seconds = 0.3 })

local p = assert(io.popen("mktemp -d /tmp/zever-cache-bench-XXXXXX"))
local dir = p:read("*l")
p:close()
local srv = assert(redis_server.start())

local value = ("v"):rep(51)
local keys = {}
for i = 1, 1024 do keys[i] = "key:" .. i end

local ok, err = pcall(function()
  local db = assert(zdb.open("sqlite:" .. dir .. "/bench.db"))
  local c = cache.wrap(dbc.new(db))
  for i = 1, #keys do assert(c:set(keys[i], value, 3600)) end
  bench.loop("CacheDbGet", function(n)
    for i = 1, n do c:get(keys[i % 1024 + 1]) end
  end)
  bench.loop("CacheDbGetMiss", function(n)
    for _ = 1, n do c:get("absent") end
  end)
  bench.loop("CacheDbSet", function(n)
    for i = 1, n do c:set(keys[i % 1024 + 1], value, 3600) end
  end)
  bench.loop("CacheDbIncr", function(n)
    for _ = 1, n do c:incr("counter") end
  end)
  c:close()
  db:close()

  local r = cache.wrap(assert(rc.new{ url = srv.url, prefix = "bench:" }))
  for i = 1, #keys do assert(r:set(keys[i], value, 3600)) end
  bench.loop("CacheRedisGet", function(n)
    for i = 1, n do r:get(keys[i % 1024 + 1]) end
  end)
  bench.loop("CacheRedisSet", function(n)
    for i = 1, n do r:set(keys[i % 1024 + 1], value, 3600) end
  end)
  bench.loop("CacheRedisIncr", function(n)
    for _ = 1, n do r:incr("counter") end
  end)
  r:close()
end)
srv:stop()
os.execute("rm -rf '" .. dir .. "'")
if not ok then error(err, 0) end
