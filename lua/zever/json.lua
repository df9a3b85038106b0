-- zever.json: JSON for the framework, over lua-cjson.
--
--   json.encode(value)  -> string           raises on values JSON cannot hold (functions, cycles)
--   json.decode(s)      -> value | nil, err never raises on bad input
--   json.null           the JSON null sentinel
--
-- Debian's lua-cjson 2.1.0 always escapes "/" as "\/"; that is valid JSON but not what people
-- expect in URLs and paths, so encode undoes it. It is safe: cjson never emits a bare "/", so
-- every "\/" in its output is exactly one escaped slash. A private cjson instance keeps these
-- choices from leaking into the application's own require "cjson".

local cjson = require("cjson").new()
local safe = require("cjson.safe").new()

local find, gsub, concat, next, type, tostring = string.find, string.gsub, table.concat, next,
  type, tostring
local raw_encode, raw_decode = cjson.encode, safe.decode

local M = { null = cjson.null }
local null = cjson.null

-- The flat-object fast path. cjson formats every number with snprintf("%.14g"), which costs
-- thousands of instructions for {"id":42}; a small object whose keys are plain strings and whose
-- values are plain strings, integers, booleans or null is written here instead, byte for byte
-- what cjson (plus the "\/" undo below) writes: the same key order (next() walks the table as
-- cjson's lua_next does), integers of at most 14 digits (where "%.14g" prints every digit),
-- and strings with nothing cjson escapes (control bytes, DEL, '"', '\'). Anything else is
-- cjson's job.
local MAX_FLAT = 16
local UNSAFE = '[%z\1-\31"\\\127]'
-- Keys repeat from call to call: those found plain are remembered (up to a cap), so the common
-- case skips the pattern match, which the interpreter runs byte by byte.
local MAX_PLAIN_KEYS = 4096
local plain_keys, nplain = {}, 0
local parts = {} -- reused: '{"', key, '":', value, ',"', key, '":"', string, '"', ..., '}'

-- The JSON text of one value of a flat object, or nil (and false, nil for a string value, which
-- the caller quotes), or nil when the fast path does not apply.
local function scalar(v)
  local tv = type(v)
  if tv == "number" then
    if v % 1 ~= 0 or v >= 1e14 or v <= -1e14 or (v == 0 and 1 / v < 0) then return nil end
    return tostring(v)
  elseif tv == "string" then
    if find(v, UNSAFE) then return nil end
    return false
  elseif tv == "boolean" then
    return v and "true" or "false"
  elseif v == null then
    return "null"
  end
  return nil
end

local function plain_key(k)
  if type(k) ~= "string" then return false end
  if plain_keys[k] then return true end
  if find(k, UNSAFE) then return false end
  if nplain < MAX_PLAIN_KEYS then
    nplain = nplain + 1
    plain_keys[k] = true
  end
  return true
end

-- Objects of two keys or more.
local function flat_more(value, k, v)
  local n = 0
  repeat
    if n > MAX_FLAT * 5 or not plain_key(k) then return nil end
    local s = scalar(v)
    if s == nil then return nil end
    parts[n + 1] = n == 0 and '{"' or ',"'
    parts[n + 2] = k
    if s then
      parts[n + 3] = '":'
      parts[n + 4] = s
      n = n + 4
    else
      parts[n + 3] = '":"'
      parts[n + 4] = v
      parts[n + 5] = '"'
      n = n + 5
    end
    k, v = next(value, k)
  until k == nil
  parts[n + 1] = "}"
  return concat(parts, "", 1, n + 1)
end

-- One key is the common case ({"id":42}) and takes no loop: a loop inside the request's trace
-- makes LuaJIT abort it.
local function flat(value)
  local k, v = next(value)
  if not plain_key(k) then return nil end
  if next(value, k) ~= nil then return flat_more(value, k, v) end
  local s = scalar(v)
  if s then return '{"' .. k .. '":' .. s .. "}" end
  if s == false then return '{"' .. k .. '":"' .. v .. '"}' end
  return nil
end

function M.encode(value)
  if type(value) == "table" then
    local s = flat(value)
    if s then return s end
  end
  local s = raw_encode(value)
  if find(s, "\\/", 1, true) then s = gsub(s, "\\/", "/") end
  return s
end

function M.decode(s)
  if type(s) ~= "string" then return nil, "want a JSON string, got " .. type(s) end
  return raw_decode(s)
end

return M
