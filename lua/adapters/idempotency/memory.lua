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
--   memory.open(section)    -> impl over it (the adapter contract)
--
-- begin and complete go through LuaJIT's FFI into the core with a buffer this object owns (it
-- grows to the largest result replayed); the classic binding (zever.idempotency_core) does the
-- rest and is the fallback when the host does not export the core (new{ classic = true } takes
-- it on purpose: the specs run both paths). Results are tagged: strings
-- as they are, numbers as %.17g text, booleans as one byte, tables as JSON (zever.json). clock
-- is for specs: a function returning seconds; without it the core reads CLOCK_MONOTONIC. An
-- open of a name with other bounds raises.

local ffi = require "ffi"
local core = require "zever.idempotency_core"
local errors = require "zever.errors"
local stripes = require "adapters.stripes"
local result_codec = require "adapters.idempotency_result"

local type, error, tonumber, format, setmetatable = type, error, tonumber, string.format,
  setmetatable
local ffi_string = ffi.string

local M = {}

require "zever.cdef.idempotency"

local C = ffi.C
local has_ffi = pcall(function() return C.zv_idem_begin and C.zv_idem_complete end)
local idem_ptr = ffi.typeof("zv_idem_t *")

local encode, decode = result_codec.encode, result_codec.decode
local IN_PROGRESS, KEY_MISMATCH = result_codec.IN_PROGRESS, result_codec.KEY_MISMATCH
local COMPLETED, NO_RESERVATION = result_codec.COMPLETED, result_codec.NO_RESERVATION
local RESERVED, REPLAY, PENDING = 0, 1, 2
local E = errors.E
local ERANGE, TOOLONG, CONFLICT, NOTFOUND = E.RANGE, E.TOOLONG, E.CONFLICT, E.NOTFOUND

local TOO_BIG = errors.new("idempotency", "invalid", "the entry is larger than the store's byte budget")
local NO_MEMORY = errors.core("idempotency", E.NOMEM)

-- Memory: the FFI path; Classic: the classic binding's (see adapters.stripes).
local Memory, Classic = stripes.classes()

local now_of = stripes.now

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
end

function Classic:begin(key, fp, ttl, pending)
  local status, a, b = self.handle:begin(key, fp, ttl * 1e9, pending * 1e9, now_of(self))
  -- A failure is nil, message, code (runtime/lbind.h's zv_l_fail).
  if status == "reserved" then return { replay = false, token = a } end
  if status == "replay" then return { replay = true, result = decode(a, b) } end
  if status == "pending" then return nil, IN_PROGRESS end
  if status == "mismatch" then return nil, KEY_MISMATCH end
  return failure(b)
end

function Classic:complete(key, result, token)
  local raw, kind = encode(result)
  local ok, _, code = self.handle:complete(key, token or 0, raw, kind, now_of(self))
  if ok then return true end
  return failure(code)
end

if not has_ffi then Memory.begin, Memory.complete = Classic.begin, Classic.complete end

function Memory:forget(key, token)
  self.handle:forget(key, type(token) == "number" and token or 0, now_of(self))
  return true
end

stripes.methods(Memory, 256)

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
  local handle, name = stripes.open("idempotency", opts,
    format("default:%d:%d", max_keys, max_bytes), "other bounds", core.open, max_keys, max_bytes)
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
  }, (has_ffi and not opts.classic) and Memory or Classic)
end

-- The adapter contract: section is the config's idempotency section.
function M.open(section)
  return M.new{ max_keys = section.max_keys, max_bytes = section.max_bytes }
end

M.ffi = has_ffi

return M
