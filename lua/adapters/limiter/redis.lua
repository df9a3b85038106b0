-- adapters.limiter.redis: the token-bucket limiter on a Redis server, shared by every process
-- and machine that uses the server. Each allow() is ONE atomic Lua script (EVALSHA): it reads
-- the server's clock (TIME), refills, charges and writes the bucket in one step, so concurrent
-- callers never read-then-write over each other (the accuracy problem of limiters that GET,
-- compute and SET from the client) and the clocks of the callers do not matter.
--
--   local impl = rlim.new{ url = "redis://127.0.0.1:6379/0" | client = c, rate = 10, burst = 20,
--                          prefix = "zever:limiter:", timeout = 5 }
--   impl:allow(key, cost) -> allowed, remaining, retry_after | nil, err   (valid arguments)
--   impl:reset(key)       -> true | nil, err                  (DEL: the next call gets a full bucket)
--   impl:close()          -> true                  (releases the shared client; not a given one)
--   rlim.open(section, ctx) -> impl over it (the adapter contract)
--
-- A bucket is a hash at prefix .. key with fields t (tokens, a float) and ts (the server time
-- of the last refill in microseconds). It expires (PEXPIRE) when it would be full again, since
-- a full bucket and an absent one are the same state: idle keys cost nothing, with no sweep.
-- A call that leaves the bucket full deletes it. With rate 0 a bucket never refills, so it is
-- kept without expiry. Results are those of the memory adapter: remaining is the float of
-- tokens left (the front-end floors it), retry_after (cost - tokens) / rate, math.huge with rate
-- 0. A connection failure is nil, err with code "unavailable" (the middleware fails open).
-- Argument checks belong to the front-end (zever.limiter), not here.

local redis_client = require "adapters.redis_client"

local type, error, tonumber, format, setmetatable = type, error, tonumber, string.format,
  setmetatable
local huge = math.huge

local M = {}

-- KEYS[1] the bucket; ARGV rate (tokens/s), burst, cost. Returns { allowed (0/1), tokens,
-- retry_after } with the floats as %.17g strings (a Lua number would come back truncated to an
-- integer reply); retry_after -1 means never (rate 0). Mirrors charge() in host/limiter.
M.ALLOW = [[
local rate, burst, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000000 + tonumber(now[2])
local st = redis.call('HMGET', KEYS[1], 't', 'ts')
local tokens, last = tonumber(st[1]), tonumber(st[2])
if not tokens or not last then tokens, last = burst, now end
if now > last then
  tokens = tokens + (now - last) * rate / 1000000
  if tokens > burst then tokens = burst end
  last = now
end
if cost > burst then cost = burst end
local allowed, retry = 0, 0
if tokens + 1e-9 >= cost then
  tokens = tokens - cost
  if tokens < 0 then tokens = 0 end
  allowed = 1
elseif rate > 0 then
  retry = (cost - tokens) / rate
else
  retry = -1
end
if tokens >= burst then
  redis.call('DEL', KEYS[1])
else
  redis.call('HSET', KEYS[1], 't', string.format('%.17g', tokens), 'ts', string.format('%.17g', last))
  if rate > 0 then
    redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1)
  else
    redis.call('PERSIST', KEYS[1])
  end
end
return { allowed, string.format('%.17g', tokens), string.format('%.17g', retry) }
]]

local R = {}
R.__index = R

local unavailable = redis_client.failer("limiter")

function R:allow(key, cost)
  local args = self.args
  args[3] = cost
  local keys = self.keys
  keys[1] = self.prefix .. key
  local r, err = self.script:call(keys, args)
  if not r then return unavailable(err) end
  local retry = tonumber(r[3])
  if retry < 0 then retry = huge end
  return r[1] == 1, tonumber(r[2]), retry
end

function R:reset(key)
  local ok, err = self.client:call("DEL", self.prefix .. key)
  if not ok then return unavailable(err) end
  return true
end

R.close = redis_client.close

local function number(opts, name, default)
  local v = opts[name]
  if v == nil then return default end
  if type(v) ~= "number" or v ~= v or v < 0 or v == huge then
    error(format("limiter: %s must be a finite number >= 0", name), 3)
  end
  return v
end

-- opts: url (the worker's shared client for it), or client (a zever.redis client the caller
-- owns and closes); rate (10), burst (20), prefix ("zever:limiter:"), timeout (seconds, for the
-- shared client). Raises on bad options; nil, err when the url is invalid.
function M.new(opts)
  if type(opts) ~= "table" then error("limiter.redis.new: expects an options table", 2) end
  local rate = number(opts, "rate", 10)
  local burst = number(opts, "burst", 20)
  if burst < 1 then error("limiter: burst must be >= 1", 2) end
  local self, err = redis_client.new("limiter.redis", opts, "limiter", "zever:limiter:")
  if not self then return nil, err end
  self.script = self.client:script(M.ALLOW)
  self.keys = { "" }
  -- %.17g keeps the parameters exact on the wire.
  self.args = { format("%.17g", rate), format("%.17g", burst), 0 }
  self.rate, self.burst = rate, burst
  return setmetatable(self, R)
end

-- The adapter contract: section is the config's limiter section; section.url overrides
-- the config's redis.url.
function M.open(section, ctx)
  local url, timeout = redis_client.config(section, ctx)
  local impl, err = M.new{ url = url, rate = section.rate, burst = section.burst,
    timeout = timeout }
  if not impl then return nil, err end
  return impl
end

return M
