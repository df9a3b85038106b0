-- adapters.lock.memory: leases in a process-wide C table (host/lock/), shared by every worker
-- thread that opens the same name: exclusive across the threads of one `zever serve`, not
-- across processes (use db or redis for that).
--
--   local impl = memory.new{ name = "default", clock = nil }
--   impl:acquire(key, ttl)        -> fence, fence | false | nil, err   (valid arguments)
--   impl:extend(key, token, ttl)  -> true | false
--   impl:unlock(key, token)       -> true | false
--   impl:holder(key)              -> fence, ttl_left | false
--   impl:sweep([max_steps])       -> removed, more     drops free and expired entries
--   impl:stats()                  -> { entries, acquired, contended, expired }
--   impl:clear()                  drops every entry of the named table
--   impl:close()                  releases this state's reference
--   memory.open(section)          -> impl (the adapter contract)
--
-- The fence is the owner token too (the table hands each lease a fence no other lease had).
-- acquire, extend and unlock call the core through LuaJIT's FFI (host/lock/lock_ffi.h: one C
-- call, no allocation, compiled into the caller's trace); the classic binding
-- (zever.lock_core) is the fallback when the host does not export the core.
-- clock is for specs: a function returning seconds; without it the core reads CLOCK_MONOTONIC.
-- Argument checks belong to the front-end (zever.lock), not here.

local ffi = require "ffi"
local core = require "zever.lock_core"
local errors = require "zever.errors"
local stripes = require "adapters.stripes"

local setmetatable, tonumber = setmetatable, tonumber

local M = {}

require "zever.cdef.lock"

local C = ffi.C
local has_ffi = pcall(function() return C.zv_lock_acquire and C.zv_lock_unlock end)
local lock_ptr = ffi.typeof("zv_lock_t *")

-- Memory: the FFI path; Classic: the classic binding's (see adapters.stripes).
local Memory, Classic = stripes.classes()

local now_of = stripes.now

local function fail(msg, code)
  return nil, errors.core("lock", code, msg)
end

if has_ffi then
  local c_acquire, c_extend, c_unlock = C.zv_lock_acquire, C.zv_lock_extend, C.zv_lock_unlock

  function Memory:acquire(key, ttl)
    local out = self.out
    local rc = c_acquire(self.ptr, key, #key, ttl * 1e9, now_of(self), out)
    if rc == 0 then
      local fence = tonumber(out[0])
      return fence, fence
    end
    if rc == 1 then return false end
    return nil, errors.core("lock", rc)
  end

  function Memory:extend(key, token, ttl)
    local rc = c_extend(self.ptr, key, #key, token, ttl * 1e9, now_of(self))
    if rc < 0 then return nil, errors.core("lock", rc) end
    return rc == 0
  end

  function Memory:unlock(key, token)
    local rc = c_unlock(self.ptr, key, #key, token, now_of(self))
    if rc < 0 then return nil, errors.core("lock", rc) end
    return rc == 0
  end
end

function Classic:acquire(key, ttl)
  local fence, msg, code = self.handle:acquire(key, ttl * 1e9, now_of(self))
  if fence == nil then return fail(msg, code) end
  if not fence then return false end
  return fence, fence
end

function Classic:extend(key, token, ttl)
  local ok, msg, code = self.handle:extend(key, token, ttl * 1e9, now_of(self))
  if ok == nil then return fail(msg, code) end
  return ok
end

function Classic:unlock(key, token)
  local ok, msg, code = self.handle:unlock(key, token, now_of(self))
  if ok == nil then return fail(msg, code) end
  return ok
end

if not has_ffi then
  Memory.acquire, Memory.extend, Memory.unlock = Classic.acquire, Classic.extend, Classic.unlock
end

function Memory:holder(key)
  local fence, left = self.handle:holder(key, now_of(self))
  if not fence then return false end
  return fence, left / 1e9
end

stripes.methods(Memory, 256)

-- opts: name (tables are shared by name across the worker threads; "default"), clock,
-- classic (true: the classic binding's path even when the FFI one exists; specs run both).
function M.new(opts)
  if type(opts) ~= "table" then error("lock.memory.new: expects an options table", 2) end
  local handle, name = stripes.open("lock", opts, "default", "", core.open)
  return setmetatable({
    handle = handle,
    ptr = has_ffi and ffi.cast(lock_ptr, handle:ptr()) or nil,
    out = ffi.new("uint64_t[1]"),
    clock = opts.clock,
    name = name,
  }, (has_ffi and not opts.classic) and Memory or Classic)
end

-- The adapter contract: section is the config's lock section.
function M.open()
  return M.new{}
end

M.ffi = has_ffi

return M
