-- adapters.limiter.memory: the in-process limiter: a process-wide C table (host/limiter/)
-- shared by every worker thread that opens the same name.
--
--   local impl = memory.new{ name = "default", rate = 10, burst = 20, max_keys = 100000,
--                            idle_ttl = 600, clock = nil }
--   impl:allow(key, cost) -> allowed, remaining, retry_after | nil, err   (valid arguments)
--   impl:reset(key)       -> true
--   impl:sweep([max_steps]) -> removed, more       drops idle keys, bounded work
--   impl:stats()          -> { entries, max_entries, evictions, expired }
--   impl:close()          -> true                  releases this state's reference
--   memory.open(section)  -> a zever.limiter over it, named after its options (the container's)
--
-- Opening a name that is already open with other options raises (a programmer error). clock
-- is for specs: a function returning seconds (a fake clock); without it the C core reads
-- CLOCK_MONOTONIC itself. allow goes through LuaJIT's FFI (one C call, no allocation); the
-- classic binding (zever.limiter_core) is the fallback when the host does not export the core.
-- Argument checks belong to the front-end (zever.limiter), not here.

local ffi = require "ffi"
local core = require "zever.limiter_core"
local limiter = require "zever.limiter"

local type, error, tostring, format = type, error, tostring, string.format

local M = {}

require "zever.cdef.limiter"

local C = ffi.C
local has_ffi = pcall(function() return C.zv_limiter_allow end)
local c_allow = has_ffi and C.zv_limiter_allow
local limiter_ptr = ffi.typeof("zv_limiter_t *")

local Memory = {}
Memory.__index = Memory

local function fail(code_name, message)
  local code = code_name == "TOOLONG" and "invalid" or code_name == "INVAL" and "invalid"
    or "unavailable"
  return nil, limiter.error(code, message)
end

local function now_of(self)
  local clock = self.clock
  if not clock then return 0 end
  return clock() * 1e9 + 1
end

if has_ffi then
  function Memory:allow(key, cost)
    local r = self.result
    local rc = c_allow(self.ptr, key, #key, cost, now_of(self), r)
    if rc ~= 0 then return fail(rc == -4 and "TOOLONG" or "NOMEM", "cannot admit the key") end
    return r.allowed ~= 0, r.remaining, r.retry_after
  end
else
  function Memory:allow(key, cost)
    local allowed, remaining, retry_after = self.handle:allow(key, cost, now_of(self))
    if allowed == nil then return fail(retry_after, remaining) end
    return allowed, remaining, retry_after
  end
end

function Memory:reset(key)
  local ok, msg, code = self.handle:reset(key)
  if ok == nil then return fail(code, msg) end
  return true
end

function Memory:sweep(max_steps)
  return self.handle:sweep(max_steps or 64, now_of(self))
end

function Memory:stats()
  return self.handle:stats()
end

function Memory:close()
  self.handle:release()
  self.ptr = nil
  return true
end

local function positive(name, v, default)
  if v == nil then return default end
  if type(v) ~= "number" or (v ~= v or v < 0) then
    error(format("limiter: %s must be a number >= 0", name), 3)
  end
  return v
end

function M.new(opts)
  if type(opts) ~= "table" then error("limiter.memory.new: expects an options table", 2) end
  local rate = positive("rate", opts.rate, 10)
  local burst = positive("burst", opts.burst, 20)
  local max_keys = positive("max_keys", opts.max_keys, 100000)
  local idle = positive("idle_ttl", opts.idle_ttl, 600)
  if burst < 1 then error("limiter: burst must be >= 1", 2) end
  if max_keys < 1 then error("limiter: max_keys must be >= 1", 2) end
  if opts.clock ~= nil and type(opts.clock) ~= "function" then
    error("limiter: clock must be a function", 2)
  end
  local name = opts.name or format("default:%s:%s:%s:%s", tostring(rate), tostring(burst),
    tostring(max_keys), tostring(idle))
  if type(name) ~= "string" then error("limiter: name must be a string", 2) end
  local handle, msg, code = core.open(name, rate, burst, max_keys, idle)
  if not handle then
    if code == "CONFLICT" then
      error(format('limiter: "%s" is already open with other options', name), 2)
    end
    error("limiter: " .. tostring(msg), 2)
  end
  return setmetatable({
    handle = handle,
    ptr = has_ffi and ffi.cast(limiter_ptr, handle:ptr()) or nil,
    result = ffi.new("zv_limiter_result_t"),
    clock = opts.clock,
    name = name,
    rate = rate,
    burst = burst,
  }, Memory)
end

-- The container's factory: section is the config's limiter section.
function M.open(section)
  return limiter.wrap(M.new{ rate = section.rate, burst = section.burst,
    max_keys = section.max_keys, idle_ttl = section.idle_ttl })
end

M.ffi = has_ffi

return M
