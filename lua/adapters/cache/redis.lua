-- adapters.cache.redis: the cache on a Redis server, shared by every process and machine that
-- uses the server. Redis keeps the expiry (PX) and evicts by its own maxmemory policy.
--
--   local impl = rc.new{ url = "redis://127.0.0.1:6379/0", prefix = "zever:cache:",
--                        redis = { timeout = 5 } }          -- or client = c (borrowed)
--   impl:get(k) / set(k, v, ttl, add) / delete(k) / incr(k, n, ttl) / exists(k) / close()
--                              (valid arguments: zever.cache checks them)
--   rc.open(section, ctx)   -> a zever.cache over the worker's shared client (the factory)
--
-- A key is prefix .. key; its Redis value is a one-byte type tag and the payload:
--
--   "s" .. bytes       a string            "b1" / "b0"     true / false
--   "n" .. %.17g       a number (exact)    "j" .. JSON     a table
--
-- set is SET [PX ms], add is SET NX [PX ms] (Redis forgets an expired key, so add re-claims it),
-- delete is DEL, exists is EXISTS: one command, one round trip each. incr is one script
-- (EVALSHA): it adds to an "n" value keeping its TTL (KEEPTTL), creates a missing key with the
-- ttl, and returns nil for any other tag, which becomes code "invalid"; the arithmetic is the
-- same double arithmetic as LuaJIT's, and the sum travels as %.17g text (never rounded to an
-- integer as a Lua number reply would be). A TTL is rounded up to whole milliseconds.
-- Failures: a connection that is down, a timeout, an error reply -> code "unavailable"
-- (a WRONGTYPE reply: "invalid"). The shared client reconnects by itself (zever.redis).
-- This file must not hold values in the process.

local errors = require "zever.errors"
local json = require "zever.json"
local redis_client = require "adapters.redis_client"

local type, format, setmetatable, tonumber, ceil = type, string.format, setmetatable, tonumber,
  math.ceil
local byte, sub = string.byte, string.sub

local M = {}

M.PREFIX = "zever:cache:"

local NOT_NUMBER = errors.new("cache", "invalid", "the value is not a number")

local INCR = [[
local v = redis.call('GET', KEYS[1])
local s
if v then
  if string.sub(v, 1, 1) ~= 'n' then return false end
  s = 'n' .. string.format('%.17g', tonumber(string.sub(v, 2)) + tonumber(ARGV[1]))
  redis.call('SET', KEYS[1], s, 'KEEPTTL')
  return s
end
s = 'n' .. string.format('%.17g', tonumber(ARGV[1]))
if ARGV[2] == '0' then
  redis.call('SET', KEYS[1], s)
else
  redis.call('SET', KEYS[1], s, 'PX', ARGV[2])
end
return s
]]

local B_S, B_N, B_B, B_J = byte("s"), byte("n"), byte("b"), byte("j")

local R = {}
R.__index = R

local fail = redis_client.failer("cache", "invalid")

local function encode(value)
  local t = type(value)
  if t == "string" then return "s" .. value end
  if t == "number" then return format("n%.17g", value) end
  if t == "boolean" then return value and "b1" or "b0" end
  return "j" .. json.encode(value)
end

local function decode(raw)
  local tag = byte(raw, 1)
  if tag == B_S then return sub(raw, 2) end
  if tag == B_N then return tonumber(sub(raw, 2)) end
  if tag == B_B then return byte(raw, 2) == 49 end   -- "1"
  if tag == B_J then return json.decode(sub(raw, 2)) end
  return nil   -- not written by this adapter: treated as absent
end

local function px(ttl)
  local ms = ceil(ttl * 1000)
  if ms < 1 then ms = 1 end
  return ms
end

function R:get(key)
  local raw, err = self.client:call("GET", self.prefix .. key)
  if raw == nil then
    if err then return fail(err) end
    return nil
  end
  return decode(raw)
end

function R:set(key, value, ttl, add)
  local k, v = self.prefix .. key, encode(value)
  local ok, err
  if add then
    if ttl > 0 then
      ok, err = self.client:call("SET", k, v, "NX", "PX", px(ttl))
    else
      ok, err = self.client:call("SET", k, v, "NX")
    end
  elseif ttl > 0 then
    ok, err = self.client:call("SET", k, v, "PX", px(ttl))
  else
    ok, err = self.client:call("SET", k, v)
  end
  if err then return fail(err) end
  return ok == "OK"
end

function R:delete(key)
  local n, err = self.client:call("DEL", self.prefix .. key)
  if not n then return fail(err) end
  return n > 0
end

function R:exists(key)
  local n, err = self.client:call("EXISTS", self.prefix .. key)
  if not n then return fail(err) end
  return n > 0
end

function R:incr(key, n, ttl)
  local keys, args = self.keys, self.args
  keys[1] = self.prefix .. key
  args[1], args[2] = format("%.17g", n), ttl > 0 and px(ttl) or 0
  local s, err = self.incr_script:call(keys, args)
  if s == nil then
    if err then return fail(err) end
    return nil, NOT_NUMBER
  end
  return tonumber(sub(s, 2))
end

-- Releases the shared client (the last user's close really closes it); a borrowed one stays.
R.close = redis_client.close

function M.new(opts)
  local self, err = redis_client.new("cache.redis", opts, "cache", M.PREFIX)
  if not self then return nil, err end
  self.incr_script = self.client:script(INCR)
  self.keys, self.args = {}, {}   -- reused by incr: EVALSHA's keys and args
  return setmetatable(self, R)
end

-- The adapter contract: section is the config's cache section; cache.url overrides
-- redis.url; an empty cache.prefix means M.PREFIX.
function M.open(section, ctx)
  local url, timeout = redis_client.config(section, ctx)
  local prefix = section.prefix
  if prefix == nil or prefix == "" then prefix = M.PREFIX end
  return M.new{ url = url, prefix = prefix, timeout = timeout }
end

return M
