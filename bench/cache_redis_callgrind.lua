-- bench/cache_redis_callgrind.lua N [op]: N app.cache operations on the redis adapter (op "set"
-- (default), "get" or "incr"; the shapes of bench/cache_adapters_lua_bench.lua's CacheRedis*:
-- the front-end, the shared async client, a plain caller outside a coroutine), for
-- bench/callgrind_delta.sh (start-up, the server's start and the warm-up cancel out):
--
--   ZEVER_DIR=/work/base bash bench/callgrind_delta.sh "$PWD/bench/cache_redis_callgrind.lua" 2000 6000
--   OP=get bash bench/callgrind_delta.sh bench/cache_redis_callgrind.lua 2000 6000
local cache = require "zever.cache"
local rc = require "adapters.cache.redis"
local redis_server = require "spec.support.redis_server"

local n = tonumber(arg and arg[1]) or 1000
local op = os.getenv("OP") or "set"
local srv = assert(redis_server.start())
local ok, err = pcall(function()
  local r = cache.wrap(assert(rc.new{ url = srv.url, prefix = "bench:" }))
  local value = ("v"):rep(51)
  local keys = {}
  for i = 1, 1024 do keys[i] = "key:" .. i end
  local function run(count)
    if op == "get" then for i = 1, count do r:get(keys[i % 1024 + 1]) end
    elseif op == "incr" then for _ = 1, count do r:incr("counter") end
    else for i = 1, count do r:set(keys[i % 1024 + 1], value, 3600) end end
  end
  run(1024)
  run(n)
  r:close()
end)
srv:stop()
if not ok then error(err, 0) end
