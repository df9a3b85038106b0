-- limiter_redis_accuracy.lua: the redis limiter under contention. Two separate processes, each
-- with N coroutines sharing its connection, hammer ONE key with allow(key, 1) for a few seconds
-- against a real redis-server; a token bucket must then have allowed at most
--
--   burst + rate * elapsed
--
-- where elapsed is measured on the server's clock (redis TIME just before each process's first
-- call and just after its last: the window covers every call, so the bound can only be loose,
-- never tight by mistake). Overshoot (allowed above the bound) must be zero; the report also
-- shows how close to the bound the limiter got (tokens left unused while callers were waiting).
--
-- Run: bin/zever run bench/limiter_redis_accuracy.lua     (starts and stops its own redis-server)
-- Knobs (environment): ACC_SECONDS (3), ACC_CLIENTS (8 per process), ACC_RATE (1000),
-- ACC_BURST (100). Exits 1 on overshoot or when a worker fails.
--
-- ACC_NAIVE=1 runs a control instead of the adapter: the same token bucket done from the client
-- as read (HMGET + TIME), compute, write (HSET), the way limiters without a server-side script
-- work. It is expected to overshoot (exit 1): the bench can tell a racy limiter from a sound one.
--
-- Internally the same file is the worker: `zever run <this> worker <url> <key> <seconds>
-- <clients> <rate> <burst> <outfile>` writes "allowed denied errors calls t_first t_last".

local sys = require "zever.sys"
local redis = require "zever.redis"
local sched = require "zever.sched"
local loop = require "zever.loop"
local limiter = require "zever.limiter"
local rlim = require "adapters.limiter.redis"

local function server_time(c)
  local t = assert(c:call("TIME"))
  return tonumber(t[1]) + tonumber(t[2]) / 1e6
end

-- The control: a read-compute-write bucket (three round trips, no atomicity).
local function naive(url, rate, burst)
  local c = assert(redis.shared(url))
  local self = {}
  function self.allow(_, key)
    local k = "bench:acc:" .. key
    local st, t = c:call("HMGET", k, "t", "ts"), c:call("TIME")
    if not st or not t then return nil end
    local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
    local tokens, last = tonumber(st[1]), tonumber(st[2])
    if not tokens then tokens, last = burst, now end
    tokens = math.min(burst, tokens + math.max(0, now - last) * rate)
    local ok = tokens >= 1
    if ok then tokens = tokens - 1 end
    c:call("HSET", k, "t", string.format("%.17g", tokens), "ts", string.format("%.17g", now))
    return ok
  end
  function self.close() c:close() end
  return self
end

local function worker(url, key, seconds, clients, rate, burst, out)
  local lim
  if os.getenv("ACC_NAIVE") == "1" then
    lim = naive(url, rate, burst)
  else
    lim = limiter.wrap(assert(rlim.new{ url = url, rate = rate, burst = burst,
      prefix = "bench:acc:" }))
  end
  local probe = assert(redis.connect(url))
  local allowed, denied, errors, calls, running = 0, 0, 0, 0, clients
  local t_first = server_time(probe)
  local stop = sys.now() + seconds
  for _ = 1, clients do
    sched.spawn(function()
      while sys.now() < stop do
        local ok = lim:allow(key, 1)
        calls = calls + 1
        if ok == true then
          allowed = allowed + 1
        elseif ok == false then
          denied = denied + 1
        else
          errors = errors + 1
        end
      end
      running = running - 1
    end)
  end
  while running > 0 do loop.run("once") end
  local t_last = server_time(probe)
  local f = assert(io.open(out, "w"))
  f:write(string.format("%d %d %d %d %.6f %.6f\n", allowed, denied, errors, calls, t_first,
    t_last))
  f:close()
  probe:close()
  lim:close()
end

local function main()
  local seconds = tonumber(os.getenv("ACC_SECONDS")) or 3
  local clients = tonumber(os.getenv("ACC_CLIENTS")) or 8
  local rate = tonumber(os.getenv("ACC_RATE")) or 1000
  local burst = tonumber(os.getenv("ACC_BURST")) or 100
  local srv = assert(require("spec.support.redis_server").start())
  local ok, err = pcall(function()
    local key = "hot"
    local c = assert(redis.connect(srv.url, { sync = true }))
    c:call("DEL", "bench:acc:" .. key)
    local exe, script = sys.exe(), arg[0]
    local outs, cmd = {}, {}
    for p = 1, 2 do
      outs[p] = os.tmpname()
      cmd[#cmd + 1] = string.format("'%s' run '%s' worker '%s' %s %s %d %s %s '%s' &", exe,
        script, srv.url, key, seconds, clients, rate, burst, outs[p])
    end
    cmd[#cmd + 1] = "wait"
    os.execute(table.concat(cmd, " "))
    local total = { 0, 0, 0, 0 }
    local first, last = math.huge, -math.huge
    for p = 1, 2 do
      local f = assert(io.open(outs[p]))
      local line = f:read("*l") or ""
      f:close()
      os.remove(outs[p])
      local v = {}
      for x in line:gmatch("%S+") do v[#v + 1] = tonumber(x) end
      assert(#v == 6, "worker " .. p .. " failed")
      for i = 1, 4 do total[i] = total[i] + v[i] end
      first, last = math.min(first, v[5]), math.max(last, v[6])
      print(string.format("process %d: %d calls, %d allowed, %d denied, %d errors", p, v[4], v[1],
        v[2], v[3]))
    end
    c:close()
    local elapsed = last - first
    local bound = burst + rate * elapsed
    local overshoot = math.max(0, total[1] - math.floor(bound + 1e-9))
    print(string.format("%s2 processes x %d clients, one key, rate %g/s, burst %g, %.3f s on the "
      .. "server's clock", os.getenv("ACC_NAIVE") == "1" and "CONTROL (read-compute-write): "
      or "", clients, rate, burst, elapsed))
    print(string.format("calls %d (%.0f/s), allowed %d, bound burst + rate x elapsed = %.1f, "
      .. "overshoot %d, allowed/bound %.4f, errors %d", total[4], total[4] / elapsed, total[1],
      bound, overshoot, total[1] / bound, total[3]))
    if overshoot > 0 or total[3] > 0 then error("overshoot or errors", 0) end
  end)
  srv:stop()
  if not ok then
    io.stderr:write("limiter_redis_accuracy: ", tostring(err), "\n")
    os.exit(1)
  end
end

if arg and arg[1] == "worker" then
  worker(arg[2], arg[3], tonumber(arg[4]), tonumber(arg[5]), tonumber(arg[6]), tonumber(arg[7]),
    arg[8])
else
  main()
end
