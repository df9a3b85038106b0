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
-- classic binding (zever.limiter_core) is the fallback when the host does not export the core
-- (new{ classic = true } takes it on purpose: the specs run both paths).
-- Argument checks belong to the front-end (zever.limiter), not here.

local ffi = require "ffi"
local core = require "zever.limiter_core"
local errors = require "zever.errors"
local stripes = require "adapters.stripes"

local type, error, tostring, format = type, error, tostring, string.format

local M = {}

require "zever.cdef.limiter"

local C = ffi.C
local has_ffi = pcall(function() return C.zv_limiter_allow end)
local c_allow = has_ffi and C.zv_limiter_allow
local limiter_ptr = ffi.typeof("zv_limiter_t *")

-- Memory: the FFI path; Classic: the classic binding's (see adapters.stripes).
local Memory, Classic = stripes.classes()

local E = errors.E

local function fail(rc, message)
  return nil, errors.core("limiter", rc, message)
end

local now_of = stripes.now

if has_ffi then
  function Memory:allow(key, cost)
    local r = self.result
    local rc = c_allow(self.ptr, key, #key, cost, now_of(self), r)
    if rc ~= 0 then return fail(rc == E.TOOLONG and rc or E.NOMEM, "cannot admit the key") end
    return r.allowed ~= 0, r.remaining, r.retry_after
  end
end

function Classic:allow(key, cost)
  local allowed, remaining, retry_after = self.handle:allow(key, cost, now_of(self))
  if allowed == nil then return fail(retry_after, remaining) end -- nil, message, code
  return allowed, remaining, retry_after
end

if not has_ffi then Memory.allow = Classic.allow end

function Memory:reset(key)
  local ok, msg, code = self.handle:reset(key)
  if ok == nil then return fail(code, msg) end
  return true
end

stripes.methods(Memory, 64)

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
  local handle, name = stripes.open("limiter", opts, format("default:%s:%s:%s:%s",
    tostring(rate), tostring(burst), tostring(max_keys), tostring(idle)), "other options",
    core.open, rate, burst, max_keys, idle)
  return setmetatable({
    handle = handle,
    ptr = has_ffi and ffi.cast(limiter_ptr, handle:ptr()) or nil,
    result = ffi.new("zv_limiter_result_t"),
    clock = opts.clock,
    name = name,
    rate = rate,
    burst = burst,
  }, (has_ffi and not opts.classic) and Memory or Classic)
end

-- The adapter contract: section is the config's limiter section.
function M.open(section)
  return M.new{ rate = section.rate, burst = section.burst, max_keys = section.max_keys,
    idle_ttl = section.idle_ttl }
end

M.ffi = has_ffi

return M
