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
-- limiter.wrap(impl) puts this front-end over an adapter object (impl:allow(key, cost),
-- impl:reset(key), impl:close(), impl.rate, impl.burst) that may assume valid arguments.
-- limiter.error(code, message) builds the error objects every adapter returns. This module
-- holds no state of its own and must not know any adapter but the default one of new().

local type, error, setmetatable, floor = type, error, setmetatable, math.floor

local M = {}

M.MAX_KEY = 256

local Error = {}
Error.__index = Error
Error.__tostring = function(e) return "limiter: " .. e.code .. ": " .. e.message end

function M.error(code, message)
  return setmetatable({ code = code, message = message }, Error)
end

local CLOSED = M.error("closed", "the limiter is closed")
local TOO_LONG = M.error("invalid", "the key is longer than 256 bytes")

local Limiter = {}
Limiter.__index = Limiter

function Limiter:allow(key, cost)
  if type(key) ~= "string" then error("limiter:allow: key must be a string", 2) end
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
  if type(key) ~= "string" then error("limiter:reset: key must be a string", 2) end
  if self.closed then return nil, CLOSED end
  if #key > 256 then return nil, TOO_LONG end
  return self.impl:reset(key)
end

function Limiter:close()
  if self.closed then return true end
  self.closed = true
  return self.impl:close()
end

function M.wrap(impl)
  if type(impl) ~= "table" then error("limiter.wrap: expects an adapter object", 2) end
  return setmetatable({ impl = impl, rate = impl.rate, burst = impl.burst, closed = false },
    Limiter)
end

-- A memory limiter: opts as adapters.limiter.memory.new.
function M.new(opts)
  if opts ~= nil and type(opts) ~= "table" then error("limiter.new: opts must be a table", 2) end
  local ok, impl = pcall(require("adapters.limiter.memory").new, opts or {})
  if not ok then error(impl, 2) end
  return M.wrap(impl)
end

return M
