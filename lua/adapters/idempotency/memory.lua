-- adapters.idempotency.memory: the in-process idempotency store: a process-wide C table
-- (host/idempotency/) bounded by max_keys and max_bytes, shared by every worker thread that
-- opens the same name.
--
--   local impl = memory.new{ name = "default", max_keys = 100000, max_bytes = 64 MiB,
--                            clock = nil }
--   impl:begin(key, fp, ttl, pending_ttl) / complete(key, result, token) / forget(key, token)
--   impl:close()                  (valid arguments: zever.idempotency checks them)
--   impl:sweep([max_steps]) -> removed, more    expired entries, bounded work
--   impl:stats()            -> { entries, pending, bytes, max_keys, max_bytes, evictions, expired }
--   impl:clear()
--   memory.open(section)    -> a zever.idempotency over it (the container's factory)
--
-- begin and complete go through LuaJIT's FFI into the core with a buffer this object owns (it
-- grows to the largest result replayed); the classic binding (zever.idempotency_core) does the
-- rest and is the fallback when the host does not export the core. Results are tagged: strings
-- as they are, numbers as %.17g text, booleans as one byte, tables as JSON (zever.json). clock
-- is for specs: a function returning seconds; without it the core reads CLOCK_MONOTONIC. An
-- open of a name with other bounds raises.

local ffi = require "ffi"
local core = require "zever.idempotency_core"
local idempotency = require "zever.idempotency"
local result_codec = require "adapters.idempotency_result"

local type, error, tostring, tonumber, format, setmetatable = type, error, tostring, tonumber,
  string.format, setmetatable
local ffi_string = ffi.string

local M = {}

require "zever.cdef.idempotency"

local C = ffi.C
local has_ffi = pcall(function() return C.zv_idem_begin and C.zv_idem_complete end)
local idem_ptr = ffi.typeof("zv_idem_t *")

local encode, decode = result_codec.encode, result_codec.decode
local RESERVED, REPLAY, PENDING = 0, 1, 2
local ERANGE, TOOLONG, CONFLICT, NOTFOUND = -3, -4, -5, -6

local IN_PROGRESS, KEY_MISMATCH = idempotency.IN_PROGRESS, idempotency.KEY_MISMATCH
local TOO_BIG = idempotency.error("invalid", "the entry is larger than the store's byte budget")
local COMPLETED = idempotency.error("invalid", "the key is already complete")
local NO_RESERVATION = idempotency.error("not_found", "no live reservation for the key")
local NO_MEMORY = idempotency.error("unavailable", "out of memory")

local Memory = {}
Memory.__index = Memory

local function now_of(self)
  local clock = self.clock
  if not clock then return 0 end
  return clock() * 1e9 + 1
end

local function failure(code)
  if code == TOOLONG or code == "TOOLONG" then return nil, TOO_BIG end
  if code == NOTFOUND or code == "NOTFOUND" then return nil, NO_RESERVATION end
  if code == CONFLICT or code == "CONFLICT" then return nil, COMPLETED end
  return nil, NO_MEMORY
end

if has_ffi then
  local c_begin, c_complete = C.zv_idem_begin, C.zv_idem_complete

  function Memory:begin(key, fp, ttl, pending)
    local r, now = self.r, now_of(self)
    local rc = c_begin(self.ptr, key, #key, fp, #fp, ttl * 1e9, pending * 1e9, now, self.buf,
      self.cap, r)
    while rc == ERANGE do
      local need = tonumber(r.len)
      self.cap = need
      self.buf = ffi.new("char[?]", need)
      rc = c_begin(self.ptr, key, #key, fp, #fp, ttl * 1e9, pending * 1e9, now, self.buf,
        self.cap, r)
    end
    if rc ~= 0 then return failure(rc) end
    local status = r.status
    if status == RESERVED then return { replay = false, token = tonumber(r.token) } end
    if status == REPLAY then
      return { replay = true, result = decode(ffi_string(self.buf, r.len), r.type) }
    end
    if status == PENDING then return nil, IN_PROGRESS end
    return nil, KEY_MISMATCH
  end

  function Memory:complete(key, result, token)
    local raw, kind = encode(result)
    local rc = c_complete(self.ptr, key, #key, token or 0, kind, raw, #raw, now_of(self))
    if rc == 0 then return true end
    return failure(rc)
  end
else
  function Memory:begin(key, fp, ttl, pending)
    local status, a, b = self.handle:begin(key, fp, ttl * 1e9, pending * 1e9, now_of(self))
    if status == "reserved" then return { replay = false, token = a } end
    if status == "replay" then return { replay = true, result = decode(a, b) } end
    if status == "pending" then return nil, IN_PROGRESS end
    if status == "mismatch" then return nil, KEY_MISMATCH end
    return failure(b)
  end

  function Memory:complete(key, result, token)
    local raw, kind = encode(result)
    local ok, _, code = self.handle:complete(key, token or 0, raw, kind, now_of(self))
    if ok then return true end
    return failure(code)
  end
end

function Memory:forget(key, token)
  self.handle:forget(key, type(token) == "number" and token or 0, now_of(self))
  return true
end

function Memory:sweep(max_steps)
  return self.handle:sweep(max_steps or 256, now_of(self))
end

function Memory:stats()
  return self.handle:stats()
end

function Memory:clear()
  self.handle:clear()
end

function Memory:close()
  self.handle:release()
  self.ptr = nil
  return true
end

local MiB = 1024 * 1024

local function count(opts, name, default)
  local v = opts[name]
  if v == nil then return default end
  if type(v) ~= "number" or v ~= v or v < 1 or v == math.huge then
    error(format("idempotency: %s must be a number >= 1", name), 3)
  end
  return v
end

function M.new(opts)
  if type(opts) ~= "table" then error("idempotency.memory.new: expects an options table", 2) end
  local max_keys = count(opts, "max_keys", 100000)
  local max_bytes = count(opts, "max_bytes", 64 * MiB)
  if opts.clock ~= nil and type(opts.clock) ~= "function" then
    error("idempotency: clock must be a function", 2)
  end
  local name = opts.name or format("default:%d:%d", max_keys, max_bytes)
  if type(name) ~= "string" then error("idempotency: name must be a string", 2) end
  local handle, msg, code = core.open(name, max_keys, max_bytes)
  if not handle then
    if code == "CONFLICT" then
      error(format('idempotency: "%s" is already open with other bounds', name), 2)
    end
    error("idempotency: " .. tostring(msg), 2)
  end
  local cap = 512
  return setmetatable({
    handle = handle,
    ptr = has_ffi and ffi.cast(idem_ptr, handle:ptr()) or nil,
    buf = ffi.new("char[?]", cap),
    cap = cap,
    r = has_ffi and ffi.new("zv_idem_begin_t") or nil,
    clock = opts.clock,
    name = name,
    max_keys = max_keys,
    max_bytes = max_bytes,
  }, Memory)
end

-- The container's factory: section is the config's idempotency section.
function M.open(section)
  return idempotency.wrap(M.new{ max_keys = section.max_keys, max_bytes = section.max_bytes },
    { ttl = section.ttl, pending_ttl = section.pending_ttl })
end

M.ffi = has_ffi

return M
