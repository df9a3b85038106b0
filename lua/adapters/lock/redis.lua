-- adapters.lock.redis: leases on a Redis server, exclusive across every process and machine
-- that uses the server with the same prefix. Each call is ONE script (EVALSHA): one round trip
-- per acquire, per extend and per unlock, atomic on the server (no check-then-set race between
-- a GET and a SET from the client).
--
--   local impl = rlock.new{ url = "redis://127.0.0.1:6379/0" | client = c,
--                           prefix = "zever:lock:", timeout = 5 }
--   impl:acquire(key, ttl)        -> fence, token | false | nil, err   (valid arguments)
--   impl:extend(key, token, ttl)  -> true | false | nil, err
--   impl:unlock(key, token)       -> true | false | nil, err
--   impl:holder(key)              -> fence, ttl_left | false | nil, err
--   impl:close()                  -> true (releases the shared client; not a given one)
--   rlock.open(section, ctx)      -> impl (the adapter contract)
--
-- A lease is the string key prefix .. "k:" .. key holding "<fence>:<owner token>" with a PX
-- expiry of the ttl (milliseconds, rounded up): Redis ends a crashed holder's lease by itself.
-- The fence comes from one INCR counter, prefix .. "fence", so it grows with every lease of the
-- prefix. The owner token is unique to this adapter object (pid, address, start time, count):
-- extend and unlock compare the whole value, so a holder whose lease expired and was taken by
-- another can neither extend nor delete the new holder's lease ("not_held"). A connection
-- failure is nil, err with code "unavailable". Argument checks belong to the front-end.

local redis_client = require "adapters.redis_client"
local db_table = require "adapters.db_table"

local tonumber, ceil, setmetatable = tonumber, math.ceil, setmetatable

local M = {}

-- KEYS[1] the lease, KEYS[2] the fence counter; ARGV[1] the owner token, ARGV[2] ttl in ms.
-- Returns the fence, or 0 when the key is held.
M.ACQUIRE = [[
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local fence = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], fence .. ':' .. ARGV[1], 'PX', ARGV[2])
return fence
]]

-- KEYS[1] the lease; ARGV[1] the holder's value, ARGV[2] the new ttl in ms. 1 or 0.
M.EXTEND = [[
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
]]

-- KEYS[1] the lease; ARGV[1] the holder's value. 1 or 0.
M.UNLOCK = [[
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
]]

-- KEYS[1] the lease. { value, pttl } or an empty array when free.
M.HOLDER = [[
local v = redis.call('GET', KEYS[1])
if not v then return {} end
return { v, redis.call('PTTL', KEYS[1]) }
]]

local R = {}
R.__index = R

local unavailable = redis_client.failer("lock")

local function ms(ttl)
  local v = ceil(ttl * 1000)
  if v < 1 then v = 1 end
  return v
end

function R:acquire(key, ttl)
  self.count = self.count + 1
  local token = self.owner .. self.count
  local k = self.prefix .. "k:" .. key
  local r, err = self.acquire_script:call({ k, self.fence_key }, { token, ms(ttl) })
  if r == nil then return unavailable(err) end
  if r == 0 then return false end
  return r, r .. ":" .. token
end

function R:extend(key, token, ttl)
  local r, err = self.extend_script:call({ self.prefix .. "k:" .. key }, { token, ms(ttl) })
  if r == nil then return unavailable(err) end
  return r == 1
end

function R:unlock(key, token)
  local r, err = self.unlock_script:call({ self.prefix .. "k:" .. key }, { token })
  if r == nil then return unavailable(err) end
  return r == 1
end

function R:holder(key)
  local r, err = self.holder_script:call({ self.prefix .. "k:" .. key }, {})
  if r == nil then return unavailable(err) end
  if #r == 0 then return false end
  return tonumber(r[1]:match("^(%d+):")), r[2] / 1000
end

R.close = redis_client.close

-- opts: url (the worker's shared client for it) or client (one the caller owns); prefix
-- ("zever:lock:"), timeout (seconds, for the shared client). nil, err for an invalid url.
function M.new(opts)
  local self, err = redis_client.new("lock.redis", opts, "lock", "zever:lock:")
  if not self then return nil, err end
  local c = self.client
  self.acquire_script, self.extend_script = c:script(M.ACQUIRE), c:script(M.EXTEND)
  self.unlock_script, self.holder_script = c:script(M.UNLOCK), c:script(M.HOLDER)
  self.fence_key = self.prefix .. "fence"
  self.owner, self.count = db_table.token_prefix(), 0
  return setmetatable(self, R)
end

M.open = redis_client.opener(M.new)

return M
