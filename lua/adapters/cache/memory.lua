-- adapters.cache.memory: the in-process cache: a process-wide C table (host/cache/) with a byte
-- budget and LRU eviction, shared by every worker thread that opens the same name.
--
--   local impl = memory.new{ name = "default", max_bytes = 64 MiB, clock = nil }
--   impl:get(k) / set(k, v, ttl, add) / delete(k) / incr(k, n, ttl) / exists(k) / close()
--                              (valid arguments: zever.cache checks them)
--   impl:get_unless(k, known) -> true when k holds the string known, else what get(k) returns
--                              (zever.session: a remembered record costs no new string)
--   impl:sweep([max_steps]) -> removed, more    expired entries, bounded work
--   impl:stats()            -> { entries, bytes, max_bytes, evictions, expired }
--   impl:clear()
--   memory.open(section)    -> impl (the adapter contract; the registry wraps it in zever.cache)
--
-- get and set go through LuaJIT's FFI into the core with a buffer this object owns (it grows to
-- the largest value read); the classic binding (zever.cache_core) does the rest and is the
-- fallback when the host does not export the core (new{ classic = true } takes it on purpose:
-- the specs run both paths). Tables are stored as JSON (zever.json).
-- clock is for specs: a function returning seconds; without it the core reads CLOCK_MONOTONIC.
-- An open of a name with another max_bytes raises.

local ffi = require "ffi"
local core = require "zever.cache_core"
local errors = require "zever.errors"
local stripes = require "adapters.stripes"
local json = require "zever.json"

local type, error, format, setmetatable = type, error, string.format, setmetatable
local ffi_string = ffi.string

local M = {}

require "zever.cdef.cache"
require "zever.cdef.libc"

local C = ffi.C
local has_ffi = pcall(function() return C.zv_cache_get and C.zv_cache_set end)
local cache_ptr = ffi.typeof("zv_cache_t *")
local double_ptr = ffi.typeof("double *")

local STRING, NUMBER, BOOLEAN, JSON = core.STRING, core.NUMBER, core.BOOLEAN, core.JSON
local E = errors.E
local ERANGE, ECONFLICT, ETOOLONG = E.RANGE, E.CONFLICT, E.TOOLONG

local TOO_BIG = errors.new("cache", "invalid", "the value is larger than the cache's byte budget")
local NOT_NUMBER = errors.new("cache", "invalid", "the value is not a number")
local NO_MEMORY = errors.core("cache", E.NOMEM)

-- Memory: the FFI path; Classic: the classic binding's (see adapters.stripes).
local Memory, Classic = stripes.classes()

local now_of = stripes.now

local function decode(raw, kind)
  if kind == JSON then return json.decode(raw) end
  return raw
end

if has_ffi then
  local c_get, c_set = C.zv_cache_get, C.zv_cache_set

  function Memory:get(key)
    local now = now_of(self)
    local rc = c_get(self.ptr, key, #key, now, self.buf, self.cap, self.len, self.kind)
    if rc == ERANGE then
      local need = tonumber(self.len[0])
      self.cap = need
      self.buf = ffi.new("char[?]", need)
      rc = c_get(self.ptr, key, #key, now, self.buf, self.cap, self.len, self.kind)
    end
    if rc ~= 0 then return nil end
    local kind = self.kind[0]
    if kind == STRING then return ffi_string(self.buf, self.len[0]) end
    if kind == NUMBER then return ffi.cast(double_ptr, self.buf)[0] end
    if kind == BOOLEAN then return self.buf[0] ~= 0 end
    return json.decode(ffi_string(self.buf, self.len[0]))
  end

  local memcmp = C.memcmp

  -- A string of the same bytes as known is compared in the buffer, never copied into Lua.
  function Memory:get_unless(key, known)
    local rc = c_get(self.ptr, key, #key, now_of(self), self.buf, self.cap, self.len, self.kind)
    if rc == 0 and self.kind[0] == STRING then
      local len = self.len[0]
      if len == #known and memcmp(self.buf, known, #known) == 0 then return true end
      return ffi_string(self.buf, len)
    end
    if rc ~= 0 and rc ~= ERANGE then return nil end
    return self:get(key) -- another kind, or a value longer than the buffer
  end

  function Memory:set(key, value, ttl, add)
    local t, kind, vlen = type(value), STRING, nil
    if t == "number" then
      self.num[0] = value
      kind, value, vlen = NUMBER, self.num_bytes, 8
    elseif t == "boolean" then
      self.bool[0] = value and 1 or 0
      kind, value, vlen = BOOLEAN, self.bool_bytes, 1
    elseif t == "table" then
      kind, value = JSON, json.encode(value)
    end
    local rc = c_set(self.ptr, key, #key, kind, value, vlen or #value, ttl * 1e9,
      now_of(self), add and 1 or 0)
    if rc == 0 then return true end
    if rc == ECONFLICT then return false end
    if rc == ETOOLONG then return nil, TOO_BIG end
    return nil, NO_MEMORY
  end
end

function Classic:get(key)
  local raw, kind = self.handle:get(key, now_of(self))
  if raw == nil then return nil end
  return decode(raw, kind)
end

function Classic:get_unless(key, known)
  local v = self:get(key)
  if v == known then return true end
  return v
end

function Classic:set(key, value, ttl, add)
  local t, kind = type(value), STRING
  if t == "number" then
    kind = NUMBER
  elseif t == "boolean" then
    kind = BOOLEAN
  elseif t == "table" then
    kind, value = JSON, json.encode(value)
  end
  local ok, _, code = self.handle:set(key, value, kind, ttl * 1e9, add and 1 or 0, now_of(self))
  if ok then return true end
  if code == "CONFLICT" then return false end
  if code == "TOOLONG" then return nil, TOO_BIG end
  return nil, NO_MEMORY
end

if not has_ffi then
  Memory.get, Memory.get_unless, Memory.set = Classic.get, Classic.get_unless, Classic.set
end

function Memory:delete(key)
  return self.handle:delete(key, now_of(self))
end

function Memory:exists(key)
  return self.handle:exists(key, now_of(self))
end

function Memory:incr(key, n, ttl)
  local v, _, code = self.handle:incr(key, n, ttl * 1e9, now_of(self))
  if v ~= nil then return v end
  if code == "INVAL" then return nil, NOT_NUMBER end
  if code == "TOOLONG" then return nil, TOO_BIG end
  return nil, NO_MEMORY
end

stripes.methods(Memory, 256)

local MiB = 1024 * 1024

function M.new(opts)
  if type(opts) ~= "table" then error("cache.memory.new: expects an options table", 2) end
  local max_bytes = opts.max_bytes or 64 * MiB
  if type(max_bytes) ~= "number" or (max_bytes ~= max_bytes or max_bytes < 1) then
    error("cache: max_bytes must be a number >= 1", 2)
  end
  local handle, name = stripes.open("cache", opts, format("default:%d", max_bytes),
    "another max_bytes", core.open, max_bytes)
  local cap = 256
  local num, bool = ffi.new("double[1]"), ffi.new("char[1]")
  return setmetatable({
    handle = handle,
    ptr = has_ffi and ffi.cast(cache_ptr, handle:ptr()) or nil,
    buf = ffi.new("char[?]", cap),
    cap = cap,
    len = ffi.new("size_t[1]"),
    kind = ffi.new("int[1]"),
    num = num,
    num_bytes = ffi.cast("const char *", num),
    bool = bool,
    bool_bytes = bool,
    clock = opts.clock,
    name = name,
    max_bytes = max_bytes,
  }, (has_ffi and not opts.classic) and Memory or Classic)
end

-- The adapter contract: section is the config's cache section.
function M.open(section)
  return M.new{ max_bytes = section.max_bytes }
end

M.ffi = has_ffi

return M
