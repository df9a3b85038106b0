-- adapters.flag.rules: what the flag adapters share: a flag file's tree checked and turned into
-- the table of flags the front-end (zever.flag) reads, and the stable hash of percentage
-- rollouts. It must not read files or know the front-end.
--
--   rules.compile(tree[, where]) -> flags | nil, message     where: "flags.yaml" (for messages)
--   rules.bucket(flag, key)      -> 0..9999   the rollout bucket of key for that flag
--   rules.fnv1a32(s)             -> FNV-1a 32-bit hash of s (an integer in [0, 2^32))
--
-- A flag file maps names to flags. A flag is a scalar or a list (its value), or a mapping with
--   value: the value (any type; default false when the flag has a rollout)
--   rollout: percent 0..100 (boolean flags): that share of keys sees true, the others false
--   tenants: { <tenant id> = value }: per-tenant overrides, of the value's type
-- Compiled: flags[name] = { value, kind, rollout (basis points 0..10000) | nil, tenants | nil }.
-- kind is "boolean", "string", "number" or "table"; null values are refused.
--
-- The hash: FNV-1a over the flag's name, a zero byte and the key, then MurmurHash3's 32-bit
-- finaliser (FNV alone leaves sequential keys such as "user-1", "user-2" clustered in the low
-- digits), modulo 10000. bucket calls the C core (host/flag/, zv_flag_bucket) through the FFI:
-- one call, no allocation, compiled into the caller's trace. bucket_lua is the same function on
-- doubles (every product exact below 2^53): the reference the specs compare the C one with,
-- and the fallback of a host that does not export the symbol.

local bit = require "bit"
local ffi = require "ffi"

local bxor, rshift, byte = bit.bxor, bit.rshift, string.byte
local type, pairs, next, tostring, tonumber, getmetatable, pcall, format, floor = type, pairs,
  next, tostring, tonumber, getmetatable, pcall, string.format, math.floor

local M = {}

local TWO32 = 4294967296

-- a * b mod 2^32 for a, b in [0, 2^32): b split in 16-bit halves keeps products below 2^49.
local function mul32(a, b)
  local lo = b % 65536
  local hi = (b - lo) / 65536
  return (a * lo + ((a * hi) % 65536) * 65536) % TWO32
end

local function fnv(h, s)
  for i = 1, #s do
    h = mul32(bxor(h, byte(s, i)) % TWO32, 16777619)
  end
  return h
end

function M.fnv1a32(s)
  return fnv(2166136261, s)
end

local function fmix32(h)
  h = bxor(h, rshift(h, 16)) % TWO32
  h = mul32(h, 0x85ebca6b)
  h = bxor(h, rshift(h, 13)) % TWO32
  h = mul32(h, 0xc2b2ae35)
  return bxor(h, rshift(h, 16)) % TWO32
end
M.fmix32 = fmix32

function M.bucket_lua(flag, key)
  local h = fnv(2166136261, flag)
  h = mul32(h, 16777619)           -- the zero byte between name and key: xor 0 is h itself
  return fmix32(fnv(h, key)) % 10000
end

M.bucket = M.bucket_lua
do
  require "zever.cdef.flag"
  local C = ffi.C
  local ok, fn = pcall(function() return C.zv_flag_bucket end)
  if ok then
    M.bucket = function(flag, key) return tonumber(fn(flag, #flag, key, #key)) end
  end
end

local function kind(v)
  local t = type(v)
  if t == "boolean" or t == "string" or t == "number" or t == "table" then return t end
  return nil
end

-- A YAML null (zever.config.read.NULL) is a table with a __tostring saying "null": refused.
local function is_null(v)
  return type(v) == "table" and getmetatable(v) ~= nil and tostring(v) == "null"
end

local function value_kind(v)
  if v == nil or is_null(v) then return nil end
  return kind(v)
end

local function one(name, def, where)
  local function bad(msg) return nil, format("%s: flag %q: %s", where, name, msg) end
  local is_rule = type(def) == "table" and not is_null(def) and next(def) ~= nil and def[1] == nil
    and (def.value ~= nil or def.rollout ~= nil or def.tenants ~= nil)
  if not is_rule then
    local k = value_kind(def)
    if not k then return bad("has no value") end
    return { value = def, kind = k }
  end
  for k in pairs(def) do
    if k ~= "value" and k ~= "rollout" and k ~= "tenants" then
      return bad(format("unknown field %q (value, rollout, tenants)", tostring(k)))
    end
  end
  local value = def.value
  if value == nil and def.rollout ~= nil then value = false end
  local k = value_kind(value)
  if not k then return bad("has no value") end
  local out = { value = value, kind = k }
  if def.rollout ~= nil then
    local r = def.rollout
    if k ~= "boolean" then return bad("rollout needs a boolean value") end
    if type(r) ~= "number" or r ~= r or r < 0 or r > 100 then
      return bad("rollout must be a percentage from 0 to 100")
    end
    out.rollout = floor(r * 100 + 0.5)
  end
  if def.tenants ~= nil then
    local t = def.tenants
    if type(t) ~= "table" or is_null(t) or t[1] ~= nil then
      return bad("tenants must map tenant ids to values")
    end
    local tenants = {}
    for id, v in pairs(t) do
      if value_kind(v) ~= k then
        return bad(format("tenant %q: the value must be a %s like the flag's", tostring(id), k))
      end
      tenants[tostring(id)] = v
    end
    out.tenants = tenants
  end
  return out
end

function M.compile(tree, where)
  where = where or "flags"
  if tree == nil or is_null(tree) then return {} end
  if type(tree) ~= "table" or (tree[1] ~= nil) then
    return nil, where .. ": the top level must map flag names to flags"
  end
  local flags = {}
  for name, def in pairs(tree) do
    if type(name) ~= "string" then return nil, where .. ": flag names must be strings" end
    local f, err = one(name, def, where)
    if not f then return nil, err end
    flags[name] = f
  end
  return flags
end

return M
