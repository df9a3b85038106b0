-- bench/redis_shared_callgrind.lua N: RedisSharedHit (bench/redis_lua_bench.lua) for
-- callgrind: with one client of the url kept open, N times redis.shared(url):close() (the
-- lookup of the worker's shared client and the release of the reference). Starts its own
-- redis-server (spec/support/redis_server.lua; valgrind does not follow it). For two trees:
--
--   bash bench/callgrind_delta.sh "$PWD/bench/redis_shared_callgrind.lua" 100000 300000
--   ZEVER_DIR=/work/base bash bench/callgrind_delta.sh \
--     "$PWD/bench/redis_shared_callgrind.lua" 100000 300000
--
-- The slope mixes two processes, and LuaJIT seeds its string hash at random in each: both the
-- start-up and the op (a method looked up on the client first, a miss that walks a hash chain)
-- vary with the seed. os.difftime marks the measured loop, so one process gives the op's count
-- alone (part 2 of the dump: Ir / N, the same seed throughout):
--
--   valgrind --tool=callgrind --dump-before=difftime --callgrind-out-file=/tmp/rs \
--     bin/zever run bench/redis_shared_callgrind.lua 300000   # then /tmp/rs.2's total / 300000
local redis = require "zever.redis"
local redis_server = require "spec.support.redis_server"

local N = tonumber(arg and arg[1]) or 0
local srv = assert(redis_server.start())
local ok, err = pcall(function()
  local keep = assert(redis.shared(srv.url))
  local url = srv.url
  for _ = 1, 1000 do redis.shared(url):close() end   -- compiled before the measured loop
  os.difftime(0, 0)
  for _ = 1, N do redis.shared(url):close() end
  os.difftime(0, 0)
  keep:close()
end)
srv:stop()
if not ok then error(err, 0) end
