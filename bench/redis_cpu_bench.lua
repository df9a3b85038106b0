-- bench/redis_cpu_bench.lua [N]: the client's CPU time (user + system, os.clock) per GET on the
-- loop client outside a coroutine, against a local redis-server it starts. CPU time, not wall
-- time, so the server's share and the loopback wait are left out; system time counts, so a
-- system call saved shows here where callgrind (user space only) cannot see it.
--
--   bin/zever run bench/redis_cpu_bench.lua 20000
local redis = require "zever.redis"
local redis_server = require "spec.support.redis_server"

local n = tonumber(arg and arg[1]) or 20000
local srv = assert(redis_server.start())
local ok, err = pcall(function()
  local c = assert(redis.connect(srv.url))
  assert(c:call("SET", "bench:k", "v") == "OK")
  for _ = 1, 2000 do c:call("GET", "bench:k") end
  local c0 = os.clock()
  for _ = 1, n do c:call("GET", "bench:k") end
  print(("BenchmarkRedisGetCPU %d %.2f us-cpu/op"):format(n, (os.clock() - c0) / n * 1e6))
  c:close()
end)
srv:stop()
if not ok then error(err, 0) end
