-- adapters.queue.redis: the queue in Redis, for several processes or machines. Every operation
-- is one server-side script (EVALSHA through zever.redis), so it is atomic across processes, and
-- every script reads the time from the server (TIME), so clients need no synchronised clocks.
--
--   local impl = rq.new{ client = c | url = "redis://...", prefix = "zever:queue:",
--                        reclaim_batch = 100, clock = nil }
--   impl:push / pop / ack / nack / len / close     (zever.queue's adapter interface)
--   impl:reclaim(topic) -> reclaimed, more      gives expired leases back (pop does it first)
--   rq.open(section, ctx) -> a zever.queue over redis.shared(section.url or config.redis.url)
--
-- The keys of topic t share the hash tag {t} (one cluster slot per topic):
--
--   <prefix>{t}:ready     list of ids, oldest at the head (LPOP takes, RPUSH gives back)
--   <prefix>{t}:delayed   sorted set: id -> visible-at (ms)
--   <prefix>{t}:leased    sorted set: id -> lease deadline (ms)
--   <prefix>{t}:msg       hash: <id> -> payload, <id>:k kind, <id>:a attempt,
--                         <id>:e enqueued_at (ms), <id>:h headers JSON, <id>:t lease token
--   <prefix>{t}:seq       counter of ids (ids are unique within a topic)
--
-- pop first moves at most reclaim_batch expired leases back to ready (attempt + 1) and at most
-- reclaim_batch due delayed ids to ready, then LPOPs one id, bumps its lease token and leases it.
-- ack and nack settle only while the id is leased under the token the pop returned, so a lease
-- that expired and was reclaimed settles nothing (false), like the db adapter's guard.
-- The lease a pop returns is { token, topic } (ack and nack get no topic otherwise).
-- Failures (connection down, timeout, error reply) are nil, err with err.code "unavailable".
-- clock is for specs: a function returning seconds, sent to the scripts in place of TIME.

local zredis = require "zever.redis"
local redis_client = require "adapters.redis_client"

local type, error, format, setmetatable, tostring, tonumber = type, error, string.format,
  setmetatable, tostring, tonumber

local M = {}

local NULL = zredis.null

-- Shared by every script: now (ms) from ARGV[1] when given (specs), else the server's TIME.
-- Servers before 5.0 replicate a script verbatim unless told to replicate its effects, which
-- a script that reads TIME and then writes must do (from 5.0 on it is the default).
local NOW = [[
local now = tonumber(ARGV[1])
if not now then
  if redis.replicate_commands then redis.replicate_commands() end
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
local function ms(x) return string.format('%.3f', x) end
]]

-- Moves at most `batch` expired leases back to ready (attempt + 1) and at most `batch` due
-- delayed ids to ready; sets `reclaimed` and `more` (a bound was hit).
local RECLAIM = [[
local function reclaim(ready, delayed, leased, msg, batch)
  local n, more = 0, false
  local ids = redis.call('ZRANGEBYSCORE', leased, '-inf', ms(now), 'LIMIT', 0, batch)
  for i = 1, #ids do
    local id = ids[i]
    redis.call('ZREM', leased, id)
    redis.call('HINCRBY', msg, id .. ':a', 1)
    redis.call('RPUSH', ready, id)
  end
  n = #ids
  if n >= batch then more = true end
  local due = redis.call('ZRANGEBYSCORE', delayed, '-inf', ms(now), 'LIMIT', 0, batch)
  for i = 1, #due do
    redis.call('ZREM', delayed, due[i])
    redis.call('RPUSH', ready, due[i])
  end
  if #due >= batch then more = true end
  return n, more
end
]]

-- Makes id visible: after `delay` ms in the delayed set, or now at the tail of ready.
local ENQUEUE = [[
local function enqueue(ready, delayed, id, delay)
  if delay > 0 then
    redis.call('ZADD', delayed, ms(now + delay), id)
  else
    redis.call('RPUSH', ready, id)
  end
end
]]

-- KEYS: ready, delayed, msg, seq. ARGV: now|"", data, kind, headers|"", delay (ms).
local PUSH = NOW .. ENQUEUE .. [[
local id = redis.call('INCR', KEYS[4])
redis.call('HSET', KEYS[3], id, ARGV[2], id .. ':k', ARGV[3], id .. ':a', 1, id .. ':e', ms(now),
  id .. ':t', 0)
if ARGV[4] ~= '' then redis.call('HSET', KEYS[3], id .. ':h', ARGV[4]) end
enqueue(KEYS[1], KEYS[2], id, tonumber(ARGV[5]))
return id
]]

-- KEYS: ready, delayed, leased, msg. ARGV: now|"", visibility (ms), batch.
-- Returns { id, token, attempt, kind, enqueued_at (ms, a string), payload, headers | false }.
local POP = NOW .. RECLAIM .. [[
reclaim(KEYS[1], KEYS[2], KEYS[3], KEYS[4], tonumber(ARGV[3]))
local id = redis.call('LPOP', KEYS[1])
if not id then return false end
local token = redis.call('HINCRBY', KEYS[4], id .. ':t', 1)
redis.call('ZADD', KEYS[3], ms(now + tonumber(ARGV[2])), id)
local f = redis.call('HMGET', KEYS[4], id .. ':a', id .. ':k', id .. ':e', id, id .. ':h')
return { tonumber(id), token, tonumber(f[1]), tonumber(f[2]), f[3], f[4], f[5] }
]]

-- KEYS: ready, delayed, leased, msg. ARGV: now|"", batch. Returns { reclaimed, more (0/1) }.
local RECLAIM_ONLY = NOW .. RECLAIM .. [[
local n, more = reclaim(KEYS[1], KEYS[2], KEYS[3], KEYS[4], tonumber(ARGV[2]))
return { n, more and 1 or 0 }
]]

-- Settles id when it is leased under token. KEYS: ready, delayed, leased, msg.
-- ARGV: now|"", id, token, mode ("ack" | "requeue"), delay (ms). Returns 1 or 0.
local SETTLE = NOW .. ENQUEUE .. [[
local id = ARGV[2]
if redis.call('HGET', KEYS[4], id .. ':t') ~= ARGV[3] then return 0 end
if redis.call('ZREM', KEYS[3], id) == 0 then return 0 end
if ARGV[4] == 'ack' then
  redis.call('HDEL', KEYS[4], id, id .. ':k', id .. ':a', id .. ':e', id .. ':h', id .. ':t')
  return 1
end
redis.call('HINCRBY', KEYS[4], id .. ':a', 1)
enqueue(KEYS[1], KEYS[2], id, tonumber(ARGV[5]))
return 1
]]

-- KEYS: ready, delayed, leased. Messages not yet acked or dropped.
local LEN = [[
return redis.call('LLEN', KEYS[1]) + redis.call('ZCARD', KEYS[2]) + redis.call('ZCARD', KEYS[3])
]]

local R = {}
R.__index = R

local fail = redis_client.failer("queue")

-- The key lists of topic's scripts, built once per topic (never changed: safe to share):
-- k.push { ready, delayed, msg, seq }, k.four { ready, delayed, leased, msg },
-- k.len { ready, delayed, leased }.
local function keys_of(self, topic)
  local k = self.keys[topic]
  if k then return k end
  local base = self.prefix .. "{" .. topic .. "}:"
  local ready, delayed, leased, msg = base .. "ready", base .. "delayed", base .. "leased",
    base .. "msg"
  k = { push = { ready, delayed, msg, base .. "seq" }, four = { ready, delayed, leased, msg },
    len = { ready, delayed, leased } }
  self.keys[topic] = k
  return k
end

local function now_arg(self)
  local clock = self.clock
  if not clock then return "" end
  return format("%.3f", clock() * 1000)
end

function R:push(topic, data, kind, headers, delay)
  local id, err = self.s_push:call(keys_of(self, topic).push,
    { now_arg(self), data, kind, headers or "", format("%.3f", delay * 1000) })
  if not id then return fail(err) end
  return id
end

function R:pop(topic, visibility)
  local r, err = self.s_pop:call(keys_of(self, topic).four,
    { now_arg(self), format("%.3f", visibility * 1000), self.batch })
  if r == nil then
    if err then return fail(err) end
    return nil
  end
  local headers = r[7]
  if headers == NULL then headers = nil end
  return r[1], { tostring(r[2]), topic }, r[3], r[4], tonumber(r[5]) / 1000, r[6], headers
end

function R:reclaim(topic)
  if type(topic) ~= "string" or topic == "" then
    error("queue.redis: reclaim wants a topic", 2)
  end
  local r, err = self.s_reclaim:call(keys_of(self, topic).four, { now_arg(self), self.batch })
  if not r then return fail(err) end
  return r[1], r[2] == 1
end

local function settle(self, id, lease, mode, delay)
  local r, err = self.s_settle:call(keys_of(self, lease[2]).four,
    { now_arg(self), id, lease[1], mode, format("%.3f", delay * 1000) })
  if not r then return fail(err) end
  return r == 1
end

function R:ack(id, lease)
  return settle(self, id, lease, "ack", 0)
end

function R:nack(id, lease, requeue, delay)
  return settle(self, id, lease, requeue and "requeue" or "ack", delay)
end

function R:len(topic)
  local n, err = self.s_len:call(keys_of(self, topic).len, {})
  if not n then return fail(err) end
  return n
end

-- The client is given back (a shared client is really closed by its last user).
R.close = redis_client.close

-- opts: client (a zever.redis client; the caller keeps it) or url (redis.shared(url), closed by
-- close), prefix ("zever:queue:"), reclaim_batch (100), clock (specs).
function M.new(opts)
  if type(opts) ~= "table" then error("queue.redis.new: expects an options table", 2) end
  local batch = opts.reclaim_batch or 100
  if type(batch) ~= "number" or batch < 1 or batch % 1 ~= 0 then
    error("queue.redis: reclaim_batch must be an integer >= 1", 2)
  end
  if opts.clock ~= nil and type(opts.clock) ~= "function" then
    error("queue.redis: clock must be a function", 2)
  end
  local self, err = redis_client.new("queue.redis", opts, "queue", "zever:queue:")
  if not self then return nil, err end
  local client = self.client
  self.batch, self.clock, self.keys = batch, opts.clock, {}
  self.s_push, self.s_pop = client:script(PUSH), client:script(POP)
  self.s_reclaim, self.s_settle = client:script(RECLAIM_ONLY), client:script(SETTLE)
  self.s_len = client:script(LEN)
  return setmetatable(self, R)
end

-- The adapter contract: section.url (else the config's redis.url) names the server.
M.open = redis_client.opener(M.new)

return M
