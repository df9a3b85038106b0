-- bench/redis_shared_callgrind.lua N: RedisSharedHit (bench/redis_lua_bench.lua) for
-- callgrind: with one client of the url kept open, N times redis.shared(url):close() (the
-- lookup of the worker's shared client and the release of the reference). Starts its own
-- redis-server (spec/support/redis_server.lua; valgrind does not follow it). For two trees:
--
--   bash bench/callgrind_delta.sh "$PWD/bench/redis_shared_callgrind.lua" 100000 300000
--   ZEVER_DIR=/work/base bash bench/callgrind_delta.sh \
--     "$PWD/bench/redis_shared_callgrind.lua" 100000 300000
local redis = require "zever.redis"
local redis_server = require "spec.support.redis_server"

local N = tonumber(arg and arg[1]) or 0
local srv = assert(redis_server.start())
local ok, err = pcall(function()
  local keep = assert(redis.shared(srv.url))
  local url = srv.url
  for _ = 1, N do redis.shared(url):close() end
  keep:close()
end)
srv:stop()
if not ok then error(err, 0) end
