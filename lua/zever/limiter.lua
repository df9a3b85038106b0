-- zever.limiter: the front-end of the rate-limiter battery (token bucket).
--
--   local lim = limiter.new{ rate = 10, burst = 20 }   -- a memory limiter (adapters.limiter.memory)
--   lim:allow(key[, cost]) -> allowed, remaining, retry_after | nil, err
--   lim:reset(key)         -> true | nil, err
--   lim:close()            -> true; every later call returns nil, err (code "closed")
--   lim.rate, lim.burst    the bucket's parameters (the rate-limit middleware reads them)
--
-- allowed is a boolean: a denial is a result, not an error. remaining is the whole number of
-- tokens left; retry_after the seconds until the cost fits (0 when allowed, math.huge when the
-- rate is 0). cost defaults to 1; a cost above burst is charged as burst. Keys are strings of
-- at most 256 bytes: a longer key is an expected failure (code "invalid"), since keys usually
-- come from requests; a key that is not a string, or a negative cost, raises.
--
-- limiter.wrap(impl) puts this front-end (zever.battery: the closed guard, close, stats) over an
-- adapter object (impl:allow(key, cost), impl:reset(key), impl:close(), impl.rate, impl.burst)
-- that may assume valid arguments; adapters build their errors with zever.errors ("limiter").
-- This module holds no state of its own and must not know any adapter but the default one of
-- new().

local battery = require "zever.battery"

local type, error, floor = type, error, math.floor
local check_string = battery.string

local M = {}

M.MAX_KEY = 256

local Limiter = battery.define("limiter", "the limiter is closed")
M.error = Limiter.error

local CLOSED = Limiter.CLOSED
local TOO_LONG = Limiter.error("invalid", "the key is longer than 256 bytes")

function Limiter:allow(key, cost)
  check_string(key, "limiter:allow", "key")
  if cost == nil then
    cost = 1
  elseif type(cost) ~= "number" or (cost ~= cost or cost < 0) then
    error("limiter:allow: cost must be a number >= 0", 2)
  end
  if self.closed then return nil, CLOSED end
  if #key > 256 then return nil, TOO_LONG end
  local allowed, remaining, retry_after = self.impl:allow(key, cost)
  if allowed == nil then return nil, remaining end
  return allowed, floor(remaining), retry_after
end

function Limiter:reset(key)
  check_string(key, "limiter:reset", "key")
  if self.closed then return nil, CLOSED end
  if #key > 256 then return nil, TOO_LONG end
  return self.impl:reset(key)
end

function M.wrap(impl)
  local lim = battery.object(Limiter, impl)
  lim.rate, lim.burst = impl.rate, impl.burst
  return lim
end

-- A memory limiter: opts as adapters.limiter.memory.new.
function M.new(opts)
  return battery.default(M.wrap, "adapters.limiter.memory", "limiter.new", opts)
end

return M
