-- adapters.breaker.redis: breakers on a Redis server, shared by every process (and machine)
-- that uses the server with the same prefix. The state machine is the memory adapter's (see
-- adapters/breaker/memory.lua for the handle's contract), kept in one hash per breaker and run
-- by two scripts, each atomic on the server:
--
--   prefix .. name -> hash { st (0 closed, 1 open, 2 half open), until (ms), trials, trial_ok,
--                            out (the window: one digit per call, 0 none .. 4 failed+slow),
--                            pos, calls, failures, slow, rejected, opened }
--
--   local impl = rbreaker.new{ url = "redis://127.0.0.1:6379/0" | client = c,
--                              prefix = "zever:breaker:" }
--   impl:open(name, cfg, clock) -> handle ;  impl:close() ;  rbreaker.open(section, ctx)
--
-- Round trips: a closed breaker's allow is answered from the state the last reply carried, so a
-- call through a closed breaker costs one script (its record); an open or half-open one costs
-- two (allow, then record). Another process's trip is seen at this process's next reply: the
-- calls already let through still run. Time is the clients' wall clock (milliseconds, sent with
-- each script; opts.clock in specs), so the machines sharing a breaker must agree on the time
-- within a small part of open_for. Redis unavailable: the guard lets calls through (the breaker
-- protects the upstream, it must not become an outage of its own) and the outcome is not
-- recorded; stats() counts those in `errors`.

local redis_client = require "adapters.redis_client"

local setmetatable, tonumber, floor, pairs = setmetatable, tonumber, math.floor, pairs
local wall = require("zever.sys").wall

local M = {}

-- KEYS[1] the breaker; ARGV: now (ms), half_open_calls. -> { rc (0 go, 1 open, 2 trials
-- taken), retry (ms), state }
M.ALLOW = [[
local k = KEYS[1]
local now, hoc = tonumber(ARGV[1]), tonumber(ARGV[2])
local h = redis.call('HMGET', k, 'st', 'until', 'trials')
local st = tonumber(h[1]) or 0
if st == 0 then return { 0, 0, 0 } end
local trials = tonumber(h[3]) or 0
if st == 1 then
  local u = tonumber(h[2]) or 0
  if now < u then
    redis.call('HINCRBY', k, 'rejected', 1)
    return { 1, u - now, 1 }
  end
  redis.call('HSET', k, 'st', 2, 'trials', 0, 'trial_ok', 0)
  trials = 0
end
if trials >= hoc then
  redis.call('HINCRBY', k, 'rejected', 1)
  return { 2, 0, 2 }
end
redis.call('HSET', k, 'trials', trials + 1)
return { 0, 0, 2 }
]]

-- KEYS[1] the breaker; ARGV: failed (0/1), slow (0/1), now (ms), window, min_calls,
-- failure_rate, slow_rate, open_for (ms), half_open_calls. -> { state, until (ms) }
M.RECORD = [[
local k = KEYS[1]
local failed, slow, now = ARGV[1] == '1', ARGV[2] == '1', tonumber(ARGV[3])
local window, min_calls = tonumber(ARGV[4]), tonumber(ARGV[5])
local frate, srate, open_ms, hoc = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]),
  tonumber(ARGV[9])
local h = redis.call('HMGET', k, 'st', 'until', 'pos', 'calls', 'failures', 'slow', 'out')
local st = tonumber(h[1]) or 0
local empty = string.rep('0', window)
local function trip()
  redis.call('HSET', k, 'st', 1, 'until', now + open_ms, 'trials', 0, 'trial_ok', 0)
  redis.call('HINCRBY', k, 'opened', 1)
  return { 1, now + open_ms }
end
if st == 2 then
  if failed or slow then return trip() end
  if redis.call('HINCRBY', k, 'trial_ok', 1) >= hoc then
    redis.call('HSET', k, 'st', 0, 'out', empty, 'pos', 0, 'calls', 0, 'failures', 0,
      'slow', 0, 'trials', 0, 'trial_ok', 0)
    return { 0, 0 }
  end
  return { 2, 0 }
end
if st == 1 then return { 1, tonumber(h[2]) or 0 } end
local out = h[7]
if not out or #out ~= window then out = empty end
local pos = (tonumber(h[3]) or 0) % window + 1
local calls, fails, slows = tonumber(h[4]) or 0, tonumber(h[5]) or 0, tonumber(h[6]) or 0
local old = tonumber(string.sub(out, pos, pos))
if old ~= 0 then
  calls = calls - 1
  if old == 2 or old == 4 then fails = fails - 1 end
  if old == 3 or old == 4 then slows = slows - 1 end
end
local v = 1
if failed then v = slow and 4 or 2 elseif slow then v = 3 end
out = string.sub(out, 1, pos - 1) .. v .. string.sub(out, pos + 1)
calls = calls + 1
if failed then fails = fails + 1 end
if slow then slows = slows + 1 end
redis.call('HSET', k, 'out', out, 'pos', pos, 'calls', calls, 'failures', fails, 'slow', slows)
if calls >= min_calls and (fails >= frate * calls or slows >= srate * calls) then
  return trip()
end
return { 0, 0 }
]]

-- KEYS[1] the breaker; ARGV: window. Closed with an empty window (rejected, opened stay).
M.RESET = [[
redis.call('HSET', KEYS[1], 'st', 0, 'out', string.rep('0', tonumber(ARGV[1])), 'pos', 0,
  'calls', 0, 'failures', 0, 'slow', 0, 'trials', 0, 'trial_ok', 0)
return 1
]]

local H = {}
H.__index = H

local function now_ms(h)
  local clock = h.clock
  return floor((clock and clock() or wall()) * 1000 + 0.5)
end

function H:allow()
  if self.cached == 0 then return 0 end
  local r = self.owner.allow_script:call({ self.key }, { now_ms(self), self.half_open_calls })
  if r == nil then
    self.errors = self.errors + 1
    return 0
  end
  self.cached = r[3]
  if r[1] == 0 then return 0 end
  return r[1], r[2] / 1000
end

function H:record(failed, took)
  local slow_call = self.slow_call
  local slow = slow_call and took and took >= slow_call
  local r = self.owner.record_script:call({ self.key }, { failed and 1 or 0, slow and 1 or 0,
    now_ms(self), self.window, self.min_calls, self.failure_rate, self.slow_rate, self.open_ms,
    self.half_open_calls })
  if r == nil then
    self.errors = self.errors + 1
    return self.cached
  end
  self.cached = r[1]
  return r[1]
end

function H:stats()
  local c = self.owner.client
  local r = c:call("HMGET", self.key, "st", "until", "calls", "failures", "slow", "rejected",
    "opened")
  if r == nil then
    return { state = self.cached, calls = 0, failures = 0, slow = 0, rejected = 0, opened = 0,
      retry_after = 0, errors = self.errors + 1 }
  end
  local st, retry = tonumber(r[1]) or 0, 0
  if st == 1 then
    local left = (tonumber(r[2]) or 0) - now_ms(self)
    if left <= 0 then st = 2 else retry = left / 1000 end
  end
  return { state = st, calls = tonumber(r[3]) or 0, failures = tonumber(r[4]) or 0,
    slow = tonumber(r[5]) or 0, rejected = tonumber(r[6]) or 0, opened = tonumber(r[7]) or 0,
    retry_after = retry, errors = self.errors }
end

function H:reset()
  self.owner.reset_script:call({ self.key }, { self.window })
  self.cached = 0
end

local R = {}
R.__index = R

function R:open(name, cfg, clock)
  local h = self.by_name[name]
  if h then return h end
  h = setmetatable({ owner = self, key = self.prefix .. name, clock = clock, cached = -1,
    errors = 0, failure_rate = cfg.failure_rate, slow_rate = cfg.slow_rate,
    slow_call = cfg.slow_call, window = cfg.window, min_calls = cfg.min_calls,
    open_ms = floor(cfg.open_for * 1000 + 0.5), half_open_calls = cfg.half_open_calls }, H)
  self.by_name[name] = h
  return h
end

function R:stats()
  local n = 0
  for _ in pairs(self.by_name) do n = n + 1 end
  return { breakers = n }
end

local close = redis_client.close
function R:close()
  self.by_name = {}
  return close(self)
end

-- opts: url (the worker's shared client for it) or client (one the caller owns); prefix
-- ("zever:breaker:"), timeout (seconds, for the shared client). nil, err for an invalid url.
function M.new(opts)
  local self, err = redis_client.new("breaker.redis", opts, "breaker", "zever:breaker:")
  if not self then return nil, err end
  local c = self.client
  self.allow_script, self.record_script = c:script(M.ALLOW), c:script(M.RECORD)
  self.reset_script = c:script(M.RESET)
  self.by_name = {}
  return setmetatable(self, R)
end

M.open = redis_client.opener(M.new)

return M
