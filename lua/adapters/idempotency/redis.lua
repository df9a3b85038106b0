-- adapters.idempotency.redis: the idempotency store on a Redis server, shared by every process
-- and machine that uses the server. begin and complete are ONE Lua script each (EVALSHA: one
-- round trip, atomic), forget is one command (DEL) or, with a token, one script.
--
--   local impl = ridem.new{ url = "redis://127.0.0.1:6379/0" | client = c,
--                           prefix = "zever:idem:", timeout = 5 }
--   impl:begin(key, fp, ttl, pending_ttl) / complete(key, result, token) / forget(key, token)
--   impl:close()                  (valid arguments: zever.idempotency checks them)
--   ridem.open(section, ctx)      -> impl over it (the adapter contract)
--
-- An entry is a hash at prefix .. "k:" .. key:
--
--   f  fingerprint        s  "p" (pending) or "c" (complete)     t  token (reservation number)
--   l  ttl in ms, applied when the entry completes                k, r  result kind and bytes
--
-- and its expiry is Redis' own (PEXPIRE pending_ttl at begin, ttl at complete): an expired key
-- is absent, so it can be begun again, with no sweep. Tokens come from INCR on prefix .. "seq"
-- inside the begin script, so they are unique across every client of the server. Results are
-- tagged as in the memory adapter (strings as they are, numbers as %.17g, booleans as one byte,
-- tables as JSON). Time is the server's. A connection failure is nil, err with code
-- "unavailable" (the middleware then answers 503: it fails closed).

local redis_client = require "adapters.redis_client"
local result_codec = require "adapters.idempotency_result"

local type, tonumber, format, setmetatable, floor = type, tonumber, string.format, setmetatable,
  math.floor

local M = {}

-- KEYS[1] the entry, KEYS[2] the token sequence; ARGV fingerprint, pending_ttl ms, ttl ms.
-- Returns {0, token} reserved, {1, kind, bytes} replay, {2} pending, {3} fingerprint mismatch.
M.BEGIN = [[
local e = redis.call('HMGET', KEYS[1], 'f', 's', 'k', 'r')
if e[1] then
  if e[1] ~= ARGV[1] then return {3} end
  if e[2] ~= 'c' then return {2} end
  return {1, e[3], e[4]}
end
local token = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'f', ARGV[1], 's', 'p', 't', token, 'l', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {0, token}
]]

-- KEYS[1] the entry; ARGV token ("" for whoever holds the key), kind, bytes.
-- Returns 0 stored, 1 no live reservation (or another holder's), 2 already complete.
M.COMPLETE = [[
local e = redis.call('HMGET', KEYS[1], 's', 't', 'l')
if not e[1] or (ARGV[1] ~= '' and ARGV[1] ~= e[2]) then return 1 end
if e[1] == 'c' then return 2 end
redis.call('HSET', KEYS[1], 's', 'c', 'k', ARGV[2], 'r', ARGV[3])
redis.call('PEXPIRE', KEYS[1], e[3])
return 0
]]

-- KEYS[1] the entry; ARGV token. Deletes the entry only while that reservation holds it.
M.FORGET = [[
if redis.call('HGET', KEYS[1], 't') == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
]]


local encode, decode = result_codec.encode, result_codec.decode
local IN_PROGRESS, KEY_MISMATCH = result_codec.IN_PROGRESS, result_codec.KEY_MISMATCH
local COMPLETED, NO_RESERVATION = result_codec.COMPLETED, result_codec.NO_RESERVATION
local unavailable = redis_client.failer("idempotency")

-- A token as the server stores it ("" for none): tokens are the INCR numbers begin hands out.
local function token_arg(token)
  if type(token) == "number" and token > 0 then return format("%d", token) end
  if type(token) == "string" then return token end
  return ""
end

local function ms(seconds)
  local v = floor(seconds * 1000 + 0.5)
  return v < 1 and 1 or v
end

local R = {}
R.__index = R

function R:begin(key, fp, ttl, pending)
  local keys, args = self.keys2, self.args
  keys[1] = self.prefix .. "k:" .. key
  args[1], args[2], args[3] = fp, ms(pending), ms(ttl)
  local r, err = self.begin_script:call(keys, args)
  if not r then return unavailable(err) end
  local status = r[1]
  if status == 0 then return { replay = false, token = r[2] } end
  if status == 1 then return { replay = true, result = decode(r[3], tonumber(r[2])) } end
  if status == 2 then return nil, IN_PROGRESS end
  return nil, KEY_MISMATCH
end

function R:complete(key, result, token)
  local raw, kind = encode(result)
  local keys, args = self.keys1, self.args
  keys[1] = self.prefix .. "k:" .. key
  args[1], args[2], args[3] = token_arg(token), kind, raw
  local rc, err = self.complete_script:call(keys, args)
  args[3] = nil   -- do not pin a large result
  if not rc then return unavailable(err) end
  if rc == 0 then return true end
  if rc == 2 then return nil, COMPLETED end
  return nil, NO_RESERVATION
end

function R:forget(key, token)
  local k = self.prefix .. "k:" .. key
  local tok = token_arg(token)
  local ok, err
  if tok == "" then
    ok, err = self.client:call("DEL", k)
  else
    self.keys1[1], self.fargs[1] = k, tok
    ok, err = self.forget_script:call(self.keys1, self.fargs)
  end
  if not ok then return unavailable(err) end
  return true
end

R.close = redis_client.close

-- opts: url (the worker's shared client for it) or client (a zever.redis client the caller
-- owns and closes); prefix ("zever:idem:"); timeout (seconds, for the shared client). Raises
-- on bad options; nil, err when the url is invalid.
function M.new(opts)
  local self, err = redis_client.new("idempotency.redis", opts, "idempotency", "zever:idem:")
  if not self then return nil, err end
  local client = self.client
  self.begin_script = client:script(M.BEGIN)
  self.complete_script = client:script(M.COMPLETE)
  self.forget_script = client:script(M.FORGET)
  self.keys1, self.keys2 = { "" }, { "", self.prefix .. "seq" }
  self.args, self.fargs = { "", "", "" }, { "" }
  return setmetatable(self, R)
end

-- The adapter contract: section.url (else the config's redis.url) names the server.
M.open = redis_client.opener(M.new)

return M
