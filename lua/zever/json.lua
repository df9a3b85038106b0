-- zever.json: JSON for the framework (host/json/: a strict reader and an exact writer in C).
--
--   json.encode(value)   -> string            raises on what JSON cannot hold (functions, NaN,
--                                             Infinity, cycles, sparse arrays, other cdata)
--   json.decode(s)       -> value | nil, err  never raises on bad input; err is a zever error
--                                             (code "syntax", err.offset the 1-based byte)
--   json.null            JSON null (the light userdata NULL: the same value as cjson.null)
--   json.array(t)        marks t (default: a new table) as a JSON array: {} encodes as []
--   json.object(t)       marks t (default: a new table) as a JSON object: {} encodes as {}
--   json.is_array(t)     true for a table marked by json.array (every decoded array is)
--
-- Exact: integers are written in full (9007199254740993 stays itself, never 9.007e+15);
-- int64_t/uint64_t cdata (the db's integers beyond 2^53) are written as integers; other numbers
-- in the shortest form that reads back to the same double. Decoded integers within +-2^53 are
-- numbers, larger ones that fit an int64 are int64_t cdata, as the db gives them.
-- Strict: decoding accepts RFC 8259 and nothing else (no NaN, Infinity, hex, leading zeros or
-- '+', "1." or ".5", raw control bytes in strings, invalid UTF-8, lone surrogates, trailing
-- data); a number too large for a double is an error, never inf.
-- Arrays stay arrays: decoded arrays carry json.array's mark, so {"a":[]} round-trips.
--
-- A table without a mark is an array when all its keys are positive integers, an object
-- otherwise; an empty one is {} (mark it json.array to get []). "/" is never escaped.

local core = require "zever.json_core"
local ffi = require "ffi"

local type, setmetatable, getmetatable, tostring, error = type, setmetatable, getmetatable,
  tostring, error
local istype, sub = ffi.istype, string.sub
local int64_t, uint64_t = ffi.typeof("int64_t"), ffi.typeof("uint64_t")
local raw_encode, raw_decode = core.encode, core.decode
local array_mt, object_mt = core.array_mt, core.object_mt

-- What the binding cannot do itself: make and read int64 cdata.
core.hooks.int64 = function(hi, lo)
  return int64_t(hi) * 4294967296 + lo
end
core.hooks.int64_text = function(v)
  if istype(int64_t, v) then return sub(tostring(v), 1, -3) end  -- "123LL"
  if istype(uint64_t, v) then return sub(tostring(v), 1, -4) end -- "123ULL"
  return nil
end

local M = { null = core.null, array_mt = array_mt, object_mt = object_mt }

-- The small-object fast path. The C writer is a classic C API call, which LuaJIT cannot
-- compile: a request's trace stops there ("stitch"), and for a small object the call costs more
-- than the writing (callgrind, a served /users/42: 10,738 instructions a request through the C
-- writer, 8,321 with a one-key path; bench/tfb /db, a two-key row: 1,650 instructions in the
-- C writer). An object of at most 8 keys, without a mark (or marked json.object), whose
-- keys are plain strings and whose values are plain strings (up to MAX_PLAIN bytes), numbers
-- (not NaN or an infinity), booleans or json.null is written here into one reused
-- string.buffer, byte for byte what the C writer writes: the pairs in next()'s order (the C
-- writer's lua_next order: the same traversal), integers below 1e14 in full (the buffer prints
-- them as tostring does, every digit), other numbers by the writer's own formatter
-- (zv_json_format_number through the FFI) and strings the writer copies unescaped, which the
-- writer's own scan decides (zv_json_plain_len through the FFI, a call LuaJIT compiles: a Lua
-- pattern here cost ~3,500 instructions a request for {"message":"Hello, World!"}, callgrind,
-- bench/tfb /json). Anything else (a nested table, a key or string needing escapes, more keys)
-- goes to the C writer, from scratch. No loop: a loop inside the request's trace makes LuaJIT
-- abort it, so the pairs are written by eight calls in a row (small).
-- spec/zever/json_spec.lua holds the two to the same bytes.
--
-- A string.buffer again since session 14: session 12's buffer path died under make asan inside
-- a compiled trace (a pointer cut to 32 bits), which was LuaJIT's issue #829 in Debian's 2022
-- LuaJIT; zever links OpenResty's LuaJIT branch since session 13, which has the fix
-- (spec/host/luajit_spec.lua checks the branch). docs/json.md has the proof runs.
require "zever.cdef.json"
local native = ffi.C
local next = next
local null = core.null
local tobit = require("bit").tobit
local numbuf = ffi.new("char[32]") -- ZV_JSON_NUMBUF (host/json/json.h)
local out = require("string.buffer").new(256)
local MAX_PLAIN = 1024 -- longer strings go to the C writer (the buffer stays small)

local function plain(s)
  local n = #s
  return native.zv_json_plain_len(s, n) == n
end

-- Keys repeat from call to call: those found plain are remembered with their written form
-- ("key": with its quotes and colon; up to a cap), so the common case skips the scan and puts
-- one string.
local MAX_PLAIN_KEYS = 4096
local plain_keys, nplain = {}, 0

-- The written form of key k, or nil when the fast path does not apply.
local function key_text(k)
  if type(k) ~= "string" then return nil end
  local kq = plain_keys[k]
  if kq then return kq end
  if #k > MAX_PLAIN or not plain(k) then return nil end
  kq = '"' .. k .. '":'
  if nplain < MAX_PLAIN_KEYS then
    nplain = nplain + 1
    plain_keys[k] = kq
  end
  return kq
end

-- Writes the pair after key k of t (the first pair when k is nil) into out, sep ("{" or ",")
-- before it: returns its key, nil when there is none, or false when the fast path does not
-- apply.
local function pair(t, k, sep)
  local v
  k, v = next(t, k)
  if k == nil then return nil end
  local kq = key_text(k)
  if not kq then return false end
  local tv = type(v)
  if tv == "number" then
    if v % 1 == 0 and v < 1e14 and v > -1e14 and (v ~= 0 or 1 / v > 0) then
      -- Within int32, tobit(v) is v as an integer to the trace: the buffer then writes it with
      -- LuaJIT's integer formatter (lj_strfmt_wint), not its %.14g one (lj_strfmt_wfnum: ~250
      -- instructions a number, callgrind, bench/tfb /db). The digits are the same.
      if v >= -2147483648 and v <= 2147483647 then v = tobit(v) end
      out:put(sep, kq, v)
    else
      -- Fractions, -0 and the larger integers: the writer's own formatter, through the FFI
      -- (NaN and the infinities: 0, and the C writer raises).
      local n = native.zv_json_format_number(v, numbuf)
      if n == 0 then return false end
      out:put(sep, kq)
      out:putcdata(numbuf, n)
    end
  elseif tv == "string" then
    if #v > MAX_PLAIN or not plain(v) then return false end
    out:put(sep, kq, '"', v, '"')
  elseif tv == "boolean" then
    out:put(sep, kq, v and "true" or "false")
  elseif tv == "userdata" and v == null then
    out:put(sep, kq, "null")
  else
    return false
  end
  return k
end

-- Writes small flat object t into out (after what is there); false when the fast path does not
-- apply ({} too: the C writer decides what an empty table is).
local function put_small(t)
  local k = pair(t, nil, "{")
  if not k then return false end
  k = pair(t, k, ",")
  if k then k = pair(t, k, ",") end
  if k then k = pair(t, k, ",") end
  if k then k = pair(t, k, ",") end
  if k then k = pair(t, k, ",") end
  if k then k = pair(t, k, ",") end
  if k then k = pair(t, k, ",") end -- the eighth pair
  if k == false or (k and next(t, k) ~= nil) then return false end
  out:put("}")
  return true
end

-- The text in out; a buffer grown past KEEP_BYTES (a long array) gives its memory back, as the
-- C writer's does (l_json_core.c).
local KEEP_BYTES = 1048576

local function text()
  local s = out:tostring()
  if #s > KEEP_BYTES then out:free() end
  return s
end

-- The JSON text of a small flat object, or nil.
local function small(t)
  out:reset()
  if not put_small(t) then return nil end
  return text()
end

-- A json.array of small flat objects (db rows: db:query and :all() mark their lists) is written
-- here too, up to MAX_ROWS of them (bench/tfb /queries: 20 rows through the C writer cost ~1,500
-- instructions a row, most of it the classic C API's calls per key and value). The loop is the
-- one in this path: a handler that builds its rows already loops, and a request of one object
-- never enters it. Anything else, an element that is not a small flat object among them, goes
-- to the C writer, from scratch.
local MAX_ROWS = 1000

local function rows(t)
  local n = #t
  if n == 0 or n > MAX_ROWS then return nil end
  out:reset()
  out:put("[")
  for i = 1, n do
    local v = t[i]
    if type(v) ~= "table" then return nil end
    local mt = getmetatable(v)
    if mt ~= nil and mt ~= object_mt then return nil end
    if i > 1 then out:put(",") end
    if not put_small(v) then return nil end
  end
  out:put("]")
  return text()
end

function M.encode(value)
  if type(value) == "table" then
    local mt = getmetatable(value)
    if mt == nil or mt == object_mt then
      local s = small(value)
      if s then return s end
    elseif mt == array_mt then
      local s = rows(value)
      if s then return s end
    end
  end
  return raw_encode(value)
end

-- The C writer alone (specs compare the fast path with it).
M.encode_c = raw_encode

function M.decode(s)
  if type(s) ~= "string" then
    -- zever.errors loads with the first failure (docs/app.md, "Start-up heap").
    return nil, require("zever.errors").new("json", "invalid",
      "want a JSON string, got " .. type(s))
  end
  local v, cause, at = raw_decode(s)
  if v == nil then
    return nil, require("zever.errors").new("json", "syntax", cause .. " at byte " .. (at + 1),
      { offset = at + 1 })
  end
  return v
end

local function mark(t, mt, fname)
  if t == nil then t = {} end
  if type(t) ~= "table" then error("json." .. fname .. ": expects a table", 3) end
  local old = getmetatable(t)
  if old ~= nil and old ~= array_mt and old ~= object_mt then
    error("json." .. fname .. ": the table already has a metatable", 3)
  end
  setmetatable(t, mt)
  return t
end

function M.array(t)
  return mark(t, array_mt, "array")
end

function M.object(t)
  return mark(t, object_mt, "object")
end

function M.is_array(t)
  return type(t) == "table" and getmetatable(t) == array_mt
end

return M
